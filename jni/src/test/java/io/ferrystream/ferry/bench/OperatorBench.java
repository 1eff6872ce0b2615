package io.ferrystream.ferry.bench;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.groupaggregate.FerryGroupAggregateOperator;
import io.ferrystream.ferry.operators.HarnessMemory;
import io.ferrystream.ferry.planner.Ferry;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.event.WatermarkEvent;
import org.apache.flink.runtime.state.StateBackend;
import org.apache.flink.runtime.state.hashmap.HashMapStateBackend;
import org.apache.flink.state.rocksdb.EmbeddedRocksDBStateBackend;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.AbstractUdfStreamOperator;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.Output;
import org.apache.flink.streaming.api.operators.SimpleOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperatorFactory;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.io.RecordProcessorUtils;
import org.apache.flink.streaming.runtime.streamrecord.LatencyMarker;
import org.apache.flink.streaming.runtime.streamrecord.RecordAttributes;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.watermarkstatus.WatermarkStatus;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.keyselector.RowDataKeySelector;
import org.apache.flink.table.runtime.operators.aggregate.GroupAggFunction;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.utils.LogicalTypeChecks;
import org.apache.flink.types.Row;
import org.apache.flink.util.InstantiationUtil;
import org.apache.flink.util.OutputTag;
import org.apache.flink.util.function.ThrowingConsumer;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.lang.reflect.Field;
import java.math.BigDecimal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Predicate;

/**
 * Operator side by side: the same pre-generated bids through Flink's own group aggregate
 * ({@code KeyedProcessOperator(GroupAggFunction)}, planned by Flink 2.3 with Ferry off) on the
 * heap and on the RocksDB backend, and through Ferry's {@link FerryGroupAggregateOperator}
 * (planned with Ferry on), each in Flink's keyed test harness and driven by one driver: the
 * record processor a StreamTask uses ({@link RecordProcessorUtils#getRecordProcessor}, which sets
 * the key context only for operators that ask for it), a reused StreamRecord, and an Output that
 * counts records and drops them. Each timed pass ends with {@code prepareSnapshotPreBarrier},
 * which makes Ferry process its last partial batch.
 */
final class OperatorBench {
    private OperatorBench() {}

    static final String QUERY =
            "SELECT auction, COUNT(*), SUM(price), MAX(price), AVG(price) FROM bids GROUP BY auction";
    static final int MAX_PARALLELISM = 128;

    /**
     * The aggregated value column ({@code -values}; the Go perf harness's {@code -values}): price
     * BIGINT, price DECIMAL(18, 2) (unscaled = the same cents) with {@link #QUERY}, or the
     * channel STRING with COUNT(*), MIN, MAX, COUNT(channel).
     */
    enum Values {
        BIGINT("price", DataTypes.BIGINT(), 0L, QUERY),
        DECIMAL("price", DataTypes.DECIMAL(18, 2), BigDecimal.ZERO.setScale(2), QUERY),
        STRING("channel", DataTypes.STRING(), "",
                "SELECT auction, COUNT(*), MIN(channel), MAX(channel), COUNT(channel) FROM bids GROUP BY auction");

        final String column;
        final DataType type;
        final Object placeholder; // a value of the column, for the planning-only source row
        final String query;

        Values(String column, DataType type, Object placeholder, String query) {
            this.column = column;
            this.type = type;
            this.placeholder = placeholder;
            this.query = query;
        }

        /** "price BIGINT", "price DECIMAL(18, 2)", "channel STRING". */
        String label() {
            return column + " " + type.getLogicalType().copy(true).asSummaryString();
        }
    }

    enum Variant {
        HEAP("Flink, heap backend"),
        ROCKSDB("Flink, RocksDB backend"),
        FERRY("Ferry");

        final String label;

        Variant(String label) {
            this.label = label;
        }
    }

    /** A planned group-aggregate operator with its state key selector and row types. */
    record Planned(
            OneInputStreamOperator<RowData, RowData> operator,
            KeySelector<RowData, RowData> keySelector,
            TypeInformation<RowData> keyType,
            RowType inputType,
            RowType outputType) {}

    /** {@link #plan(Values, boolean, int)} over BIGINT prices. */
    static Planned plan(boolean ferry, int batchSize) throws Exception {
        return plan(Values.BIGINT, ferry, batchSize);
    }

