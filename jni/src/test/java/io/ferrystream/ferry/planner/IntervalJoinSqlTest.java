package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.intervaljoin.IntervalJoinSpec;

import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.CloseableIterator;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Interval joins in SQL on a MiniCluster of two TaskManagers at parallelism 4, Ferry off and on.
 * Two sources feed the join's hash exchanges; how the two inputs interleave at a subtask depends
 * on timing, so the results are compared as multisets. The watermarks lag the data by an hour,
 * longer than the data spans, so no row is late and every pair within the bounds joins whatever
 * the interleaving: the multiset is the same in every run, pads included (they come with the
 * final watermark).
 */
class IntervalJoinSqlTest {
    @RegisterExtension
    static final MiniClusterExtension CLUSTER = MiniClusters.twoByTwo();

    static final int ROWS = 3000;

    /** (k BIGINT with NULLs, rt TIMESTAMP(3), v STRING, a INT with NULLs), row times spread over 20 minutes. */
    static List<Row> rows(int salt, boolean manyNulls) {
        List<Row> rows = new ArrayList<>();
        for (int id = 0; id < ROWS; id++) {
            long t = ((long) id * 7919 * (salt + 3)) % 1_200_000L;
            boolean nullKey = manyNulls ? (id * 7 + salt) % 10 < 3 : id % 37 == 5;
            rows.add(Row.of(
                    nullKey ? null : (long) ((id * (31 + salt)) % 97),
                    LocalDateTime.ofEpochSecond(t / 1000, (int) (t % 1000) * 1_000_000, ZoneOffset.UTC),
                    (salt == 0 ? "l" : "r") + id,
                    id % 13 == 7 ? null : (id * (7 + salt)) % 23 - 11,
                    1_700_000_000_000L + t));
        }
        return rows;
    }

    /**
     * @param ltz the row time is {@code lt}, a TIMESTAMP_LTZ(3) ({@code TO_TIMESTAMP_LTZ(ms, 3)}), in
     *     the session time zone Asia/Shanghai; otherwise {@code rt}, a TIMESTAMP(3)
     */
    static List<String> run(boolean ferry, String query, boolean ltz) throws Exception {
        return run(ferry, query, ltz, false, false);
    }

    /**
     * @param manyNulls 30 % of the rows have a NULL key (else 1 in 37)
     * @param emitNullKeys {@code ferry.join.null-key.emit-immediately}
     */
    static List<String> run(boolean ferry, String query, boolean ltz, boolean manyNulls, boolean emitNullKeys) throws Exception {
        StreamTableEnvironment tEnv = env(ferry, ltz, manyNulls, emitNullKeys);
        String plan = tEnv.explainSql(query);
        assertTrue(plan.contains(ferry ? "ferry=[native]" : "ferry=[disabled"), plan);
        long opened = Ferry.nativeOperatorsOpened(IntervalJoinSpec.KIND);
        List<String> rows = new ArrayList<>();
        try (CloseableIterator<Row> it = tEnv.executeSql(query).collect()) {
            it.forEachRemaining(r -> {
                assertEquals(RowKind.INSERT, r.getKind());
                rows.add(r.toString());
            });
        }
        assertEquals(ferry ? 4 : 0, Ferry.nativeOperatorsOpened(IntervalJoinSpec.KIND) - opened, "native subtasks opened");
        rows.sort(null);
        return rows;
    }

    /** The table environment with the inputs L and R registered. */
    static StreamTableEnvironment env(boolean ferry, boolean ltz, boolean manyNulls, boolean emitNullKeys) {
        return env(ferry, ltz, manyNulls, emitNullKeys, false);
    }

