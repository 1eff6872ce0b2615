package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.intervaljoin.FerryIntervalJoinOperator;
import io.ferrystream.ferry.planner.Ferry;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.typeutils.RowTypeInfo;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.streaming.api.operators.SimpleOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperatorFactory;
import org.apache.flink.streaming.api.operators.TwoInputStreamOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedTwoInputStreamOperatorTestHarness;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.runtime.keyselector.RowDataKeySelector;
import org.apache.flink.streaming.api.operators.co.KeyedCoProcessOperator;
import org.apache.flink.table.runtime.operators.join.interval.ProcTimeIntervalJoin;
import org.apache.flink.table.runtime.operators.join.interval.RowTimeIntervalJoin;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.Row;
import org.apache.flink.util.InstantiationUtil;

import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Flink's own row-time interval join ({@code KeyedCoProcessOperatorWithWatermarkDelay} with
 * {@code RowTimeIntervalJoin}, planned by Flink 2.3 with Ferry off) and Ferry's ({@link
 * FerryIntervalJoinOperator}, planned for the same query with Ferry on), each in Flink's keyed
 * two-input operator test harness on the heap state backend, fed the same random interleaving of
 * left rows, right rows and per-input watermarks (late rows, NULL keys, rows at times <= 0, many
 * keys with equal times), must emit identical sequences: rows with their RowKind, and the output
 * watermarks. Both are snapshotted and restored into fresh operators mid-stream. The same for
 * residual conditions, and for processing-time joins ({@code KeyedCoProcessOperator} with {@code
 * ProcTimeIntervalJoin}) with the harness's processing time driven step by step.
 */
class IntervalJoinDifferentialTest {

    /** A planned interval join with its two state key selectors. */
    record Planned(
            TwoInputStreamOperator<RowData, RowData, RowData> operator,
            KeySelector<RowData, RowData> leftKeys,
            KeySelector<RowData, RowData> rightKeys,
            TypeInformation<RowData> keyType,
            RowType leftType,
            RowType rightType,
            RowType outputType) {}

    /**
     * The inputs: L(k, s, rt, v, a, d, x, b), R(k, s, rt, w, a, d, x, b), rt the row time, keyed by k
     * (and s, when two keys); a INT, d DECIMAL(10, 2), x DOUBLE, b BOOLEAN for residual conditions.
     */
    static Planned plan(String joinType, String condition, boolean ferry, int batchSize) throws Exception {
        return plan(joinType, condition, ferry, batchSize, false);
    }

    /**
     * @param proctime the inputs also have {@code pt AS PROCTIME()} (their last field, NULL in the
     *     rows: Flink does not materialize it) and no watermark; the condition's bounds use it
     */
    static Planned plan(String joinType, String condition, boolean ferry, int batchSize, boolean proctime) throws Exception {
        return plan(joinType, condition, ferry, batchSize, proctime, false);
    }

    /** @param emitNullKeys {@code ferry.join.null-key.emit-immediately} */
    static Planned plan(String joinType, String condition, boolean ferry, int batchSize, boolean proctime, boolean emitNullKeys)
            throws Exception {
        return plan(joinType, condition, ferry, batchSize, proctime, emitNullKeys, null);
    }

