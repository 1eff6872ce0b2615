package io.ferrystream.ferry.kinds.lookupjoin;

import io.ferrystream.ferry.FerryOptions;

import org.apache.calcite.plan.RelOptTable;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.plan.abilities.source.FilterPushDownSpec;
import org.apache.flink.table.planner.plan.schema.TableSourceTable;
import org.apache.flink.table.types.logical.RowType;

import javax.annotation.Nullable;

import java.util.Arrays;
import java.util.Map;

/**
 * Where a lookup join's temporal table is looked up in Go: a table of Flink's JDBC connector on
 * PostgreSQL goes to {@link PostgresBatchLookup} (one statement per batch of probe rows) unless
 * {@link PostgresBatchLookup#reasonNotNative} or this class finds a reason to keep Flink's JDBC
 * lookup function, which the join then runs per probe row inside Ferry's operator. EXPLAIN shows
 * the decision on the join ({@link #explain}).
 */
public final class JdbcLookups {
    /** What EXPLAIN shows for a table Go looks up. */
    public static final String NATIVE = "PostgreSQL in Go, one statement per batch";

    private final ReadableConfig config;
    private final boolean retryHint;

    /**
     * @param config the planner's configuration ({@code ferry.lookup.jdbc.native})
     * @param retryHint whether the join has a LOOKUP hint with a retry strategy: its retries of
     *     missing keys run inside Flink's lookup function, which the Go way does not call
     */
    JdbcLookups(ReadableConfig config, boolean retryHint) {
        this.config = config;
        this.retryHint = retryHint;
    }

    /**
     * The join's {@code fetch=[…]} EXPLAIN item: {@link #NATIVE}, or why Flink's JDBC lookup stays;
     * null for a table that is not the JDBC connector's.
     *
     * @param dims the lookup keys' dim columns, ascending
     */
    @Nullable
    String explain(RelOptTable table, int[] dims) {
        Map<String, String> options = jdbcOptions(table);
        if (options == null) {
            return null;
        }
        String reason = reason((TableSourceTable) table, options, dims);
        return reason == null ? NATIVE : "Flink's JDBC lookup per probe row: " + reason;
    }

    /**
     * A fetcher answering exactly what the table's lookup function answers per key (in Go, one
     * statement per batch), or null to keep Flink's runner.
     *
     * @param table the join's temporal table (its source, options and projection)
     * @param keys the join's lookup keys, in dim-column order
     */
    @Nullable
    BatchFetcher create(RelOptTable table, LookupKeys keys) {
        Map<String, String> options = jdbcOptions(table);
        if (options == null || reason((TableSourceTable) table, options, keys.dims()) != null) {
            return null;
        }
        RowType projected = FlinkTypeFactory.toLogicalRowType(table.getRowType());
        return new PostgresBatchLookup(options, projected, keyNames(projected, keys.dims()));
    }

    /** Why the table stays Flink's JDBC lookup, or null. */
    @Nullable
    private String reason(TableSourceTable table, Map<String, String> options, int[] dims) {
        if (!config.get(FerryOptions.LOOKUP_JDBC_NATIVE)) {
            return "disabled by " + FerryOptions.LOOKUP_JDBC_NATIVE.key() + "=false";
        }
        if (retryHint) {
            return "a LOOKUP hint with retries (they run inside Flink's lookup function)";
        }
        boolean pushedFilters = Arrays.stream(table.abilitySpecs()).anyMatch(s -> s instanceof FilterPushDownSpec);
        RowType projected = FlinkTypeFactory.toLogicalRowType(table.getRowType());
        return PostgresBatchLookup.reasonNotNative(options, projected, keyNames(projected, dims), pushedFilters);
    }

    /** The table's connector options when it is a JDBC table, else null. */
    @Nullable
    private static Map<String, String> jdbcOptions(RelOptTable table) {
        if (!(table instanceof TableSourceTable)) {
            return null;
        }
        Map<String, String> options =
                ((TableSourceTable) table).contextResolvedTable().getResolvedTable().getOptions();
        return "jdbc".equals(options.get("connector")) ? options : null;
    }

    private static String[] keyNames(RowType projected, int[] dims) {
        return Arrays.stream(dims).mapToObj(d -> projected.getFieldNames().get(d)).toArray(String[]::new);
    }
}
