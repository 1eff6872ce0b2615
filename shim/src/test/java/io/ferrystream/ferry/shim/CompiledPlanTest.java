package io.ferrystream.ferry.shim;

import org.apache.flink.api.dag.Transformation;
import org.apache.flink.streaming.api.operators.SimpleOperatorFactory;
import org.apache.flink.streaming.api.transformations.OneInputTransformation;
import org.apache.flink.table.api.CompiledPlan;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.ExplainDetail;
import org.apache.flink.table.api.PlanReference;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.internal.TableEnvironmentImpl;
import org.apache.flink.table.delegation.Planner;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A plan compiled with {@code COMPILE PLAN} and run with {@code EXECUTE PLAN}: Flink translates a
 * loaded plan without optimizing it, so the shim's planner puts Ferry's node in (docs/jvm.md,
 * "Compiled plans"). Ferry's operator runs, with the UID the plan gives Flink's, and the changelog
 * is the one Flink's operator writes for the same plan (ferry.enabled: false).
 */
class CompiledPlanTest {
    private static final int ROWS = 600;

    private static String values() {
        List<String> rows = new ArrayList<>();
        for (int i = 0; i < ROWS; i++) {
            rows.add("(" + (i * 7919 % 13) + ", " + (i % 101) + ")"); // literals: one Values node, rows in order
        }
        return String.join(", ", rows);
    }

    private static final Map<String, String> TWO_PHASE =
            Map.of(
                    "table.exec.mini-batch.enabled", "true",
                    "table.exec.mini-batch.allow-latency", "1 s",
                    "table.exec.mini-batch.size", "100",
                    "table.optimizer.agg-phase-strategy", "TWO_PHASE");

    private static TableEnvironment environment(boolean ferry) {
        return environment(ferry, Map.of());
    }

    private static TableEnvironment environment(boolean ferry, Map<String, String> options) {
        TableEnvironment tEnv = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
        tEnv.getConfig().set("parallelism.default", "1");
        options.forEach((k, v) -> tEnv.getConfig().set(k, v));
        tEnv.getConfig().set("ferry.enabled", String.valueOf(ferry));
        tEnv.executeSql("CREATE TEMPORARY VIEW T AS SELECT k, CAST(v AS BIGINT) AS v FROM (VALUES " + values() + ") AS t(k, v)");
        tEnv.executeSql("CREATE TABLE sink (k INT, n BIGINT, s BIGINT, hi BIGINT) WITH ('connector' = 'print')");
        return tEnv;
    }

    private static long nativeOperatorsOpened() throws Exception {
        return (Long) Class.forName("io.ferrystream.ferry.planner.Ferry").getMethod("nativeOperatorsOpened").invoke(null);
    }

    /** Runs {@code plan} in {@code tEnv} and returns what the print sink wrote. */
    private static List<String> execute(TableEnvironment tEnv, Path plan) throws Exception {
        PrintStream out = System.out;
        ByteArrayOutputStream printed = new ByteArrayOutputStream();
        System.setOut(new PrintStream(printed, true, StandardCharsets.UTF_8));
        try {
            tEnv.executeSql("EXECUTE PLAN '" + plan + "'").await();
        } finally {
            System.setOut(out);
        }
        return Arrays.stream(printed.toString(StandardCharsets.UTF_8).split("\n"))
                .filter(l -> l.matches("[+-][IUD]\\[.*"))
                .collect(Collectors.toList());
    }