    /**
     * @param hint a query hint for the join's SELECT (e.g. {@code EARLY_FIRE('delay'='3ms')}), or
     *     null; with one, the result is read as a changelog stream (an early-fire join updates)
     */
    static Planned plan(String joinType, String condition, boolean ferry, int batchSize, boolean proctime, boolean emitNullKeys,
            String hint) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        tEnv.getConfig().set(FerryOptions.JOIN_NULL_KEY_EMIT_IMMEDIATELY, emitNullKeys);
        tEnv.getConfig().set(FerryOptions.BATCH_SIZE, batchSize);
        tEnv.getConfig().set(FerryOptions.BATCH_MAX_DELAY, Duration.ofHours(1));
        Ferry.install(tEnv);
        for (String side : List.of("L", "R")) {
            String value = side.equals("L") ? "v" : "w";
            RowTypeInfo type = new RowTypeInfo(
                    new TypeInformation<?>[] {Types.LONG, Types.STRING, Types.LOCAL_DATE_TIME, Types.STRING,
                        Types.INT, Types.BIG_DEC, Types.DOUBLE, Types.BOOLEAN},
                    new String[] {"k", "s", "rt", value, "a", "d", "x", "b"});
            DataStream<Row> source = env.fromData(List.of(new Row(FIELDS)), type);
            Schema.Builder schema = Schema.newBuilder()
                    .column("k", "BIGINT").column("s", "STRING").column("rt", "TIMESTAMP(3)").column(value, "STRING")
                    .column("a", "INT").column("d", "DECIMAL(10, 2)").column("x", "DOUBLE").column("b", "BOOLEAN");
            if (proctime) {
                schema.columnByExpression("pt", "PROCTIME()");
            } else {
                schema.watermark("rt", "rt");
            }
            Table t = tEnv.fromDataStream(source, schema.build());
            tEnv.createTemporaryView(side, t);
        }
        Table result = tEnv.sqlQuery(
                "SELECT " + (hint == null ? "" : "/*+ " + hint + " */ ") + "L.k, L.s, CAST(L.rt AS TIMESTAMP(3)) AS lrt, L.v, L.a, L.d, L.x, L.b, R.k AS rk, R.s AS rs,"
                        + " CAST(R.rt AS TIMESTAMP(3)) AS rrt, R.w, R.a AS ra, R.d AS rd, R.x AS rx, R.b AS rb FROM L "
                        + joinType + " JOIN R ON " + condition);
        if (hint == null) {
            tEnv.toDataStream(result).print();
        } else {
            tEnv.toChangelogStream(result).print();
        }
        StreamGraph graph = env.getStreamGraph();
        for (StreamNode node : graph.getStreamNodes()) {
            StreamOperatorFactory<?> factory = node.getOperatorFactory();
            if (!(factory instanceof SimpleOperatorFactory)) {
                continue;
            }
            Object op = ((SimpleOperatorFactory<?>) factory).getOperator();
            boolean stock = op instanceof KeyedCoProcessOperator
                    && (((KeyedCoProcessOperator<?, ?, ?, ?>) op).getUserFunction() instanceof RowTimeIntervalJoin
                            || ((KeyedCoProcessOperator<?, ?, ?, ?>) op).getUserFunction() instanceof ProcTimeIntervalJoin);
            if (stock || op instanceof FerryIntervalJoinOperator) {
                assertEquals(ferry, op instanceof FerryIntervalJoinOperator, "planned operator " + op);
                @SuppressWarnings("unchecked")
                KeySelector<RowData, RowData> left = (KeySelector<RowData, RowData>) node.getStatePartitioners()[0];
                @SuppressWarnings("unchecked")
                KeySelector<RowData, RowData> right = (KeySelector<RowData, RowData>) node.getStatePartitioners()[1];
                @SuppressWarnings("unchecked")
                TwoInputStreamOperator<RowData, RowData, RowData> operator = (TwoInputStreamOperator<RowData, RowData, RowData>) op;
                Field types = RowDataSerializer.class.getDeclaredField("types");
                types.setAccessible(true);
                RowType out = RowType.of((LogicalType[]) types.get(node.getTypeSerializerOut()));
                RowType in1 = RowType.of((LogicalType[]) types.get(node.getTypeSerializersIn()[0]));
                RowType in2 = RowType.of((LogicalType[]) types.get(node.getTypeSerializersIn()[1]));
                int fields = proctime ? FIELDS + 1 : FIELDS;
                assertEquals(fields, in1.getFieldCount(), "the join reads the source row unchanged");
                assertEquals(fields, in2.getFieldCount(), "the join reads the source row unchanged");
                return new Planned(operator, left, right, ((RowDataKeySelector) left).getProducedType(), in1, in2, out);
            }
        }
        throw new AssertionError("no interval join in the plan");
    }

    /** One step of a stream: a row of input 1 or 2, a watermark of input 1 or 2, or a snapshot and restore. */
    record Step(char kind, int input, RowData row, long time) {}

    /**
     * A random interleaving over a few keys: row times in whole seconds plus 0, 1 or 999 ms around
     * the watermarks (late rows included, times <= 0 at the start), watermarks advancing per input.
     */
    static List<Step> steps(long seed, int n, boolean nullKeys) {
        return steps(seed, n, nullKeys ? -1 : 0, -3);
    }

    /**
     * @param nullPct the percentage of rows with a NULL key; -1: one key of the few is NULL
     * @param start the first watermark (seconds); rows start 10 s before it
     */
    static List<Step> steps(long seed, int n, int nullPct, long start) {
        Random r = new Random(seed);
        List<Step> steps = new ArrayList<>();
        long[] wm = {start, start};
        int keys = 2 + r.nextInt(6);
        for (int i = 0; i < n; i++) {
            int x = r.nextInt(100);
            if (x < 84) {
                int input = x < 42 ? 1 : 2;
                long base = Math.min(wm[0], wm[1]) + r.nextInt(30) - 10;
                long t = base * 1000 + new long[] {0, 0, 1, 999, 500}[r.nextInt(5)];
                int k = r.nextInt(keys + 1);
                boolean nullKey = nullPct < 0 ? k == keys : nullPct > 0 && r.nextInt(100) < nullPct;
                GenericRowData row = new GenericRowData(FIELDS);
                row.setField(0, nullKey ? null : (long) k);
                row.setField(1, StringData.fromString(k % 3 == 0 ? "a" : "long string " + k));
                row.setField(2, TimestampData.fromEpochMillis(t));
                row.setField(3, r.nextInt(9) == 0 ? null : StringData.fromString((input == 1 ? "l" : "r") + i));
                values(r, row);
                steps.add(new Step('r', input, row, t));
            } else if (x < 98) {
                int input = r.nextInt(2);
                wm[input] += r.nextInt(8);
                steps.add(new Step('w', input + 1, null, wm[input] * 1000 + (r.nextBoolean() ? 0 : 999)));
            } else {
                steps.add(new Step('s', 0, null, 0));
            }
        }
        steps.add(new Step('w', 1, null, Long.MAX_VALUE));
        steps.add(new Step('w', 2, null, Long.MAX_VALUE));
        return steps;
    }

    /** The fields of each input. */
    static final int FIELDS = 8;

    /**
     * Random a, d, x, b (fields 4..7): small values that often tie across the sides, NULLs, and the
     * edges of Java's semantics (INT overflow, NaN, -0.0, decimals of one value in two forms).
     */
    static void values(Random r, GenericRowData row) {
        int[] ints = {0, 1, 2, 3, -1, Integer.MAX_VALUE, Integer.MIN_VALUE};
        row.setField(4, r.nextInt(8) == 0 ? null : ints[r.nextInt(ints.length)]);
        row.setField(5, r.nextInt(8) == 0 ? null
                : DecimalData.fromBigDecimal(new java.math.BigDecimal(new String[] {"0", "1.5", "-1.5", "1.50", "2"}[r.nextInt(5)]), 10, 2));
        double[] doubles = {0.0, -0.0, 1.5, Double.NaN, -1, Double.POSITIVE_INFINITY};
        row.setField(6, r.nextInt(8) == 0 ? null : doubles[r.nextInt(doubles.length)]);
        row.setField(7, r.nextInt(5) == 0 ? null : r.nextBoolean());
        // the string values of v/w repeat across the sides for <> and comparisons
        if (row.getField(3) != null && r.nextInt(3) == 0) {
            row.setField(3, StringData.fromString(new String[] {"x", "y", "\u00ff", "\uD83D\uDE00"}[r.nextInt(4)]));
        }
    }

    static KeyedTwoInputStreamOperatorTestHarness<RowData, RowData, RowData, RowData> harness(
            Planned p, OperatorSubtaskState state) throws Exception {
        TwoInputStreamOperator<RowData, RowData, RowData> operator = InstantiationUtil.clone(p.operator());
        KeyedTwoInputStreamOperatorTestHarness<RowData, RowData, RowData, RowData> h =
                new KeyedTwoInputStreamOperatorTestHarness<>(operator, p.leftKeys(), p.rightKeys(), p.keyType());
        h.setup(new RowDataSerializer(p.outputType()));
        if (state != null) {
            h.initializeState(state);
        }
        h.open();
        return h;
    }

    /**
     * Runs the steps through a fresh copy of the planned operator, restored from its own
     * checkpoint at each snapshot step; output rows and watermarks as text.
     */
    static List<String> run(Planned p, List<Step> steps) throws Exception {
        return IntervalJoinSwitchTest.run(List.of(p), steps, false);
    }

    static void collect(KeyedTwoInputStreamOperatorTestHarness<RowData, RowData, RowData, RowData> h, RowType type, List<String> into) {
        for (Object o : h.getOutput()) {
            if (o instanceof Watermark) {
                into.add("WM " + ((Watermark) o).getTimestamp());
            } else if (o instanceof StreamRecord) {
                into.add(GroupAggregateDifferentialTest.render((RowData) ((StreamRecord<?>) o).getValue(), type));
            }
        }
        h.getOutput().clear();
    }

    static void check(String joinType, String condition, long seeds, boolean nullKeys) throws Exception {
        Planned stock = plan(joinType, condition, false, 1);
        for (int batch : new int[] {1, 3, 1024}) {
            Planned ferry = plan(joinType, condition, true, batch);
            assertInstanceOf(FerryIntervalJoinOperator.class, ferry.operator());
            for (long seed = 0; seed < seeds; seed++) {
                List<Step> steps = steps(seed * 131 + batch, 600, nullKeys);
                assertSame(run(stock, steps), run(ferry, steps),
                        joinType + " JOIN ON " + condition + ", seed " + seed + ", batch " + batch);
            }
        }
    }

    /** Flink's output and Ferry's, row for row (with their watermarks); stock must produce rows. */
    static void assertSame(List<String> want, List<String> got, String what) {
        assertTrue(want.stream().anyMatch(s -> s.startsWith("+I")), what + ": stock produced no rows");
        for (int i = 0; i < Math.min(want.size(), got.size()); i++) {
            assertEquals(want.get(i), got.get(i), what + ": first difference at output " + i + "; before it: "
                    + want.subList(Math.max(0, i - 5), i));
        }
        assertEquals(want.size(), got.size(), what + ": output length");
    }

    /**
     * Row times whose HashMap hash has its low 16 bits zero ((j << 16) | j ms), so one key's cache
     * piles them into one bin: it becomes a red-black tree bin (iteration order no longer
     * insertion order), splits on resize and shrinks as buckets expire.
     */
    static List<Step> collidingSteps(long seed) {
        Random r = new Random(seed);
        List<Step> steps = new ArrayList<>();
        long wm = 0;
        for (int i = 0; i < 500; i++) {
            int x = r.nextInt(100);
            if (x < 90) {
                int input = 1 + r.nextInt(2);
                long j = 1 + r.nextInt(60);
                long t = r.nextInt(4) == 0 ? wm * 65_537 + r.nextInt(100_000) : (j << 16) | j;
                long k = r.nextInt(5) == 0 ? 2 : 1;
                GenericRowData row = new GenericRowData(FIELDS);
                values(r, row);
                row.setField(0, k);
                row.setField(1, StringData.fromString("s"));
                row.setField(2, TimestampData.fromEpochMillis(t));
                row.setField(3, StringData.fromString((input == 1 ? "l" : "r") + i));
                steps.add(new Step('r', input, row, t));
            } else if (x < 98) {
                wm += r.nextInt(4);
                for (int input = 1; input <= 2; input++) {
                    steps.add(new Step('w', input, null, wm * 65_537));
                }
            } else {
                steps.add(new Step('s', 0, null, 0));
            }
        }
        steps.add(new Step('w', 1, null, Long.MAX_VALUE));
        steps.add(new Step('w', 2, null, Long.MAX_VALUE));
        return steps;
    }

    /** Tree bins in Flink's caches: emission order follows the red-black tree's list. */
    @Test
    void treeBins() throws Exception {
        String condition = "L.k = R.k AND R.rt BETWEEN L.rt - INTERVAL '20' MINUTE AND L.rt + INTERVAL '30' MINUTE";
        Planned stock = plan("FULL", condition, false, 1);
        Planned ferry = plan("FULL", condition, true, 5);
        for (long seed = 0; seed < 6; seed++) {
            List<Step> steps = collidingSteps(seed);
            assertSame(run(stock, steps), run(ferry, steps), "tree bins, seed " + seed);
        }
    }

    /**
     * A random processing-time stream: rows of both inputs over a few keys (NULL keys included),
     * the processing time advancing by 0 to 4 s (several rows arrive at one time, and a jump can
     * pass several cleanup timers), watermarks (which the join only forwards), snapshots with
     * restores; at the end the processing time passes every cleanup timer.
     */
    static List<Step> procSteps(long seed, int n) {
        return procSteps(seed, n, -1);
    }

    /** @param nullPct the percentage of rows with a NULL key; -1: one key of the few is NULL */
    static List<Step> procSteps(long seed, int n, int nullPct) {
        Random r = new Random(seed);
        List<Step> steps = new ArrayList<>();
        int keys = 2 + r.nextInt(5);
        long now = 0;
        long wm = 0;
        for (int i = 0; i < n; i++) {
            int x = r.nextInt(100);
            if (x < 78) {
                int input = x < 39 ? 1 : 2;
                int k = r.nextInt(keys + 1);
                boolean nullKey = nullPct < 0 ? k == keys : r.nextInt(100) < nullPct;
                GenericRowData row = new GenericRowData(FIELDS + 1);
                row.setField(0, nullKey ? null : (long) k);
                row.setField(1, StringData.fromString(k % 3 == 0 ? "a" : "long string " + k));
                row.setField(2, TimestampData.fromEpochMillis(now));
                row.setField(3, r.nextInt(9) == 0 ? null : StringData.fromString((input == 1 ? "l" : "r") + i));
                values(r, row);
                steps.add(new Step('r', input, row, now));
            } else if (x < 95) {
                now += r.nextInt(3) == 0 ? r.nextInt(20) : r.nextInt(4000);
                steps.add(new Step('p', 0, null, now));
            } else if (x < 98) {
                wm += r.nextInt(5000);
                steps.add(new Step('w', 1 + r.nextInt(2), null, wm));
            } else {
                steps.add(new Step('s', 0, null, 0));
            }
        }
        steps.add(new Step('p', 0, null, now + 3_600_000));
        return steps;
    }

    static void checkProcTime(String joinType, String condition, long seeds) throws Exception {
        Planned stock = plan(joinType, condition, false, 1, true);
        assertInstanceOf(ProcTimeIntervalJoin.class, ((KeyedCoProcessOperator<?, ?, ?, ?>) stock.operator()).getUserFunction());
        for (int batch : new int[] {1, 3, 1024}) {
            Planned ferry = plan(joinType, condition, true, batch, true);
            assertInstanceOf(FerryIntervalJoinOperator.class, ferry.operator());
            for (long seed = 0; seed < seeds; seed++) {
                List<Step> steps = procSteps(seed * 131 + batch, 600);
                assertSame(run(stock, steps), run(ferry, steps),
                        joinType + " JOIN ON " + condition + ", seed " + seed + ", batch " + batch);
            }
        }
    }

    static final String PROC_BOUNDS = "L.k = R.k AND R.pt BETWEEN L.pt - INTERVAL '5' SECOND AND L.pt + INTERVAL '10' SECOND";

    /**
     * Processing-time joins against Flink's ProcTimeIntervalJoin with the harness's processing time
     * driven step by step: each row's time is the processing time it arrives at, cleanup runs on
     * processing-time timers (kept in Go, in its snapshots, fired through Flink's
     * processing-time service), watermarks pass through undelayed.
     */
    @Test
    void processingTime() throws Exception {
        checkProcTime("", PROC_BOUNDS, 3);
        checkProcTime("LEFT", PROC_BOUNDS, 3);
        checkProcTime("RIGHT", "L.k = R.k AND L.pt BETWEEN R.pt - INTERVAL '2' SECOND AND R.pt", 3);
        checkProcTime("FULL", PROC_BOUNDS + " AND (L.v <> R.w OR R.a IS NULL)", 3);
        checkProcTime("FULL", "L.k IS NOT DISTINCT FROM R.k AND L.pt BETWEEN R.pt AND R.pt + INTERVAL '3' SECOND", 2);
    }

    static final String BOUNDS = "L.k = R.k AND R.rt BETWEEN L.rt - INTERVAL '5' SECOND AND L.rt + INTERVAL '10' SECOND";

    @Test
    void inner() throws Exception {
        check("", BOUNDS, 4, true);
    }

    @Test
    void leftOuter() throws Exception {
        check("LEFT", BOUNDS, 4, true);
    }

    @Test
    void rightOuter() throws Exception {
        check("RIGHT", BOUNDS, 4, true);
    }

    @Test
    void fullOuter() throws Exception {
        check("FULL", BOUNDS, 4, true);
    }

    /** A window entirely after the left row (both bounds positive): leftLowerBound > 0 is not allowed, but both relative sizes differ in sign. */
    @Test
    void oneSidedWindows() throws Exception {
        check("FULL", "L.k = R.k AND R.rt BETWEEN L.rt + INTERVAL '1' SECOND AND L.rt + INTERVAL '3' SECOND", 3, true);
        check("LEFT", "L.k = R.k AND L.rt BETWEEN R.rt AND R.rt + INTERVAL '2' SECOND", 3, true);
        check("RIGHT", "L.k = R.k AND L.rt > R.rt - INTERVAL '4' SECOND AND L.rt < R.rt", 3, true);
    }

    /**
     * Residual conditions beyond the keys and the time bounds, evaluated in Go as Flink's generated
     * JoinCondition evaluates them: three-valued logic (a pair joins only when TRUE), INT overflow,
     * DOUBLE NaN and -0.0, DECIMAL by value, strings in byte order, BOOLEAN order.
     */
    @Test
    void residualConditions() throws Exception {
        String[] conditions = {
            "L.v > R.w",
            "(L.v <> R.w OR R.a IS NULL)",
            "L.a + 1 >= R.a",
            "(L.x = R.x OR NOT (L.x < R.x)) AND L.d <= R.d",
            "L.b > R.b AND L.a - R.a < 2",
            "(L.v IS NOT NULL AND L.a <> 1) OR R.d > 1.5",
            "L.x < 1.5E0 OR R.rt > TIMESTAMP '1970-01-01 00:00:05.500' OR CAST(R.a AS DOUBLE) >= L.x",
            "L.b <> R.b OR L.a - 1 = R.a",
        };
        String[] types = {"", "LEFT", "RIGHT", "FULL"};
        for (int i = 0; i < conditions.length; i++) {
            check(types[i % types.length], BOUNDS + " AND (" + conditions[i] + ")", 2, true);
        }
    }

    /** Two keys, one compared with IS NOT DISTINCT FROM: its NULLs join (filterNulls false). */
    @Test
    void compositeAndNullSafeKeys() throws Exception {
        check("FULL", "L.k IS NOT DISTINCT FROM R.k AND L.s = R.s AND R.rt BETWEEN L.rt - INTERVAL '5' SECOND AND L.rt + INTERVAL '10' SECOND",
                3, true);
        check("LEFT", "L.k IS NOT DISTINCT FROM R.k AND R.rt BETWEEN L.rt - INTERVAL '2' SECOND AND L.rt + INTERVAL '2' SECOND", 3, true);
    }

    /**
     * Random streams with 30 % NULL keys (Ferry stores their rows only on a padded side, elsewhere
     * only their times), row time and processing time, every join type, snapshots and restores
     * mid-stream (at least one per stream): row for row Flink's, with a residual condition and with
     * min-cleanup-interval too.
     */
    @Test
    void nullKeys() throws Exception {
        String[] types = {"", "LEFT", "RIGHT", "FULL"};
        for (String type : types) {
            Planned stock = plan(type, BOUNDS, false, 1);
            Planned procStock = plan(type, PROC_BOUNDS, false, 1, true);
            for (int batch : new int[] {1, 1024}) {
                Planned ferry = plan(type, BOUNDS, true, batch);
                Planned procFerry = plan(type, PROC_BOUNDS, true, batch, true);
                for (long seed = 0; seed < 3; seed++) {
                    List<Step> steps = withSnapshot(steps(seed * 17 + batch, 600, 30, -3));
                    assertSame(run(stock, steps), run(ferry, steps), type + " JOIN, 30 % NULL keys, seed " + seed + ", batch " + batch);
                    List<Step> proc = withSnapshot(procSteps(seed * 17 + batch, 600, 30));
                    assertSame(run(procStock, proc), run(procFerry, proc),
                            type + " JOIN on processing time, 30 % NULL keys, seed " + seed + ", batch " + batch);
                }
            }
        }
        String residual = BOUNDS + " AND (L.v <> R.w OR R.a IS NULL)";
        Planned stock = plan("FULL", residual, false, 1);
        Planned ferry = plan("FULL", residual, true, 3);
        List<Step> steps = withSnapshot(steps(5, 600, 30, -3));
        assertSame(run(stock, steps), run(ferry, steps), "FULL JOIN with a residual condition, 30 % NULL keys");
    }

    /** The steps with a snapshot and restore in the middle. */
    static List<Step> withSnapshot(List<Step> steps) {
        List<Step> s = new ArrayList<>(steps);
        s.add(s.size() / 2, new Step('s', 0, null, 0));
        return s;
    }

    /**
     * {@code ferry.join.null-key.emit-immediately}: a padded side's rows of NULL keys are padded on
     * arrival. The rows (a multiset) are Flink's; their order differs from Flink's; an inner join
     * is unchanged. Row times are positive (a row at a time <= 0 may be dropped by Flink without a
     * pad: docs/operators/interval-join.md#null-keys).
     */
    @Test
    void nullKeysEmitImmediately() throws Exception {
        int reordered = 0;
        for (String type : new String[] {"", "LEFT", "RIGHT", "FULL"}) {
            for (boolean proctime : new boolean[] {false, true}) {
                String bounds = proctime ? PROC_BOUNDS : BOUNDS;
                Planned stock = plan(type, bounds, false, 1, proctime);
                Planned ferry = plan(type, bounds, true, 3, proctime, true);
                for (long seed = 0; seed < 2; seed++) {
                    List<Step> steps = withSnapshot(proctime ? procSteps(seed, 600, 30) : steps(seed, 600, 30, 20));
                    List<String> want = run(stock, steps);
                    List<String> got = run(ferry, steps);
                    String what = type + " JOIN" + (proctime ? " on processing time" : "") + ", seed " + seed;
                    assertEquals(rows(want), rows(got), what + ": the rows");
                    if (type.isEmpty()) {
                        assertEquals(want, got, what + ": an inner join is unchanged");
                    } else if (!want.equals(got)) {
                        reordered++;
                    }
                }
            }
        }
        assertTrue(reordered > 0, "padding on arrival never changed the order");
    }

    /** The rows of an output, sorted, without watermarks and restore marks. */
    static List<String> rows(List<String> out) {
        List<String> rows = new ArrayList<>();
        for (String s : out) {
            if (!s.startsWith("WM ") && !s.equals("restored")) {
                rows.add(s);
            }
        }
        rows.sort(null);
        return rows;
    }
}