    /**
     * Plans the query of {@code values} over an insert-only stream of {@code (auction BIGINT,
     * value)} into a retract changelog sink (so {@code generate_update_before} is on, as in the
     * Go perf harness), with Ferry off or on, and returns the aggregate operator of the
     * StreamGraph.
     */
    static Planned plan(Values values, boolean ferry, int batchSize) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        tEnv.getConfig().set(FerryOptions.BATCH_SIZE, batchSize);
        tEnv.getConfig().set("table.exec.mini-batch.enabled", "false");
        Ferry.install(tEnv);
        // Only planned, never run: one placeholder row gives the stream its type.
        TypeInformation<?> valueInfo = values == Values.BIGINT ? Types.LONG
                : values == Values.DECIMAL ? Types.BIG_DEC : Types.STRING;
        DataStream<Row> source = env.fromData(List.of(Row.of(0L, values.placeholder)),
                Types.ROW_NAMED(new String[] {"auction", values.column}, Types.LONG, valueInfo));
        // The schema fixes the value's type (a BigDecimal would otherwise be DECIMAL(38, 18)).
        Table t = tEnv.fromDataStream(source,
                Schema.newBuilder().column("auction", DataTypes.BIGINT()).column(values.column, values.type).build());
        tEnv.createTemporaryView("bids", t);
        tEnv.toChangelogStream(tEnv.sqlQuery(values.query)).print();
        StreamNode node = node(env.getStreamGraph(), op -> isFlinkGroupAggregate(op) || op instanceof FerryGroupAggregateOperator,
                ferry, FerryGroupAggregateOperator.class);
        if (node == null) {
            throw new IllegalStateException("no group aggregate in the plan");
        }
        @SuppressWarnings("unchecked")
        KeySelector<RowData, RowData> selector = (KeySelector<RowData, RowData>) node.getStatePartitioners()[0];
        @SuppressWarnings("unchecked")
        OneInputStreamOperator<RowData, RowData> operator = (OneInputStreamOperator<RowData, RowData>) operatorOf(node);
        RowType in = rowType(node.getTypeSerializersIn()[0]);
        RowType out = rowType(node.getTypeSerializerOut());
        if (in.getFieldCount() != 2
                || !in.getTypeAt(1).copy(true).equals(values.type.getLogicalType().copy(true))) {
            throw new IllegalStateException("aggregate input is " + in + ", want (auction, " + values.label() + ")");
        }
        return new Planned(operator, selector, ((RowDataKeySelector) selector).getProducedType(), in, out);
    }

    /**
     * The node of {@code graph} whose operator {@code matches} (null if none), checked to be
     * {@code ferryClass} exactly when planned with {@code ferry} on.
     */
    static StreamNode node(StreamGraph graph, Predicate<Object> matches, boolean ferry, Class<?> ferryClass) {
        for (StreamNode node : graph.getStreamNodes()) {
            Object op = operatorOf(node);
            if (op != null && matches.test(op)) {
                if (ferry != ferryClass.isInstance(op)) {
                    throw new IllegalStateException("planned with ferry=" + ferry + " but got " + op.getClass().getName());
                }
                return node;
            }
        }
        return null;
    }

    /** The operator of a node built by a {@link SimpleOperatorFactory}, else null. */
    static Object operatorOf(StreamNode node) {
        StreamOperatorFactory<?> factory = node.getOperatorFactory();
        return factory instanceof SimpleOperatorFactory ? ((SimpleOperatorFactory<?>) factory).getOperator() : null;
    }

    /** The row type a {@link RowDataSerializer} of the StreamGraph (de)serializes. */
    static RowType rowType(TypeSerializer<?> serializer) {
        try {
            Field types = RowDataSerializer.class.getDeclaredField("types");
            types.setAccessible(true);
            return RowType.of((LogicalType[]) types.get(serializer));
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("RowDataSerializer without its types field", e);
        }
    }

    static boolean isFlinkGroupAggregate(Object op) {
        return op instanceof KeyedProcessOperator
                && ((KeyedProcessOperator<?, ?, ?>) op).getUserFunction() instanceof GroupAggFunction;
    }

    /**
     * An Output that counts records and drops them. With a {@link #reader} it also reads every
     * field of each record through the row's getters, as any consumer of the operator must, and
     * sums a hash of the values into {@link #checksum} (order-independent; the row kind counts
     * too): the same reads for every variant, whatever class their rows are, so timed passes can
     * carry it. With a serializer instead it sums {@link ChecksumSink#rowHash} of each record's
     * bytes as {@code BinaryRowData} (a copy per row for rows of another class: untimed passes only).
     */
    static final class CountingOutput implements Output<StreamRecord<RowData>> {
        long records;
        long checksum;
        /** Non-null: {@link #checksum} is kept from the rows' bytes (untimed passes only: it serializes every row). */
        RowDataSerializer serializer;
        /** Non-null: {@link #checksum} is kept from the rows' values, read field by field. */
        FieldReader reader;

        @Override
        public void collect(StreamRecord<RowData> record) {
            records++;
            if (reader != null) {
                checksum += reader.hash(record.getValue());
            } else if (serializer != null) {
                checksum += ChecksumSink.rowHash(serializer.toBinaryRow(record.getValue()));
            }
        }

        @Override
        public <X> void collect(OutputTag<X> outputTag, StreamRecord<X> record) {
            throw new UnsupportedOperationException("side output");
        }

        @Override
        public void emitWatermark(Watermark mark) {}

        @Override
        public void emitWatermarkStatus(WatermarkStatus watermarkStatus) {}

        @Override
        public void emitLatencyMarker(LatencyMarker latencyMarker) {}

        @Override
        public void emitRecordAttributes(RecordAttributes recordAttributes) {}

        @Override
        public void emitWatermark(WatermarkEvent watermark) {}

        @Override
        public void close() {}
    }

    /**
     * Reads every field of a row of {@code type} through its getters and hashes the values (and
     * the row kind): equal values give equal hashes from Flink's joined rows and Ferry's binary rows
     * alike. BIGINT, DECIMAL and STRING fields, the operator bench's output columns; TIMESTAMP and
     * TIMESTAMP_LTZ fields (milliseconds and nanoseconds of the millisecond), the deduplication
     * bench's ({@link RankBench}).
     */
    static final class FieldReader {
        private final LogicalType[] types;

        FieldReader(RowType type) {
            types = type.getChildren().toArray(new LogicalType[0]);
            for (LogicalType t : types) {
                switch (t.getTypeRoot()) {
                    case BIGINT, DECIMAL, VARCHAR, TIMESTAMP_WITHOUT_TIME_ZONE, TIMESTAMP_WITH_LOCAL_TIME_ZONE -> { }
                    default -> throw new IllegalArgumentException("FieldReader reads no " + t);
                }
            }
        }

        long hash(RowData row) {
            long h = row.getRowKind().toByteValue();
            for (int i = 0; i < types.length; i++) {
                long v;
                if (row.isNullAt(i)) {
                    v = 0x6e756c6cL;
                } else {
                    LogicalType t = types[i];
                    switch (t.getTypeRoot()) {
                        case BIGINT -> v = row.getLong(i);
                        case DECIMAL -> {
                            DecimalType d = (DecimalType) t;
                            DecimalData value = row.getDecimal(i, d.getPrecision(), d.getScale());
                            v = DecimalData.isCompact(d.getPrecision()) ? value.toUnscaledLong()
                                    : java.util.Arrays.hashCode(value.toUnscaledBytes());
                        }
                        case TIMESTAMP_WITHOUT_TIME_ZONE, TIMESTAMP_WITH_LOCAL_TIME_ZONE -> {
                            TimestampData ts = row.getTimestamp(i, LogicalTypeChecks.getPrecision(t));
                            v = ts.getMillisecond() * 1_000_000L + ts.getNanoOfMillisecond();
                        }
                        default -> v = row.getString(i).hashCode();
                    }
                }
                h = mix(h * 31 + v);
            }
            return h;
        }

        private static long mix(long z) {
            z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
            z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
            return z ^ (z >>> 31);
        }
    }

    /** One timed pass. */
    record Pass(Variant variant, long rows, long nanos, long cpuNanos, long outputs, long checksum) {
        double rowsPerSecond() {
            return rows * 1e9 / nanos;
        }

        double cpuShare() {
            return cpuNanos < 0 ? Double.NaN : (double) cpuNanos / nanos;
        }
    }

    static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    static long threadCpu() {
        return THREADS.isCurrentThreadCpuTimeSupported() ? THREADS.getCurrentThreadCpuTime() : -1;
    }

    static StateBackend backendOf(Variant v) {
        switch (v) {
            case ROCKSDB:
                EmbeddedRocksDBStateBackend rocks = new EmbeddedRocksDBStateBackend(false);
                // The test harness gives the operator no managed memory: give RocksDB a fixed
                // budget instead, the size of a TaskManager slot's default managed memory order.
                rocks.getMemoryConfiguration().setFixedMemoryPerSlot("512mb");
                return rocks;
            case HEAP:
            case FERRY: // Ferry keeps its state in Go; the backend holds nothing of it
            default:
                return new HashMapStateBackend();
        }
    }

    /** Fails unless the opened operator's keyed state backend is the variant's. */
    static void checkBackend(Variant variant, Object op) {
        String backend = ((AbstractStreamOperator<?>) op).getKeyedStateBackend().getClass().getSimpleName();
        if (variant == Variant.ROCKSDB ? !backend.contains("RocksDB") : !backend.contains("Heap")) {
            throw new IllegalStateException(variant + " runs on " + backend);
        }
    }

    /** "Operator(UserFunction) on Backend". */
    static String describe(Object op) {
        Object fn = op instanceof AbstractUdfStreamOperator ? ((AbstractUdfStreamOperator<?, ?>) op).getUserFunction() : null;
        return op.getClass().getSimpleName() + (fn == null ? "" : "(" + fn.getClass().getSimpleName() + ")") + " on "
                + ((AbstractStreamOperator<?>) op).getKeyedStateBackend().getClass().getSimpleName();
    }

    /** One operator instance in a harness, fed through the StreamTask's record processor. */
    static final class Driver implements AutoCloseable {
        final Variant variant;
        final OneInputStreamOperator<RowData, RowData> op;
        final KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> harness;
        final ThrowingConsumer<StreamRecord<RowData>, Exception> processor;
        final CountingOutput out = new CountingOutput();
        final StreamRecord<RowData> record = new StreamRecord<>(null);
        long checkpoint;

        Driver(Variant variant, Planned p) throws Exception {
            this(variant, p, null);
        }

        /** A driver whose operator starts from {@code restore} (a snapshot of {@link #harness}), or empty. */
        Driver(Variant variant, Planned p, OperatorSubtaskState restore) throws Exception {
            this.variant = variant;
            op = InstantiationUtil.clone(p.operator());
            boolean ferry = op instanceof FerryGroupAggregateOperator;
            if (ferry != (variant == Variant.FERRY) || (!ferry && !isFlinkGroupAggregate(op))) {
                throw new IllegalStateException(variant + " would run " + op.getClass().getName());
            }
            harness = new KeyedOneInputStreamOperatorTestHarness<>(op, p.keySelector(), p.keyType(), MAX_PARALLELISM, 1, 0);
            HarnessMemory.outsideBudget(harness);
            harness.setStateBackend(backendOf(variant));
            harness.setOutputCreator(serializer -> out);
            out.reader = new FieldReader(p.outputType());
            harness.setup(new RowDataSerializer(p.outputType()));
            if (restore != null) {
                harness.initializeState(restore);
            }
            harness.open();
            checkBackend(variant, op);
            processor = RecordProcessorUtils.getRecordProcessor(op);
        }

        String describe() {
            return OperatorBench.describe(op);
        }

        /** One pass; its checksum is of this pass's output rows, every field read ({@link FieldReader}). */
        Pass run(RowData[] rows) throws Exception {
            long outBefore = out.records;
            out.checksum = 0;
            long cpu0 = threadCpu();
            long t0 = System.nanoTime();
            for (RowData row : rows) {
                processor.accept(record.replace(row));
            }
            op.prepareSnapshotPreBarrier(++checkpoint); // Ferry: process the last partial batch
            long t1 = System.nanoTime();
            long cpu1 = threadCpu();
            return new Pass(variant, rows.length, t1 - t0, cpu0 < 0 ? -1 : cpu1 - cpu0, out.records - outBefore, out.checksum);
        }

        @Override
        public void close() throws Exception {
            harness.close();
        }
    }

    /** Fails unless {@code p} emitted what the first variant's same pass ({@code first[i]}, set by the first) did. */
    private static void sameOutput(Pass[] first, int i, Pass p, String what) {
        if (first[i] == null) {
            first[i] = p;
        } else if (first[i].outputs() != p.outputs() || first[i].checksum() != p.checksum()) {
            throw new IllegalStateException(String.format(Locale.ROOT, "%s: %s emitted %d rows, checksum %016x; %s emitted"
                            + " %d rows, checksum %016x", what, p.variant(), p.outputs(), p.checksum(), first[i].variant(),
                    first[i].outputs(), first[i].checksum()));
        }
    }

    /** Results of one key cardinality and value column. */
    record Result(Values values, int keys, int rows, List<Pass> passes, List<String> operators) {
        List<Pass> of(Variant v) {
            List<Pass> l = new ArrayList<>();
            for (Pass p : passes) {
                if (p.variant() == v) {
                    l.add(p);
                }
            }
            return l;
        }

        double median(Variant v) {
            return Stats.median(of(v).stream().mapToDouble(Pass::rowsPerSecond).toArray());
        }
    }

    /**
     * Runs one key cardinality of one value column: every variant gets the prefill (one row per key) and one pass of
     * the data untimed, then {@code reps} timed passes of the same data, interleaved heap,
     * RocksDB, Ferry, heap, ... Every pass updates live keys only, so each variant must emit two
     * rows (-U, +U) per input row. Every pass, warm-up and timed, is checksummed ({@link
     * FieldReader}): since every variant sees the same passes in the same order, the n-th pass of
     * each must emit the same rows, or the run fails.
     */
    static Result run(Values values, int keys, int rows, int reps, int batchSize, List<Variant> variants)
            throws Exception {
        Planned stock = plan(values, false, batchSize);
        Planned ferry = plan(values, true, batchSize);
        RowData[] prefill = BenchBids.prefill(values, keys);
        RowData[] data = BenchBids.generate(values, keys, rows);
        List<Driver> drivers = new ArrayList<>();
        List<Pass> passes = new ArrayList<>();
        List<String> operators = new ArrayList<>();
        try {
            for (Variant v : variants) {
                Driver d = new Driver(v, v == Variant.FERRY ? ferry : stock);
                drivers.add(d);
                operators.add(v.label + ": " + d.describe());
                Bench.log("%s: %s", v.label, d.describe());
            }
            Pass[] firstWarm = new Pass[2];
            for (Driver d : drivers) {
                Pass p1 = d.run(prefill);
                Pass p2 = d.run(data);
                Bench.log("warm-up %-24s %s keys %-8s prefill %s, data %s (checksums %016x, %016x)", d.variant.label,
                        values, Bench.count(keys), Bench.rate(p1.rowsPerSecond()), Bench.rate(p2.rowsPerSecond()),
                        p1.checksum(), p2.checksum());
                sameOutput(firstWarm, 0, p1, "prefill");
                sameOutput(firstWarm, 1, p2, "warm-up pass");
            }
            for (int rep = 1; rep <= reps; rep++) {
                Pass[] first = new Pass[1];
                for (Driver d : drivers) {
                    System.gc();
                    Pass p = d.run(data);
                    passes.add(p);
                    Bench.log("rep %d %-24s %s keys %-8s %s rows/s (cpu share %.2f, %d outputs, checksum %016x)", rep,
                            d.variant.label, values, Bench.count(keys), Bench.rate(p.rowsPerSecond()), p.cpuShare(),
                            p.outputs(), p.checksum());
                    if (p.outputs() != 2L * rows) {
                        throw new IllegalStateException(String.format(Locale.ROOT,
                                "%s emitted %d rows for %d input rows (want %d)", d.variant, p.outputs(), rows, 2L * rows));
                    }
                    sameOutput(first, 0, p, "timed pass " + rep);
                }
            }
        } finally {
            for (Driver d : drivers) {
                d.close();
            }
        }
        return new Result(values, keys, rows, passes, operators);
    }
}
