package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.kinds.intervaljoin.IntervalJoinSpec;

import static io.ferrystream.ferry.planner.PlannerTests.ferryTerms;
import static io.ferrystream.ferry.planner.PlannerTests.newTableEnv;
import static io.ferrystream.ferry.planner.PlannerTests.physicalPlan;
import static io.ferrystream.ferry.planner.PlannerTests.withoutFerryTerms;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.flink.table.api.TableEnvironment;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

/** EXPLAIN of interval joins with Ferry installed: which run natively, and why the others do not. */
class IntervalJoinExplainTest {
    private static final String TABLES =
            "CREATE TEMPORARY TABLE %s (k BIGINT, s STRING, rt TIMESTAMP(3), v STRING, ltz TIMESTAMP_LTZ(3), bin BYTES,"
                    + " pt AS PROCTIME(), WATERMARK FOR rt AS rt) WITH ('connector' = 'datagen')";
    /** The same with a TIMESTAMP_LTZ row time lt. */
    private static final String LTZ_TABLES =
            "CREATE TEMPORARY TABLE %s (k BIGINT, ms BIGINT, v STRING, lt AS TO_TIMESTAMP_LTZ(ms, 3),"
                    + " WATERMARK FOR lt AS lt - INTERVAL '1' SECOND) WITH ('connector' = 'datagen')";

    private static TableEnvironment env(boolean ferry, Map<String, String> options) {
        TableEnvironment tEnv = newTableEnv(ferry);
        options.forEach((k, v) -> tEnv.getConfig().set(k, v));
        tEnv.executeSql(String.format(TABLES, "L"));
        tEnv.executeSql(String.format(TABLES, "R"));
        tEnv.executeSql(String.format(LTZ_TABLES, "L2"));
        tEnv.executeSql(String.format(LTZ_TABLES, "R2"));
        return tEnv;
    }

    /** The ferry terms of the plan; Ferry changes nothing else in EXPLAIN. */
    private static List<String> decisions(String sql, Map<String, String> options) {
        String explained = env(true, options).explainSql(sql);
        assertEquals(env(false, options).explainSql(sql), withoutFerryTerms(explained).stripTrailing() + "\n", sql);
        String plan = physicalPlan(explained);
        assertTrue(plan.contains("IntervalJoin("), plan);
        return ferryTerms(plan);
    }

    private static List<String> decisions(String sql) {
        return decisions(sql, Map.of());
    }

    private static String rowTime(String joinType, String extra) {
        return "SELECT L.k, L.v, R.v FROM L " + joinType + " JOIN R ON L.k = R.k"
                + " AND R.rt BETWEEN L.rt - INTERVAL '5' SECOND AND L.rt + INTERVAL '10' SECOND" + extra;
    }

    @Test
    void rowTimeJoinsOfEveryTypeAreNative() {
        for (String type : List.of("", "INNER", "LEFT", "RIGHT", "FULL", "LEFT OUTER", "FULL OUTER")) {
            assertEquals(List.of("native"), decisions(rowTime(type, "")), type);
        }
        // strict bounds, one-sided windows, composite and null-safe keys
        assertEquals(List.of("native"), decisions("SELECT L.k, R.v FROM L, R WHERE L.k = R.k AND L.s = R.s"
                + " AND L.rt > R.rt - INTERVAL '1' MINUTE AND L.rt < R.rt"));
        assertEquals(List.of("native"), decisions("SELECT L.k, R.v FROM L LEFT JOIN R ON L.k IS NOT DISTINCT FROM R.k"
                + " AND R.rt BETWEEN L.rt + INTERVAL '1' SECOND AND L.rt + INTERVAL '2' SECOND"));
    }

    @Test
    void residualConditionsAreNative() {
        for (String cond : List.of(" AND L.v <> R.v", " AND (L.v > R.v OR R.s IS NULL)", " AND L.k + 1 > R.k",
                " AND NOT (L.s = 'a' AND R.rt > TIMESTAMP '2024-01-01 00:00:00')")) {
            assertEquals(List.of("native"), decisions(rowTime("LEFT", cond)), cond);
        }
    }

    @Test
    void residualConditionsBeyondTheSubsetStayFlinks() {
        assertEquals(List.of("non-equi join condition LIKE(v, v0): operator LIKE not native yet"),
                decisions(rowTime("FULL", " AND L.v LIKE R.v")));
        assertEquals(List.of("non-equi join condition >(CAST(v):BIGINT, k0): CAST(VARCHAR AS BIGINT) not native yet"),
                decisions(rowTime("", " AND CAST(L.v AS BIGINT) > R.k")));
    }

    @Test
    void processingTimeIsNative() {
        assertEquals(List.of("native"),
                decisions("SELECT L.k, L.v, R.v FROM (SELECT k, v, pt FROM L) L JOIN (SELECT k, v, pt FROM R) R"
                        + " ON L.k = R.k AND R.pt BETWEEN L.pt - INTERVAL '5' SECOND AND L.pt"));
    }

    @Test
    void negativeWindowStaysFlinks() {
        assertEquals(List.of("negative window (leftUpperBound -10000 < leftLowerBound -5000): Flink plans no join"
                        + " operator, only filters and padding"),
                decisions("SELECT L.k, R.v FROM L FULL JOIN R ON L.k = R.k"
                        + " AND R.rt BETWEEN L.rt + INTERVAL '10' SECOND AND L.rt + INTERVAL '5' SECOND"));
    }

    @Test
    void fieldsGoCannotCarryStayFlinks() {
        assertEquals(List.of("left field bin of type BYTES: BINARY/VARBINARY in a join: not native yet"),
                decisions(rowTime("", "").replace("SELECT L.k,", "SELECT L.bin, L.k,")));
    }

    /** TIMESTAMP_LTZ fields cross as TIMESTAMP, row times among them; not in a residual condition. */
    @Test
    void localZonedTimestamps() {
        assertEquals(List.of("native"), decisions(rowTime("LEFT", "").replace("SELECT L.k,", "SELECT L.ltz, L.k,")));
        assertEquals(List.of("native"), decisions("SELECT L.k, L.lt, R.v FROM L2 L FULL JOIN R2 R ON L.k = R.k"
                + " AND R.lt BETWEEN L.lt - INTERVAL '5' SECOND AND L.lt + INTERVAL '10' SECOND"));
        assertEquals(List.of("non-equi join condition >(ltz, ltz0): a field of type TIMESTAMP_LTZ(3) not native yet"),
                decisions(rowTime("", " AND L.ltz > R.ltz")));
    }

    @Test
    void killSwitch() {
        assertEquals(List.of("disabled by ferry.interval-join.enabled=false"),
                decisions(rowTime("", ""), Map.of("ferry.interval-join.enabled", "false")));
        assertEquals(List.of("disabled by ferry.enabled=false"), decisions(rowTime("", ""), Map.of("ferry.enabled", "false")));
        assertEquals("ferry.interval-join.enabled", NativeKinds.ofKind(IntervalJoinSpec.KIND).killSwitch().key());
    }
}
