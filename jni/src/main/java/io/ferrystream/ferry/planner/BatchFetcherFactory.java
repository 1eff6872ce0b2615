package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.operators.lookup.BatchFetcher;
import io.ferrystream.ferry.operators.lookup.LookupKeys;

import org.apache.calcite.plan.RelOptTable;

import javax.annotation.Nullable;

/**
 * Where {@link FerryStreamExecLookupJoin} gets a {@link BatchFetcher} for a sync lookup join's
 * temporal table (a connector Ferry can query once per batch, e.g. PostgreSQL through Flink's
 * JDBC connector). Without a factory, or when it answers null, the join runs Flink's per-row
 * runner.
 */
@FunctionalInterface
public interface BatchFetcherFactory {
    /**
     * @param temporalTable the join's temporal table (its source, options and projection)
     * @param keys the join's lookup keys, in dim-column order
     * @return a fetcher answering exactly what the table's lookup function answers per key, or
     *     null to keep Flink's runner
     */
    @Nullable
    BatchFetcher create(RelOptTable temporalTable, LookupKeys keys);
}