    /**
     * @param throttled each source pauses 1 ms every 20 rows, so its rows arrive over about 150 ms
     *     and processing-time timers of a 1 ms delay fire between a row and its later matches
     */
    static StreamTableEnvironment env(boolean ferry, boolean ltz, boolean manyNulls, boolean emitNullKeys, boolean throttled) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(4);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
        tEnv.getConfig().set("table.exec.resource.default-parallelism", "4");
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        tEnv.getConfig().set(FerryOptions.BATCH_SIZE, 50);
        tEnv.getConfig().set(FerryOptions.JOIN_NULL_KEY_EMIT_IMMEDIATELY, emitNullKeys);
        if (ltz) {
            tEnv.getConfig().set("table.local-time-zone", "Asia/Shanghai");
        }
        Ferry.install(tEnv);
        for (String side : List.of("L", "R")) {
            TypeInformation<Row> type = Types.ROW_NAMED(new String[] {"k", "rt", "v", "a", "ms"}, Types.LONG, Types.LOCAL_DATE_TIME,
                    Types.STRING, Types.INT, Types.LONG);
            DataStream<Row> source = env.fromData(rows(side.equals("L") ? 0 : 1, manyNulls), type);
            if (throttled) {
                source = source.map(new Throttle()).returns(type).setParallelism(1);
            }
            tEnv.createTemporaryView(side, tEnv.fromDataStream(source, Schema.newBuilder()
                    .column("k", "BIGINT").column("rt", "TIMESTAMP(3)").column("v", "STRING").column("a", "INT")
                    .column("ms", "BIGINT").columnByExpression("lt", "TO_TIMESTAMP_LTZ(ms, 3)").columnByExpression("pt", "PROCTIME()")
                    .watermark(ltz ? "lt" : "rt", (ltz ? "lt" : "rt") + " - INTERVAL '1' HOUR").build()));
        }
        return tEnv;
    }

    @ParameterizedTest
    @ValueSource(strings = {"INNER", "LEFT", "RIGHT", "FULL"})
    void resultsMatchFlinks(String joinType) throws Exception {
        check(joinType, "");
    }

    /** Residual conditions, evaluated natively (three-valued logic: NULL rejects a pair). */
    @ParameterizedTest
    @ValueSource(strings = {
        "INNER|(L.v > R.v OR L.a > R.a)",
        "LEFT|(L.v <> R.v OR R.a IS NULL)",
        "RIGHT|L.a + 1 >= R.a",
        "FULL|NOT (L.a < R.a) AND L.v < R.v",
    })
    void residualConditionsMatchFlinks(String joinAndCondition) throws Exception {
        String[] parts = joinAndCondition.split("\\|");
        check(parts[0], " AND " + parts[1]);
    }

    static void check(String joinType, String condition) throws Exception {
        String query = "SELECT L.k, CAST(L.rt AS TIMESTAMP(3)), L.v, L.a, R.k, CAST(R.rt AS TIMESTAMP(3)), R.v, R.a FROM L "
                + joinType + " JOIN R ON L.k = R.k AND R.rt BETWEEN L.rt - INTERVAL '5' SECOND AND L.rt + INTERVAL '10' SECOND"
                + condition;
        compare(joinType, query, false);
    }

    /**
     * TIMESTAMP_LTZ row times: the join compares them as epoch milliseconds, as TIMESTAMP ones; the
     * session time zone only shows in what the query makes of them after the join.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INNER", "FULL"})
    void localZonedRowTimesMatchFlinks(String joinType) throws Exception {
        String query = "SELECT L.k, L.lt, CAST(L.lt AS STRING), L.v, R.k, R.lt, R.v FROM L " + joinType
                + " JOIN R ON L.k = R.k AND R.lt BETWEEN L.lt - INTERVAL '5' SECOND AND L.lt + INTERVAL '10' SECOND";
        compare(joinType, query, true);
    }

    /**
     * Processing-time joins: which rows meet depends on when they arrive, so the bounds (an hour
     * each way) are wider than the whole run, and every pair of rows of one key joins whatever the
     * timing; no cleanup timer comes due during the run, and none fires at the end of the bounded
     * input (Flink quiesces its processing-time service; Ferry's timers fire through the same
     * service), so no row is padded, in Flink as in Ferry. The order is nondeterministic: the
     * results are compared as multisets.
     */
    @ParameterizedTest
    @ValueSource(strings = {"INNER", "LEFT", "FULL"})
    void processingTimeMatchesFlinks(String joinType) throws Exception {
        String query = "SELECT L.k, L.v, L.a, R.k, R.v, R.a FROM L " + joinType
                + " JOIN R ON L.k = R.k AND R.pt BETWEEN L.pt - INTERVAL '1' HOUR AND L.pt + INTERVAL '1' HOUR"
                + " AND L.a <= R.a";
        List<String> stock = run(false, query, false);
        List<String> ferry = run(true, query, false);
        assertTrue(stock.size() > ROWS / 8, "stock produced " + stock.size() + " rows");
        assertTrue(stock.stream().noneMatch(r -> r.startsWith("+I[null, null, null,") || r.endsWith("null, null, null]")),
                "Flink padded a row");
        assertEquals(stock.size(), ferry.size(), "result size");
        assertEquals(stock, ferry);
    }

    static void compare(String joinType, String query, boolean ltz) throws Exception {
        List<String> stock = run(false, query, ltz);
        List<String> ferry = run(true, query, ltz);
        assertTrue(stock.size() > ROWS / 8, "stock produced " + stock.size() + " rows");
        if (!joinType.equals("INNER")) {
            assertTrue(stock.stream().anyMatch(r -> r.contains("null, null, null, null")), "no padded row");
        }
        assertEquals(stock.size(), ferry.size(), "result size");
        assertEquals(stock, ferry);
    }

    /**
     * 30 % NULL keys, with a composite key whose second part is null-safe: Flink's results, Ferry
     * on, with and without {@code ferry.join.null-key.emit-immediately} (which pads the NULL-key
     * rows earlier, the same rows).
     */
    @ParameterizedTest
    @ValueSource(strings = {"INNER", "LEFT", "RIGHT", "FULL"})
    void nullKeysMatchFlinks(String joinType) throws Exception {
        String query = "SELECT L.k, CAST(L.rt AS TIMESTAMP(3)), L.v, L.a, R.k, CAST(R.rt AS TIMESTAMP(3)), R.v, R.a FROM L "
                + joinType + " JOIN R ON L.k = R.k AND L.a IS NOT DISTINCT FROM R.a"
                + " AND R.rt BETWEEN L.rt - INTERVAL '30' SECOND AND L.rt + INTERVAL '60' SECOND";
        List<String> stock = run(false, query, false, true, false);
        assertTrue(stock.size() > 100, "stock produced " + stock.size() + " rows");
        if (!joinType.equals("INNER")) {
            assertTrue(stock.stream().anyMatch(r -> r.startsWith("+I[null, ") || r.contains(", null, null, null, null]")),
                    "no NULL-key row padded");
        }
        assertEquals(stock, run(true, query, false, true, false), "Ferry");
        assertEquals(stock, run(true, query, false, true, true), "Ferry, emitting NULL keys on arrival");
    }

    /**
     * The {@code EARLY_FIRE} hint (Flink 2.3 cannot run it): pads come early and are retracted
     * ({@code -U}) and replaced ({@code +U}) when a match arrives; applied to a table, the
     * changelog ends as Flink's result without the hint, row for row. No row is late (the
     * watermarks lag by an hour), so that holds whatever the timing. With row-time early fire the
     * pads come with the final watermark; with processing-time early fire (1 ms after arrival)
     * they come during the run, and the matches arriving later correct them.
     */
    @ParameterizedTest
    @ValueSource(strings = {"LEFT|rowtime", "RIGHT|proctime", "FULL|proctime", "FULL|rowtime"})
    void earlyFireMaterializesToFlinksResult(String joinAndMode) throws Exception {
        String[] parts = joinAndMode.split("\\|");
        String join = " L.k, CAST(L.rt AS TIMESTAMP(3)), L.v, L.a, R.k, CAST(R.rt AS TIMESTAMP(3)), R.v, R.a FROM L "
                + parts[0] + " JOIN R ON L.k = R.k AND R.rt BETWEEN L.rt - INTERVAL '5' SECOND AND L.rt + INTERVAL '10' SECOND";
        List<String> stock = run(false, "SELECT" + join, false);
        StreamTableEnvironment tEnv = env(true, false, false, false, true);
        String query = "SELECT /*+ EARLY_FIRE('delay'='1ms', 'time-mode'='" + parts[1] + "') */" + join;
        assertTrue(tEnv.explainSql(query).contains("earlyFireDelay=[1], earlyFireTimeMode=[" + parts[1].toUpperCase()
                + "], ferry=[native]"));
        java.util.Map<String, Integer> table = new java.util.HashMap<>();
        java.util.Map<RowKind, Integer> kinds = new java.util.EnumMap<>(RowKind.class);
        try (CloseableIterator<Row> it = tEnv.executeSql(query).collect()) {
            it.forEachRemaining(r -> {
                RowKind kind = r.getKind();
                kinds.merge(kind, 1, Integer::sum);
                r.setKind(RowKind.INSERT);
                String row = r.toString();
                if (kind == RowKind.UPDATE_BEFORE || kind == RowKind.DELETE) {
                    assertTrue(table.merge(row, -1, Integer::sum) >= 0, "retracted a row never emitted: " + row);
                } else {
                    table.merge(row, 1, Integer::sum);
                }
            });
        }
        List<String> materialized = new ArrayList<>();
        table.forEach((row, n) -> {
            for (int i = 0; i < n; i++) {
                materialized.add(row);
            }
        });
        materialized.sort(null);
        assertEquals(stock, materialized);
        assertEquals(kinds.getOrDefault(RowKind.UPDATE_BEFORE, 0), kinds.getOrDefault(RowKind.UPDATE_AFTER, 0), kinds.toString());
        assertEquals(null, kinds.get(RowKind.DELETE), kinds.toString());
        if (parts[1].equals("proctime")) {
            assertTrue(kinds.getOrDefault(RowKind.UPDATE_BEFORE, 0) > 0, "no early pad was corrected: " + kinds);
        }
    }

    /** Passes rows through, sleeping 1 ms after every 20th. */
    static final class Throttle implements MapFunction<Row, Row> {
        private long seen;

        @Override
        public Row map(Row row) throws InterruptedException {
            if (++seen % 20 == 0) {
                Thread.sleep(1);
            }
            return row;
        }
    }
}
