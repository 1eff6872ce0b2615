package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.deduplicate.FerryDeduplicateOperator;
import io.ferrystream.ferry.planner.Ferry;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.typeutils.RowTypeInfo;
import org.apache.flink.runtime.asyncprocessing.operators.AsyncKeyedProcessOperator;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.SavepointType;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.state.rocksdb.EmbeddedRocksDBStateBackend;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.SimpleOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperatorFactory;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.operators.asyncprocessing.AsyncKeyOrderedProcessingOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.streaming.util.asyncprocessing.AsyncKeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.bridge.java.StreamStatementSet;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.runtime.keyselector.RowDataKeySelector;
import org.apache.flink.table.runtime.operators.bundle.KeyedMapBundleOperator;
import org.apache.flink.table.runtime.operators.deduplicate.RowTimeDeduplicateKeepFirstRowFunction;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.Row;
import org.apache.flink.util.InstantiationUtil;

import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Flink's own deduplication ({@code StreamExecDeduplicate}'s operator, planned by Flink 2.3 with
 * Ferry off) and Ferry's ({@link FerryDeduplicateOperator}, planned for the same query with Ferry
 * on), each in Flink's keyed one-input harness, fed the same random stream (NULL keys, identical
 * rows one after the other, row times with ties, late rows, watermarks, the processing-time and
 * TTL clocks moving), with snapshots and restores into fresh operators mid-stream: both must emit
 * identical sequences of rows (kind and every field, -0.0 and NaN told apart) and watermarks.
 * Every function Flink's translation picks: processing or row time, first or last row, mini-batch
 * bundles of several sizes, with and without UPDATE_BEFORE, {@code
 * table.exec.deduplicate.insert-update-after-sensitive-enabled}, the mini-batch compaction of
 * changes, idle-state TTL, async state; heap and RocksDB.
 */
class DeduplicateDifferentialTest {
    /** A planned deduplication with its state key selector and row type. */
    record Planned(
            OneInputStreamOperator<RowData, RowData> operator,
            KeySelector<RowData, RowData> keySelector,
            TypeInformation<RowData> keyType,
            RowType type,
            boolean rocksdb) {}

