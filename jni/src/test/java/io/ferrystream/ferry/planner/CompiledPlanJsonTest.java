package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;

import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;

import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code COMPILE PLAN} with Ferry on writes the plan Flink writes with Ferry off, field for field
 * (only the descriptions carry Ferry's {@code ferry=[…]} term, and the properties' order differs), so a compiled plan loads and runs
 * without Ferry, and with it (docs/jvm.md, "Compiled plans"). Ferry's exec nodes keep copies of
 * Flink's private fields; as JSON properties they would hide Flink's.
 */
class CompiledPlanJsonTest {
    private static final String TABLES =
            "CREATE TABLE L (k INT, v BIGINT, s STRING, t TIMESTAMP(3), WATERMARK FOR t AS t - INTERVAL '1' SECOND)"
                    + " WITH ('connector' = 'datagen');"
                    + "CREATE TABLE R (k INT, w BIGINT, t TIMESTAMP(3), WATERMARK FOR t AS t - INTERVAL '1' SECOND)"
                    + " WITH ('connector' = 'datagen');"
                    + "CREATE TABLE agg_sink (k INT, n BIGINT, s BIGINT, d BIGINT) WITH ('connector' = 'blackhole');"
                    + "CREATE TABLE join_sink (k INT, v BIGINT, w BIGINT) WITH ('connector' = 'blackhole')";

    private static final String GROUP_BY = "INSERT INTO agg_sink SELECT k, COUNT(*), SUM(v), MAX(v) FROM L GROUP BY k";
    private static final String DISTINCT =
            "INSERT INTO agg_sink SELECT k, COUNT(*), SUM(v), COUNT(DISTINCT s) FROM L GROUP BY k";
    private static final String INTERVAL_JOIN =
            "INSERT INTO join_sink SELECT L.k, v, w FROM L JOIN R ON L.k = R.k"
                    + " AND L.t BETWEEN R.t - INTERVAL '5' SECOND AND R.t + INTERVAL '5' SECOND";
    private static final String WINDOW_JOIN =
            "INSERT INTO join_sink SELECT a.k, a.v, b.w"
                    + " FROM TABLE(TUMBLE(TABLE L, DESCRIPTOR(t), INTERVAL '10' SECOND)) a"
                    + " JOIN TABLE(TUMBLE(TABLE R, DESCRIPTOR(t), INTERVAL '10' SECOND)) b"
                    + " ON a.window_start = b.window_start AND a.window_end = b.window_end AND a.k = b.k";

    private static final Map<String, String> TWO_PHASE =
            Map.of(
                    "table.exec.mini-batch.enabled", "true",
                    "table.exec.mini-batch.allow-latency", "1 s",
                    "table.exec.mini-batch.size", "100",
                    "table.optimizer.agg-phase-strategy", "TWO_PHASE");

    private static String compile(boolean ferry, String insert, Map<String, String> options) {
        TableEnvironment tEnv = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        options.forEach((k, v) -> tEnv.getConfig().set(k, v));
        Ferry.install(tEnv);
        for (String ddl : TABLES.split(";")) {
            tEnv.executeSql(ddl);
        }
        return tEnv.compilePlanSql(insert).asJsonString();
    }

    /**
     * The plan without Ferry's EXPLAIN term in node descriptions, node ids counted from the plan's
     * first (ids come from a counter per JVM).
     */
    private static String normalized(String json) {
        Matcher ids = Pattern.compile("\"id\" : (\\d+)").matcher(json);
        int first = ids.find() ? Integer.parseInt(ids.group(1)) : 0;
        Matcher refs = Pattern.compile("(\"(?:id|source|target)\" : )(\\d+)").matcher(json);
        StringBuilder out = new StringBuilder();
        while (refs.find()) {
            refs.appendReplacement(out, refs.group(1) + (Integer.parseInt(refs.group(2)) - first));
        }
        refs.appendTail(out);
        return out.toString().replaceAll(", ferry=\\[[^\\]\"]*\\]", "");
    }

    private static JsonNode tree(String json) {
        try {
            return new ObjectMapper().readTree(json);
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    private static void assertSamePlan(String insert, Map<String, String> options, String... nodeTypes) {
        String ferry = compile(true, insert, options);
        for (String type : nodeTypes) {
            assertTrue(ferry.contains("\"type\" : \"" + type + "\""), type + " in\n" + ferry);
        }
        assertTrue(ferry.contains("ferry=[native]"), "Ferry planned a node native:\n" + ferry);
        String stock = normalized(compile(false, insert, options));
        // the same fields and values; Jackson orders a subclass's properties its own way
        assertEquals(tree(stock), tree(normalized(ferry)), "Ferry's plan:\n" + ferry + "\nFlink's plan:\n" + stock);
    }

    @Test
    void groupAggregates() {
        assertSamePlan(GROUP_BY, Map.of(), "stream-exec-group-aggregate_1");
        assertSamePlan(GROUP_BY, TWO_PHASE, "stream-exec-local-group-aggregate_1", "stream-exec-global-group-aggregate_1");
        Map<String, String> split = new java.util.HashMap<>(TWO_PHASE);
        split.put("table.optimizer.distinct-agg.split.enabled", "true");
        assertSamePlan(DISTINCT, split, "stream-exec-incremental-group-aggregate_1");
    }

    @Test
    void joins() {
        assertSamePlan(INTERVAL_JOIN, Map.of(), "stream-exec-interval-join_1");
        assertSamePlan(WINDOW_JOIN, Map.of(), "stream-exec-window-join_1");
    }
}
