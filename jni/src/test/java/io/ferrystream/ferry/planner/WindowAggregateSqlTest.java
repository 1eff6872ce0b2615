package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.windowaggregate.WindowAggregateKind;
import io.ferrystream.ferry.kinds.windowaggregate.WindowAggregateSpec;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Window TVF aggregations in SQL on a MiniCluster of two TaskManagers, Ferry off and on (with the
 * preview switch {@code ferry.window-aggregate.enabled} on and the single-phase plan), at
 * parallelism 1 and 4: TUMBLE, HOP and CUMULATE on a TIMESTAMP row time, and TUMBLE on a
 * TIMESTAMP_LTZ one in a zone with daylight saving. The rows arrive in row-time order behind a
 * bounded watermark (none is late), so the result is the same multiset of +I rows in every run;
 * the order of rows of windows that fire at one watermark depends on when watermarks reach the
 * operator, so the runs are compared as multisets. EXPLAIN: {@code ferry=[native]} when on, no
 * candidate at all when off, and each fallback reason when on.
 */
class WindowAggregateSqlTest {
    @RegisterExtension
    static final MiniClusterExtension CLUSTER = MiniClusters.twoByTwo();

    static final int ROWS = 900;

    /** (k BIGINT with NULLs, v INT with NULLs, d DOUBLE, s STRING with NULLs, rt TIMESTAMP(3), ms BIGINT), row times ascending. */
    static List<Row> rows() {
        List<Row> rows = new ArrayList<>();
        LocalDateTime start = LocalDateTime.of(2024, 3, 8, 22, 0, 0);
        for (int id = 0; id < ROWS; id++) {
            rows.add(Row.of(
                    id % 29 == 3 ? null : (long) ((id * 31) % 13),
                    id % 11 == 2 ? null : (id * 7) % 23 - 11,
                    ((id * 13) % 17) / 4.0,
                    id % 17 == 4 ? null : "s" + ((id * 5) % 7),
                    start.plusNanos(id * 173_000_000L - (id % 3) * 1_000_000L),
                    1_709_935_200_000L + id * 397_000L));
        }
        return rows;
    }