    /**
     * The deduplication of T(k, s, v, d, rt, ms, lt, pt) by k (rt the row time, or lt with {@code
     * ltz}; pt the processing time) ordered by {@code order}, as Flink (ferry false) or Ferry plans
     * it with {@code options}; {@code upsert}: into an upsert sink keyed by k, so Flink generates
     * no UPDATE_BEFORE.
     */
    static Planned plan(String order, boolean ltz, boolean upsert, boolean ferry, int batchSize, Map<String, String> options)
            throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        tEnv.getConfig().set(FerryOptions.BATCH_SIZE, batchSize);
        tEnv.getConfig().set(FerryOptions.BATCH_MAX_DELAY, Duration.ofHours(1));
        options.forEach((k, v) -> tEnv.getConfig().set(k, v));
        Ferry.install(tEnv);
        RowTypeInfo type = new RowTypeInfo(
                new TypeInformation<?>[] {Types.LONG, Types.STRING, Types.INT, Types.DOUBLE, Types.LOCAL_DATE_TIME, Types.LONG},
                new String[] {"k", "s", "v", "d", "rt", "ms"});
        DataStream<Row> source = env.fromData(List.of(new Row(6)), type);
        Schema.Builder schema = Schema.newBuilder()
                .column("k", "BIGINT").column("s", "STRING").column("v", "INT").column("d", "DOUBLE")
                .column("rt", "TIMESTAMP(3)").column("ms", "BIGINT")
                .columnByExpression("lt", "TO_TIMESTAMP_LTZ(ms, 3)")
                .columnByExpression("pt", "PROCTIME()");
        schema.watermark(ltz ? "lt" : "rt", ltz ? "lt" : "rt");
        tEnv.createTemporaryView("T", tEnv.fromDataStream(source, schema.build()));
        String query = "SELECT k, s, v, d, CAST(rt AS TIMESTAMP(3)), ms, CAST(lt AS TIMESTAMP_LTZ(3)), CAST(pt AS TIMESTAMP_LTZ(3))"
                + " FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY " + order + ") AS rn FROM T) WHERE rn = 1";
        if (upsert) {
            tEnv.executeSql("CREATE TEMPORARY TABLE S (k BIGINT NOT NULL, s STRING, v INT, d DOUBLE, rt TIMESTAMP(3), ms BIGINT,"
                    + " lt TIMESTAMP_LTZ(3), pt TIMESTAMP_LTZ(3), PRIMARY KEY (k) NOT ENFORCED)"
                    + " WITH ('connector' = 'values', 'sink-insert-only' = 'false', 'sink-changelog-mode-enforced' = 'I,UA,D')");
            StreamStatementSet set = tEnv.createStatementSet();
            set.addInsertSql("INSERT INTO S " + query);
            set.attachAsDataStream();
        } else {
            tEnv.toChangelogStream(tEnv.sqlQuery(query)).print();
        }
        StreamGraph graph = env.getStreamGraph();
        for (StreamNode node : graph.getStreamNodes()) {
            StreamOperatorFactory<?> factory = node.getOperatorFactory();
            if (!(factory instanceof SimpleOperatorFactory)) {
                continue;
            }
            Object op = ((SimpleOperatorFactory<?>) factory).getOperator();
            Object function = op instanceof KeyedProcessOperator ? ((KeyedProcessOperator<?, ?, ?>) op).getUserFunction()
                    : op instanceof AsyncKeyedProcessOperator ? ((AsyncKeyedProcessOperator<?, ?, ?>) op).getUserFunction() : null;
            boolean stock = op instanceof KeyedMapBundleOperator
                    || (function != null && function.getClass().getPackageName().startsWith(
                            "org.apache.flink.table.runtime.operators.deduplicate"));
            if (stock || op instanceof FerryDeduplicateOperator) {
                assertEquals(ferry, op instanceof FerryDeduplicateOperator, "planned operator " + op);
                @SuppressWarnings("unchecked")
                KeySelector<RowData, RowData> selector = (KeySelector<RowData, RowData>) node.getStatePartitioners()[0];
                @SuppressWarnings("unchecked")
                OneInputStreamOperator<RowData, RowData> operator = (OneInputStreamOperator<RowData, RowData>) op;
                Field types = RowDataSerializer.class.getDeclaredField("types");
                types.setAccessible(true);
                RowType in = RowType.of((LogicalType[]) types.get(node.getTypeSerializersIn()[0]));
                RowType out = RowType.of((LogicalType[]) types.get(node.getTypeSerializerOut()));
                assertEquals(in, out, "a deduplication emits its input rows");
                assertEquals(8, in.getFieldCount(), "the deduplication reads k, s, v, d, rt, ms, lt, pt");
                return new Planned(operator, selector, ((RowDataKeySelector) selector).getProducedType(), in,
                        "rocksdb".equals(options.get("state.backend.type")));
            }
        }
        throw new AssertionError("no deduplication in the plan");
    }

    /** One step: a row, a watermark, a clock step (processing time and TTL), or a snapshot and restore. */
    record Step(char kind, BinaryRowData row, long time) {}

    /**
     * A random stream over a few keys (one of them NULL): row times in seconds around the
     * watermark with many ties and late rows, rows that repeat the key's previous row exactly,
     * -0.0, 0.0 and NaN, watermarks, clock steps of up to 40 ms (against a TTL of 50 ms), snapshots.
     */
    static List<Step> steps(long seed, int n, RowType type, boolean ltz) {
        Random r = new Random(seed);
        RowDataSerializer serializer = new RowDataSerializer(type);
        List<Step> steps = new ArrayList<>();
        Map<Long, GenericRowData> last = new HashMap<>();
        int keys = 1 + r.nextInt(6);
        long wm = 0;
        long emitted = Long.MIN_VALUE;
        long now = 0;
        for (int i = 0; i < n; i++) {
            int x = r.nextInt(100);
            if (x < 80) {
                int k = r.nextInt(keys + 1);
                Long key = k == keys ? null : (long) k * 1_000_003L;
                GenericRowData prev = last.get(key);
                GenericRowData row;
                if (prev != null && r.nextInt(4) == 0) {
                    row = copy(prev); // the same row again
                } else {
                    long t = (wm + r.nextInt(6) - 2) * 1000 + (r.nextInt(4) == 0 ? 999 : 0);
                    row = new GenericRowData(8);
                    row.setField(0, key);
                    row.setField(1, r.nextInt(7) == 0 ? null
                            : StringData.fromString(new String[] {"a", "b", "a longer string ü"}[r.nextInt(3)]));
                    row.setField(2, r.nextInt(7) == 0 ? null : r.nextInt(3));
                    row.setField(3, r.nextInt(7) == 0 ? null : new double[] {0.0, -0.0, 1.5, Double.NaN}[r.nextInt(4)]);
                    long rt = ltz ? t + 3_600_000L * r.nextInt(2) : t;
                    row.setField(4, TimestampData.fromEpochMillis(rt));
                    row.setField(5, t);
                    row.setField(6, TimestampData.fromEpochMillis(ltz ? t : t + 7));
                    row.setField(7, null); // Flink does not materialize the processing time in the row
                    if (prev != null && r.nextInt(3) == 0) { // another row at the same time
                        row.setField(4, prev.getField(4));
                        row.setField(5, prev.getField(5));
                        row.setField(6, prev.getField(6));
                    }
                }
                last.put(key, row);
                steps.add(new Step('r', serializer.toBinaryRow(row).copy(), 0));
            } else if (x < 92) {
                long at = (wm + r.nextInt(3)) * 1000 + (r.nextBoolean() ? 0 : 999);
                if (at > emitted) { // rising only, as Flink's watermark valve forwards them
                    wm = at / 1000;
                    emitted = at;
                    steps.add(new Step('w', null, at));
                }
            } else if (x < 98) {
                now += r.nextInt(40);
                steps.add(new Step('t', null, now));
            } else {
                steps.add(new Step('s', null, 0));
            }
        }
        steps.add(new Step('w', null, Long.MAX_VALUE));
        return steps;
    }

    static GenericRowData copy(GenericRowData row) {
        GenericRowData c = new GenericRowData(row.getArity());
        for (int i = 0; i < row.getArity(); i++) {
            c.setField(i, row.getField(i));
        }
        return c;
    }

    static KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> harness(Planned p, OperatorSubtaskState state, long now)
            throws Exception {
        OneInputStreamOperator<RowData, RowData> operator = InstantiationUtil.clone(p.operator());
        KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> h =
                operator instanceof AsyncKeyOrderedProcessingOperator
                        ? AsyncKeyedOneInputStreamOperatorTestHarness.create(operator, p.keySelector(), p.keyType())
                        : new KeyedOneInputStreamOperatorTestHarness<>(operator, p.keySelector(), p.keyType());
        HarnessMemory.outsideBudget(h);
        if (p.rocksdb()) {
            EmbeddedRocksDBStateBackend rocks = new EmbeddedRocksDBStateBackend(false);
            rocks.getMemoryConfiguration().setFixedMemoryPerSlot("64mb"); // the harness has no managed memory for it
            h.setStateBackend(rocks);
        }
        h.setup(new RowDataSerializer(p.type()));
        if (state != null) {
            h.initializeState(state);
        }
        h.open();
        h.setProcessingTime(now);
        h.setStateTtlProcessingTime(now);
        return h;
    }

    /** The output of the steps: rows and watermarks as text, and the late rows counted. */
    record Run(List<String> out, long late) {}

    /**
     * Runs the steps through a fresh copy of the planned operator, restored from its own
     * checkpoint at each snapshot step. Every row is a copy (Flink's heap state keeps the object it
     * is given and changes its kind). A clock step first ends the pending batch (a checkpoint
     * barrier: Flink's bundle ends there too), so both operators see each row at the same time.
     */
    static Run run(Planned p, List<Step> steps) throws Exception {
        return run(List.of(p), steps, false);
    }

    /**
     * {@link #run(Planned, List)} through {@code ops[0]}, then after each snapshot step through
     * the next of {@code ops} (cyclically), restored from the snapshot the one before took: a
     * checkpoint, or with {@code savepoints} a canonical savepoint.
     */
    static Run run(List<Planned> ops, List<Step> steps, boolean savepoints) throws Exception {
        RowType type = ops.get(0).type();
        List<String> out = new ArrayList<>();
        long now = 0;
        long cp = 0;
        long late = 0;
        int segment = 0;
        KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> h = harness(ops.get(0), null, now);
        try {
            for (Step s : steps) {
                switch (s.kind()) {
                    case 'r' -> h.processElement(new StreamRecord<>(s.row().copy()));
                    case 'w' -> h.processWatermark(new Watermark(s.time()));
                    case 't' -> {
                        h.prepareSnapshotPreBarrier(++cp);
                        now = s.time();
                        h.setProcessingTime(now);
                        h.setStateTtlProcessingTime(now);
                    }
                    default -> {
                        h.prepareSnapshotPreBarrier(++cp);
                        OperatorSubtaskState state = savepoints
                                ? h.snapshotWithLocalState(cp, cp, SavepointType.savepoint(SavepointFormatType.CANONICAL))
                                        .getJobManagerOwnedState()
                                : h.snapshot(cp, cp);
                        collect(h, type, out);
                        late += lateRecordsDropped(h.getOperator());
                        h.close();
                        h = harness(ops.get(++segment % ops.size()), state, now);
                    }
                }
            }
            h.prepareSnapshotPreBarrier(++cp);
        } catch (Exception e) {
            try {
                h.getOperator().close();
            } catch (Exception closing) {
                e.addSuppressed(closing);
            }
            throw e;
        }
        collect(h, type, out);
        late += lateRecordsDropped(h.getOperator());
        h.close();
        return new Run(out, late);
    }

    /** Flink's {@code numLateRecordsDropped} of the operator (its function's counter), or Ferry's. */
    static long lateRecordsDropped(Object op) throws Exception {
        if (op instanceof FerryDeduplicateOperator f) {
            return f.lateRecordsDropped();
        }
        if (op instanceof KeyedProcessOperator<?, ?, ?> k && k.getUserFunction() instanceof RowTimeDeduplicateKeepFirstRowFunction f) {
            Field counter = RowTimeDeduplicateKeepFirstRowFunction.class.getDeclaredField("numLateRecordsDropped");
            counter.setAccessible(true);
            return ((org.apache.flink.metrics.Counter) counter.get(f)).getCount();
        }
        return 0;
    }

    static void collect(KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> h, RowType type, List<String> into) {
        for (Object o : h.getOutput()) {
            if (o instanceof Watermark w) {
                into.add("WM " + w.getTimestamp());
            } else if (o instanceof StreamRecord<?> rec) {
                into.add(GroupAggregateDifferentialTest.render((RowData) rec.getValue(), type));
            }
        }
        h.getOutput().clear();
    }

    /** Whether Flink's operator emits on event-time timers: the insert-only first row on row time. */
    static boolean timersFire(Planned stock) {
        return stock.operator() instanceof KeyedProcessOperator<?, ?, ?> k
                && k.getUserFunction() instanceof RowTimeDeduplicateKeepFirstRowFunction;
    }

    /** Flink's output and Ferry's, row for row (with their watermarks); Flink's must hold rows. */
    static void assertSame(List<String> want, List<String> got, String what) {
        assertTrue(want.stream().anyMatch(s -> !s.startsWith("WM ")), what + ": stock produced no rows");
        for (int i = 0; i < Math.min(want.size(), got.size()); i++) {
            assertEquals(want.get(i), got.get(i), what + ": first difference at output " + i + "; before it: "
                    + want.subList(Math.max(0, i - 5), i));
        }
        assertEquals(want.size(), got.size(), what + ": output length");
    }

    /** One variant: the order, where rows go, the options. */
    record Variant(String order, boolean ltz, boolean upsert, Map<String, String> options) {
        @Override
        public String toString() {
            return "ORDER BY " + order + (ltz ? " (TIMESTAMP_LTZ)" : "") + (upsert ? ", upsert sink" : "") + ", " + options;
        }
    }

    /** Flink's output and Ferry's for {@code seeds} streams, row for row, at the given batch sizes. */
    static void check(Variant v, int seeds, int... batchSizes) throws Exception {
        Planned stock = plan(v.order(), v.ltz(), v.upsert(), false, 1, v.options());
        for (int batch : batchSizes) {
            Planned ferry = plan(v.order(), v.ltz(), v.upsert(), true, batch, v.options());
            assertInstanceOf(FerryDeduplicateOperator.class, ferry.operator(), v.toString());
            assertEquals(stock.type(), ferry.type());
            for (long seed = 0; seed < seeds; seed++) {
                List<Step> steps = steps(seed * 131 + batch, 500, stock.type(), v.ltz());
                Run want = run(stock, steps);
                Run got = run(ferry, steps);
                String what = v + ", seed " + seed + ", batch " + batch;
                if (stock.rocksdb() && timersFire(stock)) {
                    // RocksDB fires the timers of one watermark in its own order, Ferry in the heap's
                    assertSame(WindowJoinDifferentialTest.segmentsSorted(want.out()),
                            WindowJoinDifferentialTest.segmentsSorted(got.out()), what);
                } else {
                    assertSame(want.out(), got.out(), what);
                }
                assertEquals(want.late(), got.late(), what + ": late rows counted");
            }
        }
    }

    static final String[] ORDERS = {"rt DESC", "rt", "pt DESC", "pt"};

    static Map<String, String> options(String... kv) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < kv.length; i += 2) {
            m.put(kv[i], kv[i + 1]);
        }
        return m;
    }

    static Map<String, String> miniBatch(int size, String... more) {
        Map<String, String> m = options(more);
        m.put("table.exec.mini-batch.enabled", "true");
        m.put("table.exec.mini-batch.allow-latency", "1 s");
        m.put("table.exec.mini-batch.size", Integer.toString(size));
        return m;
    }

    static final String INSERT_SENSITIVE = "table.exec.deduplicate.insert-update-after-sensitive-enabled";
    static final String COMPACT = "table.exec.deduplicate.mini-batch.compact-changes-enabled";
    static final String TTL = "table.exec.state.ttl";

    /** Runs every check, then fails naming each variant that failed (the first difference of each). */
    static final class Checks {
        private final List<String> failures = new ArrayList<>();

        void check(Variant v, int seeds, int... batchSizes) throws Exception {
            try {
                DeduplicateDifferentialTest.check(v, seeds, batchSizes);
            } catch (AssertionError e) {
                failures.add(e.getMessage());
            }
        }

        void verify() {
            assertTrue(failures.isEmpty(), failures.size() + " variants differ:\n" + String.join("\n", failures));
        }
    }

    /** Without mini-batch: each order, with and without UPDATE_BEFORE and INSERT, with and without TTL. */
    @Test
    void perRecord() throws Exception {
        Checks checks = new Checks();
        for (String order : ORDERS) {
            for (boolean upsert : new boolean[] {false, true}) {
                for (String insert : new String[] {"true", "false"}) {
                    checks.check(new Variant(order, false, upsert, options(INSERT_SENSITIVE, insert)), 3, 1, 64);
                    checks.check(new Variant(order, false, upsert, options(INSERT_SENSITIVE, insert, TTL, "50 ms")), 3, 1, 64);
                }
            }
        }
        checks.verify();
    }

    /** Mini-batch bundles of 1, 3, 7 and 100 rows, with and without compaction of changes and TTL. */
    @Test
    void miniBatch() throws Exception {
        Checks checks = new Checks();
        for (String order : ORDERS) {
            for (int size : new int[] {1, 3, 7, 100}) {
                for (boolean upsert : new boolean[] {false, true}) {
                    checks.check(new Variant(order, false, upsert, miniBatch(size)), 2, 1);
                    checks.check(new Variant(order, false, upsert, miniBatch(size, INSERT_SENSITIVE, "false", TTL, "50 ms")), 2, 1);
                    if (order.startsWith("rt")) {
                        checks.check(new Variant(order, false, upsert, miniBatch(size, COMPACT, "true")), 2, 1);
                        checks.check(new Variant(order, false, upsert, miniBatch(size, COMPACT, "true", INSERT_SENSITIVE, "false",
                                TTL, "50 ms")), 2, 1);
                    }
                }
            }
        }
        checks.verify();
    }

    /** A TIMESTAMP_LTZ(3) row time, not the first timestamp of the row. */
    @Test
    void timestampLtzRowTime() throws Exception {
        for (String order : new String[] {"lt DESC", "lt"}) {
            check(new Variant(order, true, false, options()), 3, 1, 64);
            check(new Variant(order, true, false, miniBatch(7, COMPACT, "true")), 2, 1);
        }
    }

    /**
     * The processing-time last row on heap and RocksDB: Flink's heap backend keeps the stored row
     * object, whose kind becomes +U once emitted so, and its equaliser then finds an identical next
     * row changed; RocksDB stores the row as it arrived. Ferry's operator is opened for the backend
     * it runs on, also when the configuration says another.
     */
    @Test
    void storedRowKindOnHeapAndRocksDb() throws Exception {
        for (Map<String, String> backend : List.of(options("state.backend.type", "hashmap"), options("state.backend.type", "rocksdb"))) {
            for (boolean upsert : new boolean[] {false, true}) {
                check(new Variant("pt DESC", false, upsert, backend), 4, 1, 64);
                Map<String, String> mb = miniBatch(3);
                mb.putAll(backend);
                check(new Variant("pt DESC", false, upsert, mb), 3, 1);
                Map<String, String> insert = new HashMap<>(backend);
                insert.put(INSERT_SENSITIVE, "false");
                check(new Variant("pt DESC", false, upsert, insert), 2, 1);
            }
            check(new Variant("rt DESC", false, false, backend), 2, 1);
            check(new Variant("rt", false, false, backend), 2, 1);
        }
        // the two backends' results differ: what the stored kind changes shows in these streams
        Planned heap = plan("pt DESC", false, false, false, 1, options());
        Planned rocks = plan("pt DESC", false, false, false, 1, options("state.backend.type", "rocksdb"));
        int differ = 0;
        for (long seed = 0; seed < 4; seed++) {
            List<Step> steps = steps(seed * 131 + 1, 500, heap.type(), false);
            differ += run(heap, steps).out().equals(run(rocks, steps).out()) ? 0 : 1;
        }
        assertTrue(differ > 0, "Flink's heap and RocksDB results never differed");
        // planned for the heap, run on RocksDB: the operator reads the backend it runs on
        Planned ferry = plan("pt DESC", false, false, true, 1, options());
        Planned onRocks = new Planned(ferry.operator(), ferry.keySelector(), ferry.keyType(), ferry.type(), true);
        Planned stockOnRocks = plan("pt DESC", false, false, false, 1, options("state.backend.type", "rocksdb"));
        for (long seed = 0; seed < 3; seed++) {
            List<Step> steps = steps(seed, 500, ferry.type(), false);
            assertSame(run(stockOnRocks, steps).out(), run(onRocks, steps).out(),
                    "planned for the heap, run on RocksDB, seed " + seed);
        }
    }

    /**
     * The insert-only first row on row time ({@code RowTimeDeduplicateKeepFirstRowFunction}): rows
     * held until the watermark passes them, late rows dropped and counted in {@code
     * numLateRecordsDropped} as Flink counts them.
     */
    @Test
    void lateRowsAreCountedAsInFlink() throws Exception {
        Planned stock = plan("rt", false, false, false, 1, options());
        assertInstanceOf(RowTimeDeduplicateKeepFirstRowFunction.class, ((KeyedProcessOperator<?, ?, ?>) stock.operator()).getUserFunction());
        Planned ferry = plan("rt", false, false, true, 16, options());
        long late = 0;
        for (long seed = 0; seed < 4; seed++) {
            List<Step> steps = steps(seed, 800, stock.type(), false);
            Run want = run(stock, steps);
            Run got = run(ferry, steps);
            assertSame(want.out(), got.out(), "seed " + seed);
            assertEquals(want.late(), got.late(), "late rows, seed " + seed);
            late += want.late();
        }
        assertTrue(late > 50, "too few late rows: " + late);
    }

    /**
     * A checkpoint of Flink's own insert-only row-time first row (rows only: every key's row waits
     * for its timer) restored into Ferry's operator, on the heap and on RocksDB: Ferry imports the
     * waiting rows and the timers and, at the next watermarks, emits what Flink's operator restored
     * from the same checkpoint emits. The savepoints of every form, both ways: {@link
     * DeduplicateSwitchTest}.
     */
    @Test
    void flinksCheckpointIsImported() throws Exception {
        for (boolean rocksdb : new boolean[] {false, true}) {
            Map<String, String> backend = options("state.backend.type", rocksdb ? "rocksdb" : "hashmap");
            Planned stock = plan("rt", false, false, false, 1, backend);
            Planned ferry = plan("rt", false, false, true, 1, backend);
            List<Step> steps = new ArrayList<>(steps(5, 300, stock.type(), false));
            steps.removeIf(s -> s.kind() != 'r'); // rows only: the insert-only first row keeps them waiting
            KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> h = harness(stock, null, 0);
            for (Step s : steps) {
                h.processElement(new StreamRecord<>(s.row().copy()));
            }
            h.prepareSnapshotPreBarrier(1);
            OperatorSubtaskState state = h.snapshot(1, 1);
            assertTrue(h.getOutput().isEmpty(), "Flink's operator emitted before a watermark");
            h.close();
            List<List<String>> outs = new ArrayList<>();
            for (Planned p : List.of(stock, ferry)) {
                KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> r = harness(p, state, 0);
                List<String> out = new ArrayList<>();
                for (long wm : new long[] {0, 2000, Long.MAX_VALUE}) {
                    r.processWatermark(new Watermark(wm));
                    r.prepareSnapshotPreBarrier(2);
                    collect(r, stock.type(), out);
                }
                r.close();
                outs.add(rocksdb ? WindowJoinDifferentialTest.segmentsSorted(out) : out);
            }
            assertTrue(outs.get(0).stream().filter(o -> o.startsWith("+I")).count() >= 3, "too few rows: " + outs.get(0));
            assertSame(outs.get(0), outs.get(1), "RocksDB " + rocksdb);
        }
    }

    /**
     * A timer deleted right after a restore, before any other: Flink's heap backend has added every
     * restored timer to its heap (key group by key group) and removes the deleted one from it
     * (the last element moves into its place), which decides the order in which the two timers of
     * one time fire later. The insert-only first row deletes a key's timer when an earlier row
     * replaces its waiting one.
     */
    @Test
    void timerDeletedRightAfterARestore() throws Exception {
        Planned stock = plan("rt", false, false, false, 1, options());
        Planned ferry = plan("rt", false, false, true, 1, options());
        RowDataSerializer serializer = new RowDataSerializer(stock.type());
        List<Step> steps = new ArrayList<>();
        for (Object[] r : new Object[][] {{1000003L, 4000L}, {null, 2999L}, {3000009L, 4000L}, null, {null, 2000L}}) {
            if (r == null) {
                steps.add(new Step('s', null, 0));
                continue;
            }
            long t = (Long) r[1];
            GenericRowData row = GenericRowData.of(r[0], StringData.fromString("a"), 0, 0.0, TimestampData.fromEpochMillis(t), t,
                    TimestampData.fromEpochMillis(t), null);
            steps.add(new Step('r', serializer.toBinaryRow(row).copy(), 0));
        }
        steps.add(new Step('w', null, Long.MAX_VALUE));
        List<String> want = run(stock, steps).out();
        assertEquals("+I[3000009, a, 0, 0.0, 1970-01-01T00:00:04, 4000, 1970-01-01T00:00:04, null]", want.get(1), want.toString());
        assertSame(want, run(ferry, steps).out(), "timers after a restore and a deletion");
    }

    /**
     * Async state on: Flink runs {@code AsyncStateRowTimeDeduplicateFunction} for the row-time
     * deduplications but the insert-only first row; on the heap backend (through {@code
     * AsyncKeyedStateBackendAdaptor}) its state never expires whatever {@code table.exec.state.ttl}
     * says, and Ferry's keeps it too. The TTL clock steps past the retention many times.
     */
    @Test
    void asyncStateIgnoresTtlAsFlinkDoes() throws Exception {
        Map<String, String> async = options("table.exec.async-state.enabled", "true", TTL, "50 ms");
        Planned asyncStock = plan("rt DESC", false, false, false, 1, async);
        assertInstanceOf(AsyncKeyedProcessOperator.class, asyncStock.operator());
        // the TTL would show in these streams: Flink's synchronous function applies it
        Planned syncStock = plan("rt DESC", false, false, false, 1, options(TTL, "50 ms"));
        int differ = 0;
        for (long seed = 0; seed < 3; seed++) {
            List<Step> steps = steps(seed * 131 + 1, 500, syncStock.type(), false);
            differ += run(asyncStock, steps).out().equals(run(syncStock, steps).out()) ? 0 : 1;
        }
        assertTrue(differ > 0, "Flink's async-state deduplication and its TTL never differed");
        Checks checks = new Checks();
        for (boolean upsert : new boolean[] {false, true}) {
            checks.check(new Variant("rt DESC", false, upsert, async), 3, 1, 64);
        }
        checks.check(new Variant("rt", false, false, async), 3, 1); // the insert-only first row: Flink's sync function, with TTL
        checks.check(new Variant("pt DESC", false, false, async), 2, 1); // processing time: sync functions
        checks.verify();
    }
}
