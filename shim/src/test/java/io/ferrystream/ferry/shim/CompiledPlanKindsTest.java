package io.ferrystream.ferry.shim;

import io.ferrystream.ferry.planner.Ferry;

import org.apache.flink.api.dag.Transformation;
import org.apache.flink.streaming.api.operators.SimpleOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperatorFactory;
import org.apache.flink.streaming.api.transformations.OneInputTransformation;
import org.apache.flink.streaming.api.transformations.TwoInputTransformation;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.PlanReference;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.internal.TableEnvironmentImpl;
import org.apache.flink.table.delegation.Planner;
import org.apache.flink.table.planner.factories.TestValuesTableFactory;
import org.apache.flink.types.Row;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Collectors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every native kind under {@code EXECUTE PLAN} (docs/jvm.md, "Compiled plans"): a plan compiled
 * with {@code COMPILE PLAN} is loaded by the shim's planner, which puts Ferry's generic exec node
 * in place of each node a registered kind translates. For each kind: the plan records Flink's node
 * types, the loaded plan runs the kind's native operator with the UID the plan gives Flink's
 * ({@code <id>_<transformation>} of the node of that id), and the results are Flink's for the same
 * plan run with {@code ferry.enabled: false}. The cases cover every registered kind.
 */
class CompiledPlanKindsTest {
    private static final String tData;
    private static final String leftData;
    private static final String rightData;
    private static final String probeData;
    private static final String dimData;

