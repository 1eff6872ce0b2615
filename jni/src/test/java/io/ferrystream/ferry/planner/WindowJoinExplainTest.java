package io.ferrystream.ferry.planner;

import static io.ferrystream.ferry.planner.PlannerTests.ferryTerms;
import static io.ferrystream.ferry.planner.PlannerTests.newTableEnv;
import static io.ferrystream.ferry.planner.PlannerTests.physicalPlan;
import static io.ferrystream.ferry.planner.PlannerTests.withoutFerryTerms;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.flink.table.api.TableEnvironment;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

/** EXPLAIN of window joins with Ferry installed: which run natively, and why the others do not. */
class WindowJoinExplainTest {
    static final String TABLES =
            "CREATE TEMPORARY TABLE %s (k BIGINT, s STRING, rt TIMESTAMP(3), v STRING, bin BYTES, ms BIGINT,"
                    + " lt AS TO_TIMESTAMP_LTZ(ms, 3), pt AS PROCTIME(), WATERMARK FOR rt AS rt) WITH ('connector' = 'datagen')";
    static final String LTZ_TABLES =
            "CREATE TEMPORARY TABLE %s (k BIGINT, s STRING, v STRING, ms BIGINT, lt AS TO_TIMESTAMP_LTZ(ms, 3),"
                    + " WATERMARK FOR lt AS lt) WITH ('connector' = 'datagen')";

    static TableEnvironment env(boolean ferry, Map<String, String> options) {
        TableEnvironment tEnv = newTableEnv(ferry);
        options.forEach((k, v) -> tEnv.getConfig().set(k, v));
        for (String side : List.of("L", "R")) {
            tEnv.executeSql(String.format(TABLES, side));
            tEnv.executeSql(String.format(LTZ_TABLES, side + "2"));
        }
        return tEnv;
    }

    /** A window TVF over table t: TUMBLE, HOP or CUMULATE on the time column. */
    static String tvf(String t, String kind, String time) {
        String w = switch (kind) {
            case "TUMBLE" -> "TUMBLE(TABLE " + t + ", DESCRIPTOR(" + time + "), INTERVAL '10' SECOND)";
            case "HOP" -> "HOP(TABLE " + t + ", DESCRIPTOR(" + time + "), INTERVAL '5' SECOND, INTERVAL '10' SECOND)";
            case "CUMULATE" -> "CUMULATE(TABLE " + t + ", DESCRIPTOR(" + time + "), INTERVAL '5' SECOND, INTERVAL '15' SECOND)";
            default -> throw new IllegalArgumentException(kind);
        };
        return "(SELECT * FROM TABLE(" + w + "))";
    }

    /**
     * A window join of L and R (or L2 and R2 with {@code ltz}) of a join type: INNER, LEFT, RIGHT,
     * FULL, or SEMI / ANTI as EXISTS / NOT EXISTS; {@code keys} replaces the key equality, {@code
     * extra} is appended to the condition.
     */
    static String join(String joinType, String window, boolean ltz, String keys, String extra) {
        String l = tvf(ltz ? "L2" : "L", window, ltz ? "lt" : "rt");
        String r = tvf(ltz ? "R2" : "R", window, ltz ? "lt" : "rt");
        String on = "L.window_start = R.window_start AND L.window_end = R.window_end AND " + keys + extra;
        if (joinType.equals("SEMI") || joinType.equals("ANTI")) {
            return "SELECT L.k, L.v, L.window_end FROM " + l + " L WHERE " + (joinType.equals("ANTI") ? "NOT " : "")
                    + "EXISTS (SELECT * FROM " + r + " R WHERE " + on + ")";
        }
        return "SELECT L.k, L.v, R.v, L.window_end FROM " + l + " L " + joinType + " JOIN " + r + " R ON " + on;
    }

    static String join(String joinType, String extra) {
        return join(joinType, "TUMBLE", false, "L.k = R.k", extra);
    }

    /** The ferry terms of the plan; Ferry changes nothing else in EXPLAIN. */
    static List<String> decisions(String sql, Map<String, String> options) {
        String explained = env(true, options).explainSql(sql);
        assertEquals(env(false, options).explainSql(sql), withoutFerryTerms(explained).stripTrailing() + "\n", sql);
        String plan = physicalPlan(explained);
        assertTrue(plan.contains("WindowJoin("), plan);
        return ferryTerms(plan);
    }

    static List<String> decisions(String sql) {
        return decisions(sql, Map.of());
    }

    @Test
    void everyJoinTypeAndWindowIsNative() {
        for (String type : List.of("INNER", "LEFT", "RIGHT", "FULL", "SEMI", "ANTI")) {
            for (String window : List.of("TUMBLE", "HOP", "CUMULATE")) {
                assertEquals(List.of("native"), decisions(join(type, window, false, "L.k = R.k", "")), type + " " + window);
            }
            assertEquals(List.of("native"), decisions(join(type, "TUMBLE", true, "L.k = R.k", "")), type + " LTZ");
        }
        assertEquals(List.of("native"),
                decisions(join("FULL", "TUMBLE", false, "L.k IS NOT DISTINCT FROM R.k AND L.s = R.s", "")));
        assertEquals(List.of("native"), decisions(join("LEFT", " AND (L.v > R.v OR R.s IS NULL)")));
        // the rows stay in the JVM: any residual condition (Flink's generated code), any field type
        assertEquals(List.of("native"), decisions(join("FULL", " AND L.v LIKE R.v")));
        assertEquals(List.of("native"), decisions(join("INNER", "").replace("SELECT L.k,", "SELECT L.bin, L.k,")));
    }

    @Test
    void fallbacksSayWhy() {
        assertEquals(List.of("left join key bin of type BYTES: BINARY/VARBINARY in a join: not native yet"),
                decisions(join("INNER", "TUMBLE", false, "L.bin = R.bin", "")));
        assertEquals(List.of("disabled by ferry.window-join.enabled=false"),
                decisions(join("INNER", ""), Map.of("ferry.window-join.enabled", "false")));
    }

    /** SESSION windows plan as a window join in Flink 2.3, but stay Flink's. */
    @Test
    void sessionWindowsStayFlinks() {
        String sql = join("LEFT", "").replace(
                        "TUMBLE(TABLE L, DESCRIPTOR(rt), INTERVAL '10' SECOND)", "SESSION(TABLE L PARTITION BY k, DESCRIPTOR(rt), INTERVAL '5' SECOND)")
                .replace("TUMBLE(TABLE R, DESCRIPTOR(rt), INTERVAL '10' SECOND)", "SESSION(TABLE R PARTITION BY k, DESCRIPTOR(rt), INTERVAL '5' SECOND)");
        assertEquals(List.of("SESSION windows: not native (the join keys windows by window_end alone)"), decisions(sql));
    }

    /** Flink rejects a processing-time window join when it translates it; so does Ferry, with Flink's message. */
    @Test
    void processingTimeFailsAsInFlink() {
        String sql = join("INNER", "TUMBLE", false, "L.k = R.k", "").replace("(rt)", "(pt)");
        for (boolean ferry : new boolean[] {false, true}) {
            Exception e = assertThrows(Exception.class, () -> env(ferry, Map.of()).explainSql(sql));
            assertTrue(String.valueOf(e.getMessage()).contains("Processing time Window Join is not supported yet."), e.toString());
        }
    }
}