    static StreamTableEnvironment env(boolean ferry, boolean windows, int parallelism, Map<String, String> options) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(parallelism);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
        tEnv.getConfig().set("table.exec.resource.default-parallelism", String.valueOf(parallelism));
        tEnv.getConfig().set("table.optimizer.agg-phase-strategy", "ONE_PHASE");
        tEnv.getConfig().set("table.local-time-zone", "America/New_York");
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        tEnv.getConfig().set(WindowAggregateKind.ENABLED, windows);
        tEnv.getConfig().set(FerryOptions.BATCH_SIZE, 50);
        options.forEach((k, v) -> tEnv.getConfig().set(k, v));
        Ferry.install(tEnv);
        register(env, tEnv);
        return tEnv;
    }

    /** T: row time rt (TIMESTAMP(3)); T2: row time lt (TIMESTAMP_LTZ(3) of ms); both with pt, the processing time. */
    static void register(StreamExecutionEnvironment env, StreamTableEnvironment tEnv) {
        TypeInformation<Row> type = Types.ROW_NAMED(new String[] {"k", "v", "d", "s", "rt", "ms"}, Types.LONG, Types.INT,
                Types.DOUBLE, Types.STRING, Types.LOCAL_DATE_TIME, Types.LONG);
        for (String name : List.of("T", "T2")) {
            DataStream<Row> source = env.fromData(rows(), type).setParallelism(1);
            Schema.Builder schema = Schema.newBuilder()
                    .column("k", "BIGINT").column("v", "INT").column("d", "DOUBLE").column("s", "STRING")
                    .column("rt", "TIMESTAMP(3)").column("ms", "BIGINT")
                    .columnByExpression("lt", "TO_TIMESTAMP_LTZ(ms, 3)")
                    .columnByExpression("pt", "PROCTIME()");
            if (name.equals("T")) {
                schema.watermark("rt", "rt - INTERVAL '1' SECOND");
            } else {
                schema.watermark("lt", "lt - INTERVAL '1' SECOND");
            }
            tEnv.createTemporaryView(name, tEnv.fromDataStream(source, schema.build()));
        }
    }

    /** The WindowAggregate lines of a plan's physical section. */
    static List<String> aggregateLines(String explain) {
        List<String> lines = new ArrayList<>();
        for (String line : PlannerTests.physicalPlan(explain).split("\n")) {
            String l = line.replaceFirst("^[ +\\-:|]*", "");
            if (l.startsWith("WindowAggregate(")) {
                lines.add(l);
            }
        }
        return lines;
    }

    /**
     * The query's rows, sorted; on, every window aggregate is native and opens one operator per
     * subtask (one in all without grouping keys: Flink gathers the rows into one subtask).
     */
    static List<String> run(boolean ferry, int parallelism, String query) throws Exception {
        StreamTableEnvironment tEnv = env(ferry, ferry, parallelism, Map.of());
        String plan = tEnv.explainSql(query);
        List<String> aggs = aggregateLines(plan);
        assertFalse(aggs.isEmpty(), plan);
        for (String agg : aggs) {
            assertTrue(ferry ? agg.contains("ferry=[native]") : !agg.contains("ferry="), plan);
        }
        long opened = Ferry.nativeOperatorsOpened(WindowAggregateSpec.KIND);
        List<String> rows = new ArrayList<>();
        try (CloseableIterator<Row> it = tEnv.executeSql(query).collect()) {
            it.forEachRemaining(r -> rows.add(r.toString()));
        }
        long subtasks = aggs.stream().mapToLong(a -> a.contains("groupBy=[") ? parallelism : 1).sum();
        assertEquals(ferry ? subtasks : 0, Ferry.nativeOperatorsOpened(WindowAggregateSpec.KIND) - opened, "native subtasks opened");
        rows.sort(null);
        return rows;
    }

    static void assertSame(String query) throws Exception {
        for (int p : new int[] {1, 4}) {
            List<String> flink = run(false, p, query);
            assertTrue(flink.size() >= 10, flink.toString());
            assertTrue(flink.stream().allMatch(r -> r.startsWith("+I")), flink.toString());
            assertEquals(flink, run(true, p, query), "parallelism " + p + ": " + query);
        }
    }

    static final Map<String, String> WINDOWS = Map.of(
            "TUMBLE", "TUMBLE(TABLE T, DESCRIPTOR(rt), INTERVAL '10' SECOND)",
            "HOP", "HOP(TABLE T, DESCRIPTOR(rt), INTERVAL '5' SECOND, INTERVAL '15' SECOND)",
            "CUMULATE", "CUMULATE(TABLE T, DESCRIPTOR(rt), INTERVAL '4' SECOND, INTERVAL '20' SECOND, INTERVAL '1' SECOND)");

    @ParameterizedTest
    @ValueSource(strings = {"TUMBLE", "HOP", "CUMULATE"})
    void windows(String window) throws Exception {
        String w = WINDOWS.get(window);
        assertSame("SELECT k, window_start, window_end, COUNT(*), SUM(v), MAX(d), MIN(s), AVG(v), COUNT(v), SUM(d) FROM TABLE(" + w
                + ") GROUP BY k, window_start, window_end");
        assertSame("SELECT window_start, window_end, window_time, MAX(v), MIN(s), SUM(d) FROM TABLE(" + w
                + ") GROUP BY window_start, window_end, window_time");
    }

    /** FIRST_VALUE and LAST_VALUE (Flink's own HOP and CUMULATE refuse them: they have no merge). */
    @Test
    void firstAndLastValue() throws Exception {
        assertSame("SELECT k, window_start, window_end, FIRST_VALUE(s), LAST_VALUE(v), FIRST_VALUE(d) FROM TABLE("
                + WINDOWS.get("TUMBLE") + ") GROUP BY k, window_start, window_end");
    }

    /** TIMESTAMP_LTZ windows of a day in a zone whose clocks change within the data. */
    @Test
    void timestampLtzInADaylightSavingZone() throws Exception {
        assertSame("SELECT k, window_start, window_end, window_time, COUNT(*), SUM(v) FROM TABLE(TUMBLE(TABLE T2, DESCRIPTOR(lt),"
                + " INTERVAL '1' DAY)) GROUP BY k, window_start, window_end, window_time");
        assertSame("SELECT window_start, window_end, COUNT(*), MIN(d) FROM TABLE(HOP(TABLE T2, DESCRIPTOR(lt), INTERVAL '1' HOUR,"
                + " INTERVAL '3' HOUR)) GROUP BY window_start, window_end");
    }

    /**
     * Off by default: Ferry installed, the aggregate is no candidate and the plan is Flink's, nothing
     * counted; the same with the switch false, or Ferry off.
     */
    @Test
    void offByDefaultTheAggregateIsNoCandidate() {
        String query = "SELECT k, window_start, window_end, COUNT(*) FROM TABLE(" + WINDOWS.get("TUMBLE")
                + ") GROUP BY k, window_start, window_end";
        StreamExecutionEnvironment plainEnv = StreamExecutionEnvironment.getExecutionEnvironment();
        StreamTableEnvironment plain = StreamTableEnvironment.create(plainEnv, EnvironmentSettings.inStreamingMode());
        plain.getConfig().set("table.exec.resource.default-parallelism", "1");
        plain.getConfig().set("table.optimizer.agg-phase-strategy", "ONE_PHASE");
        register(plainEnv, plain);
        String flinks = plain.explainSql(query);
        for (Map<String, String> options : List.of(Map.<String, String>of(),
                Map.of(WindowAggregateKind.ENABLED.key(), "false"), Map.of(FerryOptions.ENABLED.key(), "false"))) {
            StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
            StreamTableEnvironment tEnv = StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
            tEnv.getConfig().set("table.exec.resource.default-parallelism", "1");
            tEnv.getConfig().set("table.optimizer.agg-phase-strategy", "ONE_PHASE");
            options.forEach((k, v) -> tEnv.getConfig().set(k, v));
            Ferry.install(tEnv);
            register(env, tEnv);
            long planned = Ferry.nativeNodesPlanned(WindowAggregateSpec.KIND);
            String explain = tEnv.explainSql(query);
            assertFalse(explain.contains("ferry="), explain);
            assertEquals(RegularJoinSqlTest.sourcesUnnumbered(PlannerTests.physicalPlan(flinks)),
                    RegularJoinSqlTest.sourcesUnnumbered(PlannerTests.physicalPlan(explain)), options.toString());
            assertEquals(planned, Ferry.nativeNodesPlanned(WindowAggregateSpec.KIND));
        }
    }

    /**
     * Flink's default two-phase plan (local and global window aggregates) is not claimed yet: on,
     * the plan still has no candidate.
     */
    @Test
    void theTwoPhasePlanIsNotClaimed() {
        Map<String, String> auto = new HashMap<>();
        auto.put("table.optimizer.agg-phase-strategy", "AUTO");
        StreamTableEnvironment tEnv = env(true, true, 1, auto);
        String plan = tEnv.explainSql("SELECT k, window_start, window_end, COUNT(*), SUM(v) FROM TABLE(" + WINDOWS.get("TUMBLE")
                + ") GROUP BY k, window_start, window_end");
        assertTrue(plan.contains("LocalWindowAggregate(") && plan.contains("GlobalWindowAggregate("), plan);
        assertFalse(plan.contains("ferry="), plan);
    }

    /** The fallback reasons when the kind is on. */
    @Test
    void fallbackReasons() {
        String tumbleGroup = ") GROUP BY k, window_start, window_end";
        assertEquals("processing-time windows: not native yet", reason(Map.of(),
                "SELECT k, window_start, window_end, COUNT(*) FROM TABLE(TUMBLE(TABLE T, DESCRIPTOR(pt), INTERVAL '10' SECOND)"
                        + tumbleGroup));
        assertEquals("SessionWindowSpec (unsliced windows, UnsliceSyncStateWindowAggProcessor): not native yet", reason(Map.of(),
                "SELECT k, window_start, window_end, COUNT(*) FROM TABLE(SESSION(TABLE T PARTITION BY k, DESCRIPTOR(rt),"
                        + " INTERVAL '10' SECOND)" + tumbleGroup));
        assertEquals("async state (table.exec.async-state.enabled: the async-state window aggregate): not native yet",
                reason(Map.of("table.exec.async-state.enabled", "true"),
                        "SELECT k, window_start, window_end, COUNT(*) FROM TABLE(" + WINDOWS.get("TUMBLE") + tumbleGroup));
        assertTrue(reason(Map.of(), "SELECT k, window_start, window_end, COUNT(DISTINCT v) FROM TABLE(" + WINDOWS.get("TUMBLE")
                + tumbleGroup).contains("DISTINCT in a window aggregate: not native yet"));
        assertTrue(reason(Map.of(), "SELECT k, window_start, window_end, SUM(v) FILTER (WHERE v > 0) FROM TABLE("
                + WINDOWS.get("TUMBLE") + tumbleGroup).contains("FILTER in a window aggregate: not native yet"));
        assertTrue(reason(Map.of("table.local-time-zone", "Asia/Kolkata"), "SELECT k, window_start, window_end, COUNT(*) FROM TABLE("
                + "TUMBLE(TABLE T2, DESCRIPTOR(lt), INTERVAL '1' HOUR)" + tumbleGroup).contains(
                        "TIMESTAMP_LTZ windows in time zone Asia/Kolkata at offset 19800000 ms, not a multiple of the 3600000 ms slice"));
        assertEquals("aggregate function COLLECT: not native yet", reason(Map.of(),
                "SELECT k, window_start, window_end, COLLECT(v) FROM TABLE(" + WINDOWS.get("TUMBLE") + tumbleGroup));
        // a window aggregate over the windows of another: the second groups by the window columns
        StreamTableEnvironment tEnv = env(true, true, 1, Map.of());
        String plan = tEnv.explainSql("SELECT window_start, window_end, SUM(c) FROM (SELECT k, window_start, window_end,"
                + " COUNT(*) AS c FROM TABLE(" + WINDOWS.get("TUMBLE") + tumbleGroup + ") GROUP BY window_start, window_end");
        List<String> aggs = aggregateLines(plan);
        assertEquals(2, aggs.size(), plan);
        assertTrue(aggs.stream().anyMatch(a -> a.contains("ferry=[native]")), plan);
        assertTrue(aggs.stream().anyMatch(a -> a.contains("ferry=[windowing WindowAttachedWindowingStrategy (the window columns"
                + " of an earlier window TVF or a local window aggregate): not native yet]")), plan);
    }

    /** The ferry term of the query's one WindowAggregate, the kind on. */
    static String reason(Map<String, String> options, String query) {
        StreamTableEnvironment tEnv = env(true, true, 1, options);
        String plan = tEnv.explainSql(query);
        List<String> aggs = aggregateLines(plan);
        assertEquals(1, aggs.size(), plan);
        List<String> terms = PlannerTests.ferryTerms(aggs.get(0));
        assertEquals(1, terms.size(), plan);
        return terms.get(0);
    }
}
