package io.ferrystream.ferry.nexmark.table;

import org.apache.flink.api.common.accumulators.LongCounter;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.streaming.api.functions.sink.legacy.RichSinkFunction;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.sink.DynamicTableSink;
import org.apache.flink.table.connector.sink.legacy.SinkFunctionProvider;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.factories.DynamicTableSinkFactory;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.RowKind;

import java.util.Map;
import java.util.Set;

/**
 * {@code 'connector' = 'nexmark-checksum'}: the sink of the Nexmark queries in place of Nexmark's
 * {@code blackhole} (which in Flink 2.3 takes no UPDATE_BEFORE, so an updating query would leave
 * nothing to check). It takes every row kind and keeps a checksum of the table the changelog
 * materializes: each row's {@link RowFingerprint} is added for {@code +I}/{@code +U} and
 * subtracted for {@code -U}/{@code -D}, modulo 2⁶⁴. The sum does not depend on the order rows
 * arrive in, on how updates are bundled or on the sink's parallelism, so two jobs whose final
 * tables are equal end with equal checksums. Each subtask adds into the job's accumulators
 * ({@link #accumulators}), which reach the client with the job's result, on a MiniCluster as on a
 * real cluster.
 */
public final class ChecksumSinkFactory extends FixedOptionsFactory implements DynamicTableSinkFactory {
    public static final String IDENTIFIER = "nexmark-checksum";

    /** The job's accumulators of {@code table}'s sink: the checksum, rows added, rows retracted. */
    public record Accumulators(String sum, String added, String retracted) implements java.io.Serializable {}

    public static Accumulators accumulators(String table) {
        String prefix = IDENTIFIER + ":" + table + ":";
        return new Accumulators(prefix + "sum", prefix + "added", prefix + "retracted");
    }

    /** A sink's totals as the job's accumulators report them (missing names are zero: no subtask saw a row). */
    public record Totals(long checksum, long added, long retracted) {
        public static Totals of(Map<String, Object> jobAccumulators, String table) {
            Accumulators a = accumulators(table);
            return new Totals(value(jobAccumulators, a.sum()), value(jobAccumulators, a.added()),
                    value(jobAccumulators, a.retracted()));
        }

        private static long value(Map<String, Object> m, String name) {
            Object v = m.get(name);
            return v == null ? 0 : ((Number) v).longValue();
        }

        /** Rows in the final table. */
        public long rows() {
            return added - retracted;
        }
    }

    public ChecksumSinkFactory() {
        super(IDENTIFIER, Set.of(), Set.of());
    }

    @Override
    public DynamicTableSink createDynamicTableSink(Context context) {
        FactoryUtil.createTableFactoryHelper(this, context).validate();
        RowType type = (RowType) context.getCatalogTable().getResolvedSchema().toPhysicalRowDataType().getLogicalType();
        return new TableSink(context.getObjectIdentifier().getObjectName(), type);
    }

    private record TableSink(String table, RowType type) implements DynamicTableSink {
        @Override
        public ChangelogMode getChangelogMode(ChangelogMode requested) {
            return ChangelogMode.all();
        }

        @Override
        public SinkRuntimeProvider getSinkRuntimeProvider(DynamicTableSink.Context context) {
            return SinkFunctionProvider.of(new ChecksumFunction(accumulators(table), new RowFingerprint(type)));
        }

        @Override
        public DynamicTableSink copy() {
            return new TableSink(table, type);
        }

        @Override
        public String asSummaryString() {
            return IDENTIFIER;
        }
    }

    /** One subtask of the sink: folds each row into the job's accumulators. */
    private static final class ChecksumFunction extends RichSinkFunction<RowData> {
        private static final long serialVersionUID = 1L;

        private final Accumulators names;
        private final RowFingerprint fingerprint;
        private transient LongCounter sum;
        private transient LongCounter added;
        private transient LongCounter retracted;

        ChecksumFunction(Accumulators names, RowFingerprint fingerprint) {
            this.names = names;
            this.fingerprint = fingerprint;
        }

        @Override
        public void open(OpenContext context) {
            sum = new LongCounter();
            added = new LongCounter();
            retracted = new LongCounter();
            getRuntimeContext().addAccumulator(names.sum(), sum);
            getRuntimeContext().addAccumulator(names.added(), added);
            getRuntimeContext().addAccumulator(names.retracted(), retracted);
        }

        @Override
        public void invoke(RowData row, Context context) {
            long h = fingerprint.hash(row);
            RowKind kind = row.getRowKind();
            if (kind == RowKind.INSERT || kind == RowKind.UPDATE_AFTER) {
                sum.add(h);
                added.add(1);
            } else {
                sum.add(-h);
                retracted.add(1);
            }
        }
    }
}
