package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.windowjoin.FerryWindowJoinOperator;
import io.ferrystream.ferry.kinds.windowjoin.WindowJoinSpec;
import io.ferrystream.ferry.operators.IntervalJoinDifferentialTest.Planned;
import io.ferrystream.ferry.operators.IntervalJoinDifferentialTest.Step;
import io.ferrystream.ferry.planner.Ferry;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.typeutils.RowTypeInfo;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.streaming.api.operators.SimpleOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperatorFactory;
import org.apache.flink.streaming.api.operators.TwoInputStreamOperator;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.runtime.keyselector.RowDataKeySelector;
import org.apache.flink.table.runtime.operators.join.window.WindowJoinOperator;
import org.apache.flink.table.runtime.operators.join.window.utils.WindowJoinHelper;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.LogicalTypeRoot;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.Row;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.reflect.Field;
import java.time.Duration;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;

import static io.ferrystream.ferry.operators.IntervalJoinDifferentialTest.assertSame;
import static io.ferrystream.ferry.operators.IntervalJoinDifferentialTest.run;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Flink's own {@code WindowJoinOperator} (planned by Flink 2.3 with Ferry off) and Ferry's
 * ({@link FerryWindowJoinOperator}, planned for the same query with Ferry on), each in Flink's
 * keyed two-input harness on the heap state backend, fed the same random interleaving of rows of
 * both inputs (late rows, NULL keys, many keys whose windows end together) and per-input
 * watermarks, with snapshots and restores into fresh operators mid-stream. With one row per batch
 * both must emit identical sequences: rows, their order across keys (Flink's timer heap), and the
 * watermarks. With larger batches the rows of the two inputs reach Go input by input, which can
 * change the order in which (key, window) timers were first registered and so the order of
 * blocks that fire at one watermark: there the output between two watermarks is compared as a
 * multiset of rows.
 */
class WindowJoinDifferentialTest {
    /** L(k, rt, v, a), R(k, rt, w, a), ms epoch millis for TIMESTAMP_LTZ row times. */
    static Planned plan(String query, boolean ferry, int batchSize, String zone) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        tEnv.getConfig().set(FerryOptions.BATCH_SIZE, batchSize);
        tEnv.getConfig().set(FerryOptions.BATCH_MAX_DELAY, Duration.ofHours(1));
        if (zone != null) {
            tEnv.getConfig().set("table.local-time-zone", zone);
        }
        Ferry.install(tEnv);
        for (String side : List.of("L", "R")) {
            String value = side.equals("L") ? "v" : "w";
            RowTypeInfo type = new RowTypeInfo(
                    new TypeInformation<?>[] {Types.LONG, Types.LOCAL_DATE_TIME, Types.STRING, Types.INT, Types.LONG},
                    new String[] {"k", "rt", value, "a", "ms"});
            DataStream<Row> source = env.fromData(List.of(new Row(5)), type);
            Schema.Builder schema = Schema.newBuilder()
                    .column("k", "BIGINT").column("rt", "TIMESTAMP(3)").column(value, "STRING").column("a", "INT")
                    .column("ms", "BIGINT");
            if (zone != null) {
                schema.columnByExpression("lt", "TO_TIMESTAMP_LTZ(ms, 3)").watermark("lt", "lt");
            } else {
                schema.watermark("rt", "rt");
            }
            tEnv.createTemporaryView(side, tEnv.fromDataStream(source, schema.build()));
        }
        tEnv.toDataStream(tEnv.sqlQuery(query)).print();
        StreamGraph graph = env.getStreamGraph();
        for (StreamNode node : graph.getStreamNodes()) {
            StreamOperatorFactory<?> factory = node.getOperatorFactory();
            if (!(factory instanceof SimpleOperatorFactory)) {
                continue;
            }
            Object op = ((SimpleOperatorFactory<?>) factory).getOperator();
            if (op instanceof WindowJoinOperator || op instanceof FerryWindowJoinOperator) {
                assertEquals(ferry, op instanceof FerryWindowJoinOperator, "planned operator " + op);
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
                return new Planned(operator, left, right, ((RowDataKeySelector) left).getProducedType(), in1, in2, out);
            }
        }
        throw new AssertionError("no window join in the plan");
    }

    static String tvf(String table, String window, boolean ltz) {
        return "(SELECT * FROM TABLE(" + window.replace("T,", table + ",").replace("TIME", ltz ? "lt" : "rt") + "))";
    }

    static final String TUMBLE = "TUMBLE(TABLE T, DESCRIPTOR(TIME), INTERVAL '10' SECOND)";
    static final String HOP = "HOP(TABLE T, DESCRIPTOR(TIME), INTERVAL '5' SECOND, INTERVAL '10' SECOND)";
    static final String CUMULATE = "CUMULATE(TABLE T, DESCRIPTOR(TIME), INTERVAL '5' SECOND, INTERVAL '15' SECOND)";

    /** The fields of one side, the time attributes cast to plain timestamps (a sink takes one rowtime at most). */
    static String fields(String t, String value, boolean ltz) {
        String cast = ltz ? "TIMESTAMP_LTZ(3)" : "TIMESTAMP(3)";
        return t + ".k, CAST(" + t + ".rt AS TIMESTAMP(3)), " + t + "." + value + ", " + t + ".a, " + t + ".ms, "
                + (ltz ? "CAST(" + t + ".lt AS " + cast + "), " : "") + t + ".window_start, " + t + ".window_end, CAST("
                + t + ".window_time AS " + cast + ")";
    }

    static String query(String joinType, String window, String extra, boolean ltz) {
        if (joinType.equals("SEMI") || joinType.equals("ANTI")) {
            return "SELECT " + fields("L", "v", ltz) + " FROM " + tvf("L", window, ltz) + " L WHERE " + (joinType.equals("ANTI") ? "NOT " : "")
                    + "EXISTS (SELECT * FROM " + tvf("R", window, ltz) + " R WHERE L.window_start = R.window_start"
                    + " AND L.window_end = R.window_end AND L.k = R.k" + extra + ")";
        }
        return "SELECT " + fields("L", "v", ltz) + ", " + fields("R", "w", ltz) + " FROM " + tvf("L", window, ltz) + " L " + joinType + " JOIN " + tvf("R", window, ltz)
                + " R ON L.window_start = R.window_start AND L.window_end = R.window_end AND L.k = R.k" + extra;
    }

    /**
     * A random stream of rows as the window TVF delivers them: window ends on a 5 s grid around
     * the watermarks (late rows included), window_start 10 s before, the other time columns 1 ms
     * before the end; 20 % NULL keys; watermarks advancing per input.
     *
     * @param windowEnd the window_end column of each input (from the planned spec)
     * @param localShift milliseconds from the watermark's clock to the window ends' local clock
     */
    static List<Step> steps(long seed, int n, Planned p, int[] windowEnd, long origin, long localShift) {
        Random r = new Random(seed);
        List<Step> steps = new ArrayList<>();
        long[] wm = {origin, origin};
        int keys = 2 + r.nextInt(6);
        for (int i = 0; i < n; i++) {
            int x = r.nextInt(100);
            if (x < 84) {
                int input = x < 42 ? 1 : 2;
                RowType type = input == 1 ? p.leftType() : p.rightType();
                long local = Math.min(wm[0], wm[1]) + localShift;
                long end = Math.floorDiv(local, 5000) * 5000 + 5000L * (r.nextInt(5) - 1);
                GenericRowData row = new GenericRowData(type.getFieldCount());
                boolean keySet = false;
                for (int f = 0; f < type.getFieldCount(); f++) {
                    LogicalTypeRoot root = type.getTypeAt(f).getTypeRoot();
                    if (f == windowEnd[input - 1]) {
                        row.setField(f, TimestampData.fromEpochMillis(end));
                    } else if (f == windowEnd[input - 1] - 1) {
                        row.setField(f, TimestampData.fromEpochMillis(end - 10_000));
                    } else if (root == LogicalTypeRoot.BIGINT && !keySet) {
                        keySet = true;
                        row.setField(f, r.nextInt(5) == 0 ? null : (long) r.nextInt(keys));
                    } else if (root == LogicalTypeRoot.BIGINT) {
                        row.setField(f, end - 1 - localShift);
                    } else if (root == LogicalTypeRoot.TIMESTAMP_WITHOUT_TIME_ZONE) {
                        row.setField(f, TimestampData.fromEpochMillis(end - 1));
                    } else if (root == LogicalTypeRoot.TIMESTAMP_WITH_LOCAL_TIME_ZONE) {
                        row.setField(f, TimestampData.fromEpochMillis(end - 1 - localShift));
                    } else if (root == LogicalTypeRoot.VARCHAR) {
                        row.setField(f, r.nextInt(9) == 0 ? null
                                : StringData.fromString(r.nextInt(3) == 0 ? "x" : (input == 1 ? "l" : "r") + i));
                    } else if (root == LogicalTypeRoot.INTEGER) {
                        row.setField(f, r.nextInt(8) == 0 ? null : r.nextInt(4));
                    } else {
                        throw new AssertionError("field " + f + " of type " + type.getTypeAt(f));
                    }
                }
                steps.add(new Step('r', input, row, end));
            } else if (x < 98) {
                int input = r.nextInt(2);
                wm[input] += r.nextInt(7000);
                steps.add(new Step('w', input + 1, null, wm[input]));
            } else {
                steps.add(new Step('s', 0, null, 0));
            }
        }
        steps.add(new Step('w', 1, null, Long.MAX_VALUE));
        steps.add(new Step('w', 2, null, Long.MAX_VALUE));
        return steps;
    }

    /** The output between watermarks (and restores) sorted: a multiset per segment. */
    static List<String> segmentsSorted(List<String> out) {
        List<String> sorted = new ArrayList<>();
        int from = 0;
        for (int i = 0; i <= out.size(); i++) {
            if (i == out.size() || !out.get(i).startsWith("+")) {
                List<String> seg = new ArrayList<>(out.subList(from, i));
                Collections.sort(seg);
                sorted.addAll(seg);
                if (i < out.size()) {
                    sorted.add(out.get(i));
                }
                from = i + 1;
            }
        }
        return sorted;
    }

    static void check(String joinType, String window, String extra, String zone, long origin, long localShift, int seeds)
            throws Exception {
        String query = query(joinType, window, extra, zone != null);
        Planned stock = plan(query, false, 1, zone);
        for (int batch : new int[] {1, 1024}) {
            Planned ferry = plan(query, true, batch, zone);
            assertInstanceOf(FerryWindowJoinOperator.class, ferry.operator());
            assertEquals(stock.leftType(), ferry.leftType());
            assertEquals(stock.rightType(), ferry.rightType());
            WindowJoinSpec spec = ((FerryWindowJoinOperator) ferry.operator()).spec();
            int[] ends = {spec.leftWindowEndIndex(), spec.rightWindowEndIndex()};
            for (long seed = 0; seed < seeds; seed++) {
                List<Step> steps = steps(seed * 131 + batch, 500, stock, ends, origin, localShift);
                List<String> want = run(stock, steps);
                List<String> got = run(ferry, steps);
                String what = query + ", seed " + seed + ", batch " + batch;
                if (batch == 1) {
                    assertSame(want, got, what);
                } else {
                    assertSame(segmentsSorted(want), segmentsSorted(got), what);
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"INNER", "LEFT", "RIGHT", "FULL", "SEMI", "ANTI"})
    void tumblingMatchesFlinks(String joinType) throws Exception {
        check(joinType, TUMBLE, "", null, 0, 0, 8);
    }

    @ParameterizedTest
    @ValueSource(strings = {"LEFT", "FULL", "ANTI"})
    void hopAndCumulateMatchFlinks(String joinType) throws Exception {
        check(joinType, HOP, "", null, 0, 0, 4);
        check(joinType, CUMULATE, "", null, 0, 0, 4);
    }

    /** A residual condition (SEMI: evaluated until the first match) and IS NOT DISTINCT FROM keys. */
    @ParameterizedTest
    @ValueSource(strings = {"INNER", "FULL", "SEMI", "ANTI"})
    void conditionsMatchFlinks(String joinType) throws Exception {
        check(joinType, TUMBLE, " AND L.a >= R.a", null, 0, 0, 4);
    }

    /** A residual condition only Flink's generated code evaluates: functions, LIKE, OR over NULLs. */
    @ParameterizedTest
    @ValueSource(strings = {"INNER", "LEFT", "RIGHT", "FULL"})
    void generatedConditionsMatchFlinks(String joinType) throws Exception {
        check(joinType, TUMBLE, " AND (UPPER(L.v) LIKE 'L1%' OR R.w = 'x' OR CHAR_LENGTH(L.v) > L.a)", null, 0, 0, 3);
    }

    /**
     * TIMESTAMP_LTZ windows in America/Los_Angeles across both DST transitions of 2024: window ends
     * are local wall-clock times, timers at window end - 1 shifted through the zone.
     */
    @ParameterizedTest
    @ValueSource(strings = {"2024-03-10T09:58:00", "2024-11-03T08:58:00"})
    void daylightSavingTimeMatchesFlinks(String utc) throws Exception {
        // the watermarks pass the transition (10:00 and 09:00 UTC) a couple of minutes in; window
        // ends on either offset's local clock, so some fall into the gap or the overlap
        long origin = LocalDateTime.parse(utc).toInstant(ZoneOffset.UTC).toEpochMilli();
        check("FULL", TUMBLE, "", "America/Los_Angeles", origin, -8 * 3_600_000L, 6);
        check("LEFT", TUMBLE, "", "America/Los_Angeles", origin, -7 * 3_600_000L, 6);
        check("LEFT", TUMBLE, "", "Asia/Shanghai", origin, 8 * 3_600_000L, 2);
    }

    /** Late rows are counted per side as Flink counts them ({@code left/rightNumLateRecordsDropped}). */
    @Test
    void lateRowsAreCountedAsInFlink() throws Exception {
        String query = query("LEFT", TUMBLE, "", false);
        Planned stock = plan(query, false, 1, null);
        Planned ferry = plan(query, true, 16, null);
        WindowJoinSpec spec = ((FerryWindowJoinOperator) ferry.operator()).spec();
        int[] ends = {spec.leftWindowEndIndex(), spec.rightWindowEndIndex()};
        List<Step> steps = new ArrayList<>(steps(7, 800, stock, ends, 0, 0));
        steps.removeIf(s -> s.kind() == 's');
        long[] want = lateCounts(stock, steps);
        long[] got = lateCounts(ferry, steps);
        assertTrue(want[0] > 10 && want[1] > 10, "too few late rows: " + want[0] + ", " + want[1]);
        assertEquals(want[0], got[0], "left late rows");
        assertEquals(want[1], got[1], "right late rows");
    }

    /** Runs the steps and reads the operator's late-row counters (Flink's through its helper). */
    static long[] lateCounts(Planned p, List<Step> steps) throws Exception {
        RowDataSerializer left = new RowDataSerializer(p.leftType());
        RowDataSerializer right = new RowDataSerializer(p.rightType());
        var h = IntervalJoinDifferentialTest.harness(p, null);
        for (Step s : steps) {
            if (s.kind() == 'r') {
                if (s.input() == 1) {
                    h.processElement1(new StreamRecord<>(left.toBinaryRow(s.row()).copy()));
                } else {
                    h.processElement2(new StreamRecord<>(right.toBinaryRow(s.row()).copy()));
                }
            } else if (s.input() == 1) {
                h.processWatermark1(new Watermark(s.time()));
            } else {
                h.processWatermark2(new Watermark(s.time()));
            }
        }
        Object op = h.getOperator();
        long[] counts = new long[2];
        if (op instanceof FerryWindowJoinOperator f) {
            counts[0] = f.lateRecordsDropped(0);
            counts[1] = f.lateRecordsDropped(1);
        } else {
            Field helperField = WindowJoinOperator.class.getDeclaredField("helper");
            helperField.setAccessible(true);
            WindowJoinHelper helper = (WindowJoinHelper) helperField.get(op);
            counts[0] = helper.getLeftLateRecordsDroppedRate().getCount();
            counts[1] = helper.getRightLateRecordsDroppedRate().getCount();
        }
        h.close();
        return counts;
    }

    @Test
    void nullSafeKeysMatchFlinks() throws Exception {
        String query = query("FULL", TUMBLE, "", false).replace("L.k = R.k", "L.k IS NOT DISTINCT FROM R.k");
        Planned stock = plan(query, false, 1, null);
        Planned ferry = plan(query, true, 1, null);
        WindowJoinSpec spec = ((FerryWindowJoinOperator) ferry.operator()).spec();
        int[] ends = {spec.leftWindowEndIndex(), spec.rightWindowEndIndex()};
        for (long seed = 0; seed < 4; seed++) {
            List<Step> steps = steps(seed, 500, stock, ends, 0, 0);
            assertSame(run(stock, steps), run(ferry, steps), "IS NOT DISTINCT FROM, seed " + seed);
        }
    }
}
