package io.ferrystream.ferry.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.planner.delegation.DefaultPlannerFactory;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A table environment created the way a user's code creates one, never calling Ferry: the shim
 * (this project's classes, ahead of the planner jar on the test class path) installs Ferry, so
 * EXPLAIN shows the GROUP BY native and the query runs in Go.
 */
class ShimInstallTest {
    private static final Pattern FERRY_TERM = Pattern.compile("ferry=\\[(.*?)\\](?=[,)]|$)", Pattern.MULTILINE);

    private static final String VIEW =
            "CREATE TEMPORARY VIEW T AS SELECT * FROM (VALUES"
                    + " ('a', CAST(1 AS BIGINT)), ('b', CAST(2 AS BIGINT)), ('a', CAST(3 AS BIGINT))) AS t(k, v)";

    private static final String QUERY = "SELECT k, SUM(v) AS s, COUNT(*) AS c FROM T GROUP BY k";

    private static List<String> ferryTerms(String explain) {
        int start = explain.indexOf("== Optimized Physical Plan ==");
        int end = explain.indexOf("== Optimized Execution Plan ==");
        Matcher m = FERRY_TERM.matcher(explain.substring(start, end));
        List<String> terms = new ArrayList<>();
        while (m.find()) {
            terms.add(m.group(1));
        }
        return terms;
    }

    private static long nativeOperatorsOpened() throws Exception {
        return (Long) Class.forName("io.ferrystream.ferry.planner.Ferry").getMethod("nativeOperatorsOpened").invoke(null);
    }

    @Test
    void tableEnvironmentOfAUserGetsFerry() throws Exception {
        TableEnvironment tEnv = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
        tEnv.executeSql(VIEW);
        assertEquals(List.of("native"), ferryTerms(tEnv.explainSql(QUERY)));
        assertTrue(DefaultPlannerFactory.ferryPlannersCreated() > 0);

        long opened = nativeOperatorsOpened();
        List<String> rows = new ArrayList<>();
        try (CloseableIterator<Row> it = tEnv.executeSql(QUERY).collect()) {
            it.forEachRemaining(r -> rows.add(r.toString()));
        }
        assertEquals(
                List.of("+I[a, 1, 1]", "+I[b, 2, 1]", "-U[a, 1, 1]", "+U[a, 4, 2]"),
                rows);
        assertTrue(nativeOperatorsOpened() > opened, "the query ran Ferry's operator");
    }

    @Test
    void streamTableEnvironmentGetsFerryAndTheTableConfigSwitchesItOff() {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.executeSql(VIEW);
        assertEquals(List.of("native"), ferryTerms(tEnv.explainSql(QUERY)));
        tEnv.getConfig().set("ferry.enabled", "false"); // what the SQL Client's SET does
        assertEquals(List.of("disabled by ferry.enabled=false"), ferryTerms(tEnv.explainSql(QUERY)));
        tEnv.getConfig().set("ferry.enabled", "true");
        assertEquals(List.of("native"), ferryTerms(tEnv.explainSql(QUERY)));
    }

    @Test
    void clusterConfigurationReachesFerry() {
        Configuration conf = new Configuration();
        conf.setString("ferry.group-aggregate.enabled", "false");
        TableEnvironment tEnv =
                TableEnvironment.create(EnvironmentSettings.newInstance().inStreamingMode().withConfiguration(conf).build());
        tEnv.executeSql(VIEW);
        assertEquals(List.of("disabled by ferry.group-aggregate.enabled=false"), ferryTerms(tEnv.explainSql(QUERY)));
    }

    @Test
    void systemPropertyDefaultsApplyUnlessTheConfigurationSetsTheOption() {
        System.setProperty(DefaultPlannerFactory.DEFAULTS_PROPERTY, "ferry.enabled=false");
        try {
            TableEnvironment off = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
            off.executeSql(VIEW);
            assertEquals(List.of("disabled by ferry.enabled=false"), ferryTerms(off.explainSql(QUERY)));

            Configuration conf = new Configuration();
            conf.setString("ferry.enabled", "true");
            TableEnvironment on =
                    TableEnvironment.create(EnvironmentSettings.newInstance().inStreamingMode().withConfiguration(conf).build());
            on.executeSql(VIEW);
            assertEquals(List.of("native"), ferryTerms(on.explainSql(QUERY)));
        } finally {
            System.clearProperty(DefaultPlannerFactory.DEFAULTS_PROPERTY);
        }
    }

    /**
     * The shim installs Ferry when the environment is created; an option Flink's own stream
     * program reads (join reorder) and that is set afterwards, like a SQL Client SET, still takes
     * effect.
     */
    @Test
    void flinksOptimizerOptionsSetAfterCreationStillApply() {
        String join =
                "SELECT a2, c2, COUNT(*) AS n FROM A JOIN C ON a1 = c1 JOIN B ON c1 = b1 AND a1 = b2 GROUP BY a2, c2";
        List<String> innermostJoins = new ArrayList<>();
        for (boolean reorder : new boolean[] {false, true}) {
            TableEnvironment tEnv = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
            tEnv.executeSql("CREATE TEMPORARY VIEW A AS SELECT * FROM (VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd'),"
                    + " (5, 'e'), (6, 'f')) AS t(a1, a2)");
            tEnv.executeSql("CREATE TEMPORARY VIEW B AS SELECT * FROM (VALUES (1, 1)) AS t(b1, b2)");
            tEnv.executeSql("CREATE TEMPORARY VIEW C AS SELECT * FROM (VALUES (1, 'x'), (2, 'y'), (3, 'z')) AS t(c1, c2)");
            tEnv.getConfig().set("table.optimizer.join-reorder-enabled", String.valueOf(reorder));
            String explain = tEnv.explainSql(join);
            assertEquals(List.of("native"), ferryTerms(explain));
            Matcher joins = Pattern.compile("Join\\(joinType=\\[InnerJoin\\], where=\\[(.*?)\\], select").matcher(
                    explain.substring(0, explain.indexOf("== Optimized Execution Plan ==")));
            String last = null;
            while (joins.find()) {
                last = joins.group(1);
            }
            innermostJoins.add(last);
        }
        // Flink joins A with C first as written, and with the one-row B first once it reorders
        assertEquals(List.of("=(a1, c1)", "=(a1, b2)"), innermostJoins);
    }

    @Test
    void batchPlannerIsFlinksOwn() {
        TableEnvironment tEnv = TableEnvironment.create(EnvironmentSettings.inBatchMode());
        tEnv.executeSql(VIEW);
        String explain = tEnv.explainSql(QUERY);
        assertFalse(explain.contains("ferry="), explain);
        assertTrue(explain.contains("HashAggregate") || explain.contains("SortAggregate"), explain);
    }
}
