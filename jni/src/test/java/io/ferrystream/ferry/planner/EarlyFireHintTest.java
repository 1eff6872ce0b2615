package io.ferrystream.ferry.planner;

import static io.ferrystream.ferry.planner.PlannerTests.newTableEnv;
import static io.ferrystream.ferry.planner.PlannerTests.physicalPlan;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.flink.table.api.ExplainDetail;
import org.apache.flink.table.api.TableEnvironment;
import org.junit.jupiter.api.Test;

import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The {@code EARLY_FIRE} hint with Ferry installed: master's option checks and messages, EXPLAIN's
 * {@code earlyFireDelay}/{@code earlyFireTimeMode}, the changelog it makes an outer join produce,
 * master's error for an insert-only sink, joins that ignore it, and what Ferry refuses.
 */
class EarlyFireHintTest {
    private static final String TABLE = "CREATE TEMPORARY TABLE %s (a INT, b STRING, c BIGINT, proctime AS PROCTIME(),"
            + " rowtime TIMESTAMP(3), WATERMARK FOR rowtime AS rowtime) WITH ('connector' = 'datagen')";
    private static final String ROW_TIME_ON = " t1.a, t2.b FROM MyTable t1 %s JOIN MyTable2 t2 ON t1.a = t2.a AND"
            + " t1.rowtime BETWEEN t2.rowtime - INTERVAL '10' SECOND AND t2.rowtime + INTERVAL '1' HOUR";
    private static final String PROC_TIME_ON = " t1.a, t2.b FROM MyTable t1 LEFT JOIN MyTable2 t2 ON t1.a = t2.a AND"
            + " t1.proctime BETWEEN t2.proctime - INTERVAL '1' HOUR AND t2.proctime + INTERVAL '1' HOUR";

    private static TableEnvironment env(boolean ferry) {
        TableEnvironment tEnv = newTableEnv(ferry);
        tEnv.executeSql(String.format(TABLE, "MyTable"));
        tEnv.executeSql(String.format(TABLE, "MyTable2"));
        tEnv.executeSql("CREATE TEMPORARY TABLE FileSink (a INT, b STRING) WITH ('connector' = 'filesystem',"
                + " 'path' = '/tmp/ferry-early-fire-never-written', 'format' = 'csv')");
        tEnv.executeSql("CREATE TEMPORARY TABLE PrintSink (a INT, b STRING) WITH ('connector' = 'print')");
        return tEnv;
    }

    private static String leftJoin(String hint) {
        return "SELECT /*+ " + hint + " */" + String.format(ROW_TIME_ON, "LEFT");
    }

    /** The interval join's line of the physical plan with the changelog modes. */
    private static String joinLine(TableEnvironment tEnv, String sql) {
        String plan = physicalPlan(tEnv.explainSql(sql, ExplainDetail.CHANGELOG_MODE));
        Matcher m = Pattern.compile("IntervalJoin\\(.*").matcher(plan);
        assertTrue(m.find(), plan);
        return m.group();
    }

    private static String message(String sql) {
        Throwable t = assertThrows(Throwable.class, () -> env(true).explainSql(sql));
        StringBuilder b = new StringBuilder();
        for (; t != null; t = t.getCause()) {
            b.append(t.getMessage()).append('\n');
        }
        return b.toString();
    }

    @Test
    void outerJoinFiresEarlyNativelyAndProducesUpdates() {
        String line = joinLine(env(true), leftJoin("EARLY_FIRE('delay'='5s')"));
        assertTrue(line.contains("earlyFireDelay=[5000], earlyFireTimeMode=[ROWTIME], ferry=[native]"), line);
        assertTrue(line.contains("changelogMode=[I,UB,UA]"), line);
        // the hint's name in any case, an explicit target, processing time on a row-time join
        line = joinLine(env(true), leftJoin("early_fire('delay'='5s', 'time-mode'='rowtime')"));
        assertTrue(line.contains("earlyFireDelay=[5000], earlyFireTimeMode=[ROWTIME]"), line);
        line = joinLine(env(true), leftJoin("EARLY_FIRE('target'='interval_join', 'delay'='250ms')"));
        assertTrue(line.contains("earlyFireDelay=[250]"), line);
        line = joinLine(env(true), leftJoin("EARLY_FIRE('delay'='30s', 'time-mode'='proctime')"));
        assertTrue(line.contains("earlyFireDelay=[30000], earlyFireTimeMode=[PROCTIME], ferry=[native]"), line);
        assertTrue(line.contains("changelogMode=[I,UB,UA]"), line);
        // a processing-time join fires on processing time
        line = joinLine(env(true), "SELECT /*+ EARLY_FIRE('delay'='5s') */" + PROC_TIME_ON);
        assertTrue(line.contains("earlyFireTimeMode=[PROCTIME], ferry=[native]"), line);
        // into a sink that takes retractions
        String insert = "INSERT INTO PrintSink " + leftJoin("EARLY_FIRE('delay'='5s')");
        assertTrue(joinLine(env(true), insert).contains("changelogMode=[I,UB,UA]"));
        String plan = env(true).explainSql(insert, ExplainDetail.CHANGELOG_MODE);
        assertTrue(plan.contains("Sink(table=[default_catalog.default_database.PrintSink], fields=[a, b], changelogMode=[NONE])"), plan);
    }

