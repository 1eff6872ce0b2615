package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.windowjoin.WindowJoinSpec;

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

import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Window joins in SQL (two window TVFs joined on window_start, window_end and a key) on a
 * MiniCluster of two TaskManagers at parallelism 4, Ferry off and on; the results are compared as
 * multisets. The watermarks lag the data by an hour, longer than it spans, so no row is late
 * whatever the interleaving and every window fires with the final watermark: the multiset is the
 * same in every run. NULL keys (30 % of the rows with {@code manyNulls}) are padded, emitted by
 * ANTI or dropped as Flink does.
 */
class WindowJoinSqlTest {
    @RegisterExtension
    static final MiniClusterExtension CLUSTER = MiniClusters.twoByTwo();

    static List<String> run(boolean ferry, String query, boolean ltz, boolean emitNullKeys) throws Exception {
        return run(ferry, query, ltz, emitNullKeys, false);
    }

    static List<String> run(boolean ferry, String query, boolean ltz, boolean emitNullKeys, boolean objectReuse)
            throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(4);
        if (objectReuse) {
            env.getConfig().enableObjectReuse();
        }
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
        tEnv.getConfig().set("table.exec.resource.default-parallelism", "4");
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        tEnv.getConfig().set(FerryOptions.BATCH_SIZE, 50);
        tEnv.getConfig().set(FerryOptions.JOIN_NULL_KEY_EMIT_IMMEDIATELY, emitNullKeys);
        if (ltz) {
            tEnv.getConfig().set("table.local-time-zone", "America/Los_Angeles");
        }
        Ferry.install(tEnv);
        for (String side : List.of("L", "R")) {
            DataStream<Row> source = env.fromData(IntervalJoinSqlTest.rows(side.equals("L") ? 0 : 1, true),
                    Types.ROW_NAMED(new String[] {"k", "rt", "v", "a", "ms"}, Types.LONG, Types.LOCAL_DATE_TIME,
                            Types.STRING, Types.INT, Types.LONG));
            tEnv.createTemporaryView(side + "0", tEnv.fromDataStream(source, Schema.newBuilder()
                    .column("k", "BIGINT").column("rt", "TIMESTAMP(3)").column("v", "STRING").column("a", "INT")
                    .column("ms", "BIGINT").columnByExpression("lt", "TO_TIMESTAMP_LTZ(ms, 3)")
                    .watermark(ltz ? "lt" : "rt", (ltz ? "lt" : "rt") + " - INTERVAL '1' HOUR").build()));
        }
        String plan = tEnv.explainSql(query);
        assertTrue(plan.contains(ferry ? "ferry=[native]" : "ferry=[disabled"), plan);
        long opened = Ferry.nativeOperatorsOpened(WindowJoinSpec.KIND);
        List<String> rows = new ArrayList<>();
        try (CloseableIterator<Row> it = tEnv.executeSql(query).collect()) {
            it.forEachRemaining(r -> {
                assertEquals(RowKind.INSERT, r.getKind());
                rows.add(r.toString());
            });
        }
        assertEquals(ferry ? 4 : 0, Ferry.nativeOperatorsOpened(WindowJoinSpec.KIND) - opened, "native subtasks opened");
        rows.sort(null);
        return rows;
    }

    static void compare(String query, boolean ltz, boolean emitNullKeys) throws Exception {
        List<String> flink = run(false, query, ltz, false);
        List<String> ferry = run(true, query, ltz, emitNullKeys);
        assertFalse(flink.isEmpty(), "Flink's result is empty");
        assertEquals(flink.size(), ferry.size(), "row count");
        assertEquals(flink, ferry);
    }

    /**
     * With {@code pipeline.object-reuse} the result is Flink's (with and without reuse). The join's
     * keyed inputs come through a hash exchange, which hands over fresh rows, so this checks the
     * job end to end rather than the operator's copies of reused rows.
     */
    @ParameterizedTest
    @ValueSource(strings = {"LEFT", "FULL"})
    void objectReuseMatchesFlinks(String joinType) throws Exception {
        String query = join(joinType, TUMBLE, " AND L.v <> R.v");
        List<String> flink = run(false, query, false, false, false);
        assertEquals(flink, run(false, query, false, false, true), "Flink with object reuse");
        assertEquals(flink, run(true, query, false, false, true), "Ferry with object reuse");
    }

    private static final String TUMBLE = "TUMBLE(TABLE T, DESCRIPTOR(rt), INTERVAL '10' SECOND)";

    static String join(String joinType, String window, String extra) {
        return "SELECT L.k, L.v, L.a, L.window_start, L.window_end, R.k, R.v, R.a FROM "
                + "(SELECT * FROM TABLE(" + window.replace("T,", "L0,") + ")) L " + joinType + " JOIN "
                + "(SELECT * FROM TABLE(" + window.replace("T,", "R0,") + ")) R "
                + "ON L.window_start = R.window_start AND L.window_end = R.window_end AND L.k = R.k" + extra;
    }

    @ParameterizedTest
    @ValueSource(strings = {"INNER", "LEFT", "RIGHT", "FULL"})
    void tumblingMatchesFlinks(String joinType) throws Exception {
        compare(join(joinType, TUMBLE, ""), false, false);
    }

    /** HOP and CUMULATE windows, a residual condition, IS NOT DISTINCT FROM keys. */
    @ParameterizedTest
    @ValueSource(strings = {
        "LEFT|HOP(TABLE T, DESCRIPTOR(rt), INTERVAL '5' SECOND, INTERVAL '15' SECOND)|",
        "FULL|CUMULATE(TABLE T, DESCRIPTOR(rt), INTERVAL '5' SECOND, INTERVAL '20' SECOND)|",
        "INNER|" + TUMBLE + "| AND (L.v > R.v OR L.a > R.a)",
        "FULL|" + TUMBLE + "| AND L.a + 1 >= R.a",
    })
    void windowsAndConditionsMatchFlinks(String spec) throws Exception {
        String[] p = spec.split("\\|", -1);
        compare(join(p[0], p[1], p[2]), false, false);
    }

    @ParameterizedTest
    @ValueSource(strings = {"INNER", "FULL"})
    void nullSafeKeysMatchFlinks(String joinType) throws Exception {
        compare(join(joinType, TUMBLE, "").replace("L.k = R.k", "L.k IS NOT DISTINCT FROM R.k"), false, false);
    }

    /** SEMI (IN, EXISTS) and ANTI (NOT EXISTS) window joins. */
    @ParameterizedTest
    @ValueSource(strings = {"EXISTS", "NOT EXISTS"})
    void semiAntiMatchFlinks(String exists) throws Exception {
        String query = "SELECT L.k, L.v, L.window_start, L.window_end FROM (SELECT * FROM TABLE("
                + TUMBLE.replace("T,", "L0,") + ")) L WHERE " + exists + " (SELECT * FROM (SELECT * FROM TABLE("
                + TUMBLE.replace("T,", "R0,") + ")) R WHERE L.window_start = R.window_start AND L.window_end = R.window_end"
                + " AND L.k = R.k)";
        compare(query, false, false);
    }

    /** TIMESTAMP_LTZ windows in a zone with daylight saving time: timers in the shifted zone. */
    @ParameterizedTest
    @ValueSource(strings = {"LEFT", "FULL"})
    void localZonedWindowsMatchFlinks(String joinType) throws Exception {
        compare(join(joinType, TUMBLE.replace("rt", "lt"), ""), true, false);
    }

    /** ferry.join.null-key.emit-immediately: the same multiset once every window fired. */
    @ParameterizedTest
    @ValueSource(strings = {"LEFT", "FULL"})
    void nullKeysEmittedImmediatelyGiveTheSameMultiset(String joinType) throws Exception {
        compare(join(joinType, TUMBLE, ""), false, true);
    }
}