    // the sources' rows, registered with Flink's values connector of this JVM
    static {
        List<Row> t = new ArrayList<>();
        for (int i = 0; i < 500; i++) {
            t.add(Row.of(i * 7919 % 13, (long) (i % 101), "s" + (i % 17)));
        }
        tData = TestValuesTableFactory.registerData(t);
        LocalDateTime t0 = LocalDateTime.of(2026, 1, 1, 0, 0);
        List<Row> left = new ArrayList<>();
        List<Row> right = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            left.add(Row.of(i % 11, (long) i, t0.plusSeconds(i * 2L)));
            right.add(Row.of(i % 7, (long) (1000 + i), t0.plusSeconds(i * 2L + i % 5)));
        }
        leftData = TestValuesTableFactory.registerData(left);
        rightData = TestValuesTableFactory.registerData(right);
        List<Row> probe = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            probe.add(Row.of((long) (i % 13), i));
        }
        probeData = TestValuesTableFactory.registerData(probe);
        List<Row> dim = new ArrayList<>();
        for (long id = 0; id < 10; id++) {
            dim.add(Row.of(id, "name" + id));
        }
        dimData = TestValuesTableFactory.registerData(dim);
    }

    private static final Map<String, String> TWO_PHASE = Map.of(
            "table.exec.mini-batch.enabled", "true",
            "table.exec.mini-batch.allow-latency", "1 s",
            "table.exec.mini-batch.size", "100",
            "table.optimizer.agg-phase-strategy", "TWO_PHASE");

    private static Map<String, String> with(Map<String, String> options, String key, String value) {
        Map<String, String> m = new HashMap<>(options);
        m.put(key, value);
        return m;
    }

    private static final String AGG = "INSERT INTO agg_sink SELECT k, COUNT(*), SUM(v), COUNT(DISTINCT s) FROM T GROUP BY k";
    private static final String JOIN_SINK_COLUMNS = "k INT, v BIGINT, w BIGINT";

    /** One plan per case; together they hold a node of every registered kind. */
    enum Case {
        GROUP_AGGREGATE(Map.of(), AGG, List.of("group_aggregate")),
        TWO_PHASE_AGGREGATE(TWO_PHASE, AGG, List.of("local_group_aggregate", "global_group_aggregate")),
        SPLIT_DISTINCT(with(TWO_PHASE, "table.optimizer.distinct-agg.split.enabled", "true"), AGG,
                List.of("local_group_aggregate", "incremental_group_aggregate", "global_group_aggregate")),
        INTERVAL_JOIN(Map.of(), "INSERT INTO join_sink SELECT L.k, L.v, R.w FROM L JOIN R ON L.k = R.k"
                + " AND L.t BETWEEN R.t - INTERVAL '5' SECOND AND R.t + INTERVAL '5' SECOND", List.of("interval_join")),
        WINDOW_JOIN(Map.of(), "INSERT INTO join_sink SELECT a.k, a.v, b.w"
                + " FROM TABLE(TUMBLE(TABLE L, DESCRIPTOR(t), INTERVAL '10' SECOND)) a"
                + " JOIN TABLE(TUMBLE(TABLE R, DESCRIPTOR(t), INTERVAL '10' SECOND)) b"
                + " ON a.window_start = b.window_start AND a.window_end = b.window_end AND a.k = b.k", List.of("window_join")),
        LOOKUP_JOIN(Map.of(), "INSERT INTO lookup_sink SELECT P.id, P.x, D.name FROM P"
                + " JOIN D FOR SYSTEM_TIME AS OF P.pt AS D ON P.id = D.id", List.of("lookup_join")),
        DEDUPLICATE(Map.of(), "INSERT INTO dedup_sink SELECT k, v, t FROM (SELECT *, ROW_NUMBER() OVER"
                + " (PARTITION BY k ORDER BY t DESC) AS rn FROM L) WHERE rn = 1", List.of("deduplicate")),
        TOP_N(Map.of(), "INSERT INTO topn_sink SELECT k, v, t, rn FROM (SELECT *, ROW_NUMBER() OVER"
                + " (PARTITION BY k ORDER BY v DESC) AS rn FROM L) WHERE rn <= 3", List.of("top_n")),
        // the preview kinds: switched on
        REGULAR_JOIN(Map.of("ferry.regular-join.enabled", "true"),
                "INSERT INTO join_sink SELECT L.k, L.v, R.w FROM L JOIN R ON L.k = R.k AND L.v < R.w - 1000", List.of("regular_join")),
        // the same under mini-batch (its bundles), and a SEMI join
        REGULAR_JOIN_MINI_BATCH(Map.of("ferry.regular-join.enabled", "true", "table.exec.mini-batch.enabled", "true",
                "table.exec.mini-batch.allow-latency", "1 s", "table.exec.mini-batch.size", "100"),
                "INSERT INTO join_sink SELECT L.k, L.v, R.w FROM L JOIN R ON L.k = R.k AND L.v < R.w - 1000", List.of("regular_join")),
        SEMI_JOIN(Map.of("ferry.regular-join.enabled", "true"),
                "INSERT INTO join_sink SELECT L.k, L.v, L.v FROM L WHERE L.k IN (SELECT k FROM R WHERE R.w > 1100)",
                List.of("regular_join")),
        WINDOW_AGGREGATE(Map.of("ferry.window-aggregate.enabled", "true", "table.optimizer.agg-phase-strategy", "ONE_PHASE"),
                "INSERT INTO window_sink SELECT k, window_start, window_end, COUNT(*), SUM(v) FROM TABLE(TUMBLE(TABLE L,"
                        + " DESCRIPTOR(t), INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end", List.of("window_aggregate"));

        final Map<String, String> options;
        final String insert;
        final List<String> kinds;

        Case(Map<String, String> options, String insert, List<String> kinds) {
            this.options = options;
            this.insert = insert;
            this.kinds = kinds;
        }

        /** Whether the sink's rows are an update changelog keyed by the first field (the aggregates, the deduplication). */
        boolean keyed() {
            return insert.startsWith("INSERT INTO agg_sink") || insert.startsWith("INSERT INTO dedup_sink");
        }
    }

    private static TableEnvironment environment(boolean ferry, Map<String, String> options) {
        TableEnvironment tEnv = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
        tEnv.getConfig().set("parallelism.default", "1");
        options.forEach((k, v) -> tEnv.getConfig().set(k, v));
        tEnv.getConfig().set("ferry.enabled", String.valueOf(ferry));
        tEnv.executeSql("CREATE TABLE T (k INT, v BIGINT, s STRING) WITH ("
                + "'connector' = 'values', 'bounded' = 'true', 'data-id' = '" + tData + "')");
        tEnv.executeSql("CREATE TABLE L (k INT, v BIGINT, t TIMESTAMP(3), WATERMARK FOR t AS t - INTERVAL '1' SECOND) WITH ("
                + "'connector' = 'values', 'bounded' = 'true', 'data-id' = '" + leftData + "')");
        tEnv.executeSql("CREATE TABLE R (k INT, w BIGINT, t TIMESTAMP(3), WATERMARK FOR t AS t - INTERVAL '1' SECOND) WITH ("
                + "'connector' = 'values', 'bounded' = 'true', 'data-id' = '" + rightData + "')");
        tEnv.executeSql("CREATE TABLE P (id BIGINT, x INT, pt AS PROCTIME()) WITH ("
                + "'connector' = 'values', 'bounded' = 'true', 'data-id' = '" + probeData + "')");
        tEnv.executeSql("CREATE TABLE D (id BIGINT, name STRING) WITH ("
                + "'connector' = 'values', 'data-id' = '" + dimData + "')");
        tEnv.executeSql("CREATE TABLE agg_sink (k INT, n BIGINT, s BIGINT, d BIGINT) WITH ('connector' = 'print')");
        tEnv.executeSql("CREATE TABLE join_sink (" + JOIN_SINK_COLUMNS + ") WITH ('connector' = 'print')");
        tEnv.executeSql("CREATE TABLE lookup_sink (id BIGINT, x INT, name STRING) WITH ('connector' = 'print')");
        tEnv.executeSql("CREATE TABLE dedup_sink (k INT, v BIGINT, t TIMESTAMP(3)) WITH ('connector' = 'print')");
        tEnv.executeSql("CREATE TABLE topn_sink (k INT, v BIGINT, t TIMESTAMP(3), rn BIGINT) WITH ('connector' = 'print')");
        tEnv.executeSql("CREATE TABLE window_sink (k INT, ws TIMESTAMP(3), we TIMESTAMP(3), n BIGINT, s BIGINT)"
                + " WITH ('connector' = 'print')");
        return tEnv;
    }

    /** Runs {@code plan} in {@code tEnv} and returns the rows the print sink wrote. */
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

    /** The node types of a compiled plan, by node id. */
    private static Map<Integer, String> nodeTypes(String json) throws Exception {
        Map<Integer, String> types = new LinkedHashMap<>();
        for (JsonNode node : new ObjectMapper().readTree(json).get("nodes")) {
            types.put(node.get("id").asInt(), node.get("type").asText());
        }
        return types;
    }

    /** The UIDs of the transformations running one of Ferry's operators in {@code plan} as {@code tEnv} translates it. */
    private static List<String> ferryUids(TableEnvironment tEnv, Path plan) throws Exception {
        Planner planner = ((TableEnvironmentImpl) tEnv).getPlanner();
        List<String> uids = new ArrayList<>();
        for (Transformation<?> root : planner.translatePlan(planner.loadPlan(PlanReference.fromFile(plan)))) {
            for (Transformation<?> t : root.getTransitivePredecessors()) {
                StreamOperatorFactory<?> factory = t instanceof OneInputTransformation
                        ? ((OneInputTransformation<?, ?>) t).getOperatorFactory()
                        : t instanceof TwoInputTransformation ? ((TwoInputTransformation<?, ?, ?>) t).getOperatorFactory() : null;
                if (factory instanceof SimpleOperatorFactory
                        && ((SimpleOperatorFactory<?>) factory).getOperator().getClass().getName().startsWith("io.ferrystream.ferry.")) {
                    uids.add(t.getUid());
                }
            }
        }
        return uids;
    }

    @ParameterizedTest
    @EnumSource(Case.class)
    void executePlanRunsTheKindNativelyWithThePlansUid(Case c, @TempDir Path dir) throws Exception {
        Path plan = dir.resolve("plan.json");
        environment(true, c.options).executeSql("COMPILE PLAN '" + plan + "' FOR " + c.insert);
        String json = Files.readString(plan);
        Map<Integer, String> types = nodeTypes(json);

        TableEnvironment ferry = environment(true, c.options);
        List<String> uids = ferryUids(ferry, plan);
        assertEquals(c.kinds.size(), uids.size(), "one Ferry operator per kind's node: " + uids + "\n" + json);
        List<String> uidTypes = new ArrayList<>();
        for (String uid : uids) {
            assertTrue(uid != null && uid.matches("\\d+_[a-z-]+"), "a UID of the plan: " + uid);
            int id = Integer.parseInt(uid.substring(0, uid.indexOf('_')));
            // Flink names the transformation of node type stream-exec-<name>_1 <name>: its UID <id>_<name>
            assertEquals("stream-exec-" + uid.substring(uid.indexOf('_') + 1) + "_1", types.get(id), "the node of " + uid);
            uidTypes.add(types.get(id));
        }

        Map<String, Long> opened = new HashMap<>();
        for (String kind : c.kinds) {
            opened.put(kind, Ferry.nativeOperatorsOpened(kind));
        }
        List<String> got = execute(ferry, plan);
        for (String kind : c.kinds) {
            assertTrue(Ferry.nativeOperatorsOpened(kind) > opened.get(kind), "EXECUTE PLAN ran Ferry's " + kind + ": " + uidTypes);
        }
        List<String> want = execute(environment(false, c.options), plan);
        assertTrue(want.size() > 10, "Flink's run printed rows: " + want);
        if (c.keyed()) {
            // bundle and timer boundaries may differ between runs (Flink's own too): the final table is the result
            assertEquals(finalTable(want), finalTable(got));
        } else {
            // insert-only joins: the same rows, in whatever order the two sources interleaved; the
            // Top-N over one source: the same changelog; the window aggregate: the same windows
            assertEquals(want.stream().sorted().collect(Collectors.toList()), got.stream().sorted().collect(Collectors.toList()));
        }
    }

    /** The cases hold every registered kind: a new kind adds its case here. */
    @Test
    void theCasesCoverEveryKind() {
        TreeSet<String> covered = new TreeSet<>();
        for (Case c : EnumSet.allOf(Case.class)) {
            covered.addAll(c.kinds);
        }
        assertEquals(new TreeSet<>(Ferry.operatorKinds()), covered);
    }

    @AfterAll
    static void clearData() {
        TestValuesTableFactory.clearAllData();
    }
}
