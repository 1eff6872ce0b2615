package io.ferrystream.ferry.bench;

import org.apache.flink.api.connector.sink2.Sink;
import org.apache.flink.api.connector.sink2.SinkWriter;
import org.apache.flink.api.connector.sink2.WriterInitContext;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.sink.DynamicTableSink;
import org.apache.flink.table.connector.sink.SinkV2Provider;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.factories.DynamicTableSinkFactory;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.RowKind;

import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A sink for benchmarks that checks what they time: {@code 'connector' = 'ferry-checksum'},
 * {@code 'name' = N}. It takes every row kind and folds each row into a checksum of the table the
 * changelog materializes: the row's bytes (as {@code BinaryRowData}, its row kind set to INSERT)
 * are hashed, and the hash is added for {@code +I}/{@code +U} and subtracted for {@code -U}/{@code -D}.
 * The sum is independent of the order rows arrive in and of how updates are batched, so two jobs
 * whose final results are equal have equal checksums, whatever their parallelism or mini-batch
 * timing. Subtasks add into one JVM-wide total per name ({@link #take}); the sink is for
 * MiniCluster benchmarks only.
 */
public final class ChecksumSink implements DynamicTableSinkFactory {
    static final ConfigOption<String> NAME = ConfigOptions.key("name").stringType().noDefaultValue();

    private static final Map<String, AtomicLong> SUMS = new ConcurrentHashMap<>();
    private static final Map<String, AtomicLong> ROWS = new ConcurrentHashMap<>();

    /** The checksum and changelog row count collected under name since the last take, and resets them. */
    static long[] take(String name) {
        AtomicLong sum = SUMS.remove(name);
        AtomicLong rows = ROWS.remove(name);
        return new long[] {sum == null ? 0 : sum.get(), rows == null ? 0 : rows.get()};
    }

    /**
     * A row's 64-bit hash for order-independent sums: Flink's hash of its bytes (the header byte,
     * so the RowKind, included) and its size, through a 64-bit finalizer (SplitMix64's) so the
     * 32-bit hash spreads over the whole sum.
     */
    static long rowHash(BinaryRowData binary) {
        long z = ((long) binary.hashCode() << 32) ^ binary.getSizeInBytes();
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    @Override
    public String factoryIdentifier() {
        return "ferry-checksum";
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        return Set.of(NAME);
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        return Set.of();
    }

    @Override
    public DynamicTableSink createDynamicTableSink(Context context) {
        FactoryUtil.TableFactoryHelper helper = FactoryUtil.createTableFactoryHelper(this, context);
        helper.validate();
        RowType type = (RowType) context.getCatalogTable().getResolvedSchema().toPhysicalRowDataType().getLogicalType();
        return new TableSink(helper.getOptions().get(NAME), type);
    }

    private record TableSink(String name, RowType type) implements DynamicTableSink {
        @Override
        public ChangelogMode getChangelogMode(ChangelogMode requested) {
            return ChangelogMode.all();
        }

        @Override
        public SinkRuntimeProvider getSinkRuntimeProvider(DynamicTableSink.Context context) {
            return SinkV2Provider.of(new RowSink(name, type));
        }

        @Override
        public DynamicTableSink copy() {
            return new TableSink(name, type);
        }

        @Override
        public String asSummaryString() {
            return "ferry-checksum";
        }
    }

    private record RowSink(String name, RowType type) implements Sink<RowData> {
        @Override
        public SinkWriter<RowData> createWriter(WriterInitContext context) {
            return new Writer(name, new RowDataSerializer(type));
        }
    }

    /** One subtask's share: summed locally, added to the JVM-wide total when the writer closes. */
    private static final class Writer implements SinkWriter<RowData> {
        private final String name;
        private final RowDataSerializer serializer;
        private long sum;
        private long rows;

        Writer(String name, RowDataSerializer serializer) {
            this.name = name;
            this.serializer = serializer;
        }

        @Override
        public void write(RowData row, Context context) {
            RowKind kind = row.getRowKind();
            BinaryRowData binary = serializer.toBinaryRow(row);
            RowKind binaryKind = binary.getRowKind();
            binary.setRowKind(RowKind.INSERT);
            long h = rowHash(binary);
            binary.setRowKind(binaryKind);
            sum += kind == RowKind.INSERT || kind == RowKind.UPDATE_AFTER ? h : -h;
            rows++;
        }

        @Override
        public void flush(boolean endOfInput) {}

        @Override
        public void close() {
            SUMS.computeIfAbsent(name, n -> new AtomicLong()).addAndGet(sum);
            ROWS.computeIfAbsent(name, n -> new AtomicLong()).addAndGet(rows);
        }
    }
}