    @Test
    void executePlanRunsFerrysOperatorWithThePlansUid(@TempDir Path dir) throws Exception {
        Path plan = dir.resolve("plan.json");
        environment(true).executeSql("COMPILE PLAN '" + plan + "' FOR INSERT INTO sink"
                + " SELECT k, COUNT(*), SUM(v), MAX(v) FROM T GROUP BY k");
        String json = Files.readString(plan);
        assertTrue(json.contains("\"stream-exec-group-aggregate_1\""), "a compiled plan records Flink's node type");

        TableEnvironment ferry = environment(true);
        CompiledPlan loaded = ferry.loadPlan(PlanReference.fromFile(plan));
        assertTrue(loaded.explain(ExplainDetail.JSON_EXECUTION_PLAN).contains("FerryGroupAggregate["), "EXPLAIN shows Ferry's operator");
        Planner planner = ((TableEnvironmentImpl) ferry).getPlanner();
        List<Transformation<?>> transformations = planner.translatePlan(planner.loadPlan(PlanReference.fromFile(plan)));
        List<String> uids = new ArrayList<>();
        for (Transformation<?> root : transformations) {
            for (Transformation<?> t : root.getTransitivePredecessors()) {
                if (t instanceof OneInputTransformation
                        && ((OneInputTransformation<?, ?>) t).getOperatorFactory() instanceof SimpleOperatorFactory
                        && ((SimpleOperatorFactory<?>) ((OneInputTransformation<?, ?>) t).getOperatorFactory()).getOperator()
                                .getClass().getName().equals("io.ferrystream.ferry.kinds.groupaggregate.FerryGroupAggregateOperator")) {
                    uids.add(t.getUid());
                }
            }
        }
        assertEquals(1, uids.size(), "one Ferry operator: " + uids);
        assertTrue(uids.get(0).matches("\\d+_group-aggregate"), "the plan's UID for Flink's group aggregate: " + uids);
        assertTrue(json.contains("\"id\" : " + uids.get(0).split("_")[0] + ","), "the UID's node id is the plan's");

        long opened = nativeOperatorsOpened();
        List<String> got = execute(ferry, plan);
        assertTrue(nativeOperatorsOpened() > opened, "EXECUTE PLAN ran Ferry's operator");
        List<String> want = execute(environment(false), plan);
        assertFalse(want.isEmpty(), "Flink's run printed its changelog");
        assertEquals(want, got);
    }

    /**
     * The two-phase plan (local and global aggregate, mini-batch): both halves run Ferry's
     * operators under EXECUTE PLAN, over Flink's row exchange, and the final table is Flink's
     * (bundle boundaries follow timers, so the changelogs themselves may differ, Flink's own from
     * run to run too).
     */
    @Test
    void executePlanRunsTheTwoPhaseAggregateNatively(@TempDir Path dir) throws Exception {
        Path plan = dir.resolve("plan.json");
        environment(true, TWO_PHASE).executeSql("COMPILE PLAN '" + plan + "' FOR INSERT INTO sink"
                + " SELECT k, COUNT(*), SUM(v), MAX(v) FROM T GROUP BY k");
        String json = Files.readString(plan);
        assertTrue(json.contains("\"stream-exec-local-group-aggregate_1\"") && json.contains("\"stream-exec-global-group-aggregate_1\""), json);

        TableEnvironment ferry = environment(true, TWO_PHASE);
        String explain = ferry.loadPlan(PlanReference.fromFile(plan)).explain(ExplainDetail.JSON_EXECUTION_PLAN);
        assertTrue(explain.contains("FerryLocalGroupAggregate[") && explain.contains("FerryGlobalGroupAggregate["), explain);
        long opened = nativeOperatorsOpened();
        Map<String, String> got = finalTable(execute(ferry, plan));
        assertTrue(nativeOperatorsOpened() >= opened + 2, "EXECUTE PLAN ran both of Ferry's operators");
        Map<String, String> want = finalTable(execute(environment(false, TWO_PHASE), plan));
        assertEquals(13, want.size(), "one row per key: " + want);
        assertEquals(want, got);
    }

    /** The table a changelog of rows keyed by their first field leaves. */
    private static Map<String, String> finalTable(List<String> changelog) {
        Map<String, String> table = new TreeMap<>();
        for (String row : changelog) {
            String fields = row.substring(3, row.length() - 1);
            String key = fields.split(", ")[0];
            if (row.startsWith("+I") || row.startsWith("+U")) {
                table.put(key, fields);
            } else {
                table.remove(key);
            }
        }
        return table;
    }
}