    @Test
    void asyncStateChangesNothing() {
        TableEnvironment tEnv = env(true);
        tEnv.getConfig().set("table.exec.async-state.enabled", "true");
        String line = joinLine(tEnv, leftJoin("EARLY_FIRE('delay'='5s')"));
        assertTrue(line.contains("earlyFireTimeMode=[ROWTIME], ferry=[native]"), line);
    }

    @Test
    void innerJoinsIgnoreTheHint() {
        String line = joinLine(env(true), "SELECT /*+ EARLY_FIRE('delay'='5s') */" + String.format(ROW_TIME_ON, ""));
        assertTrue(line.contains("earlyFireDelay=[5000]"), line);
        assertTrue(line.contains("changelogMode=[I]"), line);
    }

    @Test
    void optionsAreCheckedWithMastersMessages() {
        assertTrue(message(leftJoin("EARLY_FIRE('time-mode'='rowtime')")).contains("incomplete required option(s)"));
        assertTrue(message(leftJoin("EARLY_FIRE('delay'='0s')")).contains("value should be at least 1 millisecond"));
        assertTrue(message(leftJoin("EARLY_FIRE('delay'='1ns')")).contains("value should be at least 1 millisecond"));
        assertTrue(message(leftJoin("EARLY_FIRE('delay'='5s', 'time-mode'='unknown')"))
                .contains("Invalid EARLY_FIRE hint options"));
        assertTrue(message(leftJoin("EARLY_FIRE('delay'='5s', 'timemode'='proctime')"))
                .contains("Unsupported EARLY_FIRE hint option(s) [timemode], supported options are [delay, target, time-mode]."));
        assertTrue(message(leftJoin("EARLY_FIRE('5s')")).contains("only support key-value options"));
        assertTrue(message(leftJoin("EARLY_FIRE('target'='window_join', 'delay'='5s')"))
                .contains("target value 'window_join' is not supported"));
        assertTrue(message("SELECT /*+ EARLY_FIRE('delay'='5s', 'time-mode'='rowtime') */" + PROC_TIME_ON)
                .contains("requires a row-time interval join"));
    }

    @Test
    void insertOnlySinksGetMastersError() {
        String m = message("INSERT INTO FileSink " + leftJoin("EARLY_FIRE('delay'='5s')"));
        assertTrue(m.contains("the EARLY_FIRE hint makes this outer interval join produce update"), m);
        assertTrue(m.contains("Table sink 'default_catalog.default_database.FileSink' is insert-only"), m);
    }

    @Test
    void withoutFerrysNativeJoinTheHintFails() {
        // Flink 2.3 without Ferry does not know the hint at all
        Throwable t = assertThrows(Throwable.class, () -> env(false).explainSql(leftJoin("EARLY_FIRE('delay'='5s')")));
        assertTrue(String.valueOf(t.getMessage()).contains("EARLY_FIRE"), String.valueOf(t.getMessage()));
        TableEnvironment off = env(true);
        off.getConfig().set("ferry.interval-join.enabled", "false");
        Throwable e = assertThrows(Throwable.class, () -> off.explainSql(leftJoin("EARLY_FIRE('delay'='5s')")));
        assertTrue(e.getMessage().contains("needs Ferry's native interval join"), e.getMessage());
        assertTrue(e.getMessage().contains("disabled by ferry.interval-join.enabled=false"), e.getMessage());
        // an inner join with the hint still runs on Flink's operator
        assertEquals(1, physicalPlan(off.explainSql("SELECT /*+ EARLY_FIRE('delay'='5s') */"
                + String.format(ROW_TIME_ON, ""))).split("IntervalJoin\\(", -1).length - 1);
    }

    @Test
    void consumersBeyondCalcAndSinksAreRefused() {
        String m = message("SELECT a, COUNT(b) FROM (" + leftJoin("EARLY_FIRE('delay'='5s')") + ") GROUP BY a");
        assertTrue(m.contains("consumes the updates of an outer interval join with the EARLY_FIRE hint"), m);
    }
}
