package io.ferrystream.ferry.planner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrystream.ferry.lookup.PostgresServer;
import io.ferrystream.ferry.nativelib.NativeOperator;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.Statement;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The JVM's spec writers against the Go side's contract, include/spec-params.json (the params
 * fields of every kind, generated from the Go params structs by {@code go test ./kinds -update}):
 * a corpus of queries that reaches every option of every kind, planned (the planner's spec checks)
 * and run (the two-phase aggregates' frames on a MiniCluster, the lookup against a real
 * PostgreSQL), makes the JVM write every field Go reads, but for the few listed here with the
 * reason the JVM leaves them out; every spec it wrote was opened by the library, which decodes
 * params strictly, so a field Go does not know would have failed the query.
 */
class SpecParamsConformanceTest {
    @RegisterExtension
    static final MiniClusterExtension CLUSTER = MiniClusters.twoByTwo();

    private static final Path CONTRACT = Path.of("..", "include", "spec-params.json");

    /** Go fields the JVM never writes, per kind, with why. */
    private static final Map<String, Map<String, String>> UNWRITTEN = Map.of(
            "local_group_aggregate", Map.of(
                    "exchange.max_parallelism", "refused for the local aggregate: its header's max_parallelism is the consumer's",
                    "exchange.target_frame_bytes", "Go's default frame size (256 KiB): no option sets it"),
            "global_group_aggregate", Map.of(
                    "aggs[].filter", "FILTER applies where rows fold, in the local aggregate",
                    "aggs[].java_strings", "string comparisons happen where rows fold, in the local aggregate"),
            "incremental_group_aggregate", Map.of(
                    "aggs[].filter", "FILTER applies where rows fold, in the local aggregate",
                    "aggs[].java_strings", "string comparisons happen where rows fold, in the local aggregate",
                    "exchange.target_frame_bytes", "Go's default frame size (256 KiB): no option sets it"),
            "jdbc_lookup", Map.of(
                    "max_conns", "Go's pool size, the default 4: the JDBC connector has no such option",
                    "query_timeout_ms", "none, as Flink's JDBC lookup, the default 0"),
            "regular_join", Map.of(
                    "left_state_retention_ms", "an idle-state TTL keeps the join Flink's (not native yet); 0 is not written",
                    "right_state_retention_ms", "an idle-state TTL keeps the join Flink's (not native yet); 0 is not written"),
            "window_aggregate", Map.of(
                    "aggs[].distinct", "DISTINCT keeps the window aggregate Flink's (not native yet)",
                    "aggs[].filter", "FILTER keeps the window aggregate Flink's (not native yet)",
                    "aggs[].java_strings", "the window buffer serializes rows, so strings compare as bytes: never written"),
            "example_first_row", Map.of(
                    "state_ttl_ms", "the example kind of the walkthrough has no JVM half"));

    /** The corpus: options, then statements to explain, per environment. */
    private static final String TABLES =
            "CREATE TEMPORARY TABLE %s (k BIGINT, s STRING, v BIGINT, d DECIMAL(10, 2), rt TIMESTAMP(3), ms BIGINT,"
                    + " lt AS TO_TIMESTAMP_LTZ(ms, 3), pt AS PROCTIME(), WATERMARK FOR rt AS rt)"
                    + " WITH ('connector' = 'datagen')";
    private static final String AGGS = "SELECT k, COUNT(*), SUM(v), MAX(s), MIN(d), AVG(v), COUNT(DISTINCT s),"
            + " SUM(v) FILTER (WHERE v > 1) FROM L GROUP BY k";
    private static final String RETRACTING = "SELECT s, MAX(c), SUM(c), COUNT(DISTINCT c), MIN(n) FROM"
            + " (SELECT k, s, COUNT(*) AS c, MAX(s) AS n FROM L GROUP BY k, s) GROUP BY s";
    private static final String TWO_PHASE_OPTIONS = "table.exec.mini-batch.enabled=true,"
            + "table.exec.mini-batch.allow-latency=1 s,table.exec.mini-batch.size=100,"
            + "table.optimizer.agg-phase-strategy=TWO_PHASE,table.exec.resource.default-parallelism=2";

    /** A deduplication of L by k, ordered as given. */
    private static final String DEDUP =
            "SELECT k, s, v FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY %s) AS rn FROM L) WHERE rn = 1";

    /** A Top-N of L by k, ordered as given, the rank number selected. */
    private static final String TOP_N =
            "SELECT k, s, v, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY %s) AS rn FROM L) WHERE %s";

    private static final Map<String, String[]> CORPUS = new java.util.LinkedHashMap<>();

    static {
        CORPUS.put("table.exec.state.ttl=1 h", new String[] {AGGS, RETRACTING});
        CORPUS.put("table.exec.mini-batch.enabled=true,table.exec.mini-batch.allow-latency=1 s,"
                + "table.exec.mini-batch.size=100,table.optimizer.agg-phase-strategy=ONE_PHASE", new String[] {AGGS, RETRACTING});
        CORPUS.put(TWO_PHASE_OPTIONS + ",table.exec.state.ttl=1 h", new String[] {AGGS, RETRACTING});
        CORPUS.put(TWO_PHASE_OPTIONS + ",table.optimizer.distinct-agg.split.enabled=true",
                new String[] {"SELECT k, COUNT(DISTINCT s), SUM(v), MAX(v) FROM L GROUP BY k", RETRACTING});
        CORPUS.put("table.exec.interval-join.min-cleanup-interval=1 s,ferry.join.null-key.emit-immediately=true,"
                + "table.local-time-zone=Europe/Berlin", new String[] {
            "SELECT L.k, R.v FROM L LEFT JOIN R ON L.k = R.k AND L.v > R.v + 1"
                    + " AND R.rt BETWEEN L.rt - INTERVAL '5' SECOND AND L.rt + INTERVAL '10' SECOND",
            "SELECT /*+ EARLY_FIRE('delay'='2 s', 'time-mode'='proctime') */ L.k, R.v FROM L FULL JOIN R ON L.k = R.k"
                    + " AND R.rt BETWEEN L.rt - INTERVAL '5' SECOND AND L.rt + INTERVAL '10' SECOND",
            "SELECT L.k, R.v FROM L JOIN R ON L.k = R.k"
                    + " AND R.pt BETWEEN L.pt - INTERVAL '5' SECOND AND L.pt + INTERVAL '10' SECOND",
            WindowJoinExplainTest.join("LEFT", "TUMBLE", true, "L.k IS NOT DISTINCT FROM R.k", " AND L.v <> R.v")});
        CORPUS.put("table.exec.state.ttl=1 h,table.exec.deduplicate.insert-update-after-sensitive-enabled=false",
                new String[] {DEDUP.formatted("rt DESC"), DEDUP.formatted("rt"), DEDUP.formatted("pt DESC")});
        CORPUS.put("table.exec.mini-batch.enabled=true,table.exec.mini-batch.allow-latency=1 s,table.exec.mini-batch.size=100,"
                + "table.exec.deduplicate.mini-batch.compact-changes-enabled=true", new String[] {DEDUP.formatted("rt DESC")});
        CORPUS.put("table.exec.rank.topn-cache-size=100", new String[] {TOP_N.formatted("v DESC, s NULLS LAST", "rn BETWEEN 2 AND 5"),
                TOP_N.formatted("v DESC", "rn = 1"),
                // the updatable Top-N (its row keys) and the retracting one, over aggregates
                "SELECT k, s, mx, rn FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY mx DESC) AS rn"
                        + " FROM (SELECT k, s, MAX(v) AS mx FROM L GROUP BY k, s)) WHERE rn <= 3",
                "SELECT k, sm, rn FROM (SELECT *, ROW_NUMBER() OVER (ORDER BY sm DESC) AS rn"
                        + " FROM (SELECT k, SUM(v) AS sm FROM L GROUP BY k)) WHERE rn <= 3"});
        CORPUS.put("table.exec.state.ttl=1 h,table.exec.rank.topn-cache-size=100", new String[] {TOP_N.formatted("pt", "rn <= 3")});
        // the regular join (a preview, switched on): a join key holding the left's unique key, a
        // right unique key outside the join key, a residual condition with arithmetic and a literal
        CORPUS.put("ferry.regular-join.enabled=true", new String[] {
            "SELECT a.k, a.c, b.s FROM (SELECT k, COUNT(*) AS c FROM L GROUP BY k) a LEFT JOIN"
                    + " (SELECT k, s, COUNT(*) AS c FROM R GROUP BY k, s) b ON a.k = b.k AND a.c > b.c + 1"});
        // under mini-batch (mini_batch), and a SEMI join
        CORPUS.put("ferry.regular-join.enabled=true,table.exec.mini-batch.enabled=true,table.exec.mini-batch.allow-latency=1 s,"
                + "table.exec.mini-batch.size=100", new String[] {
            "SELECT L.k, R.s FROM L FULL JOIN R ON L.k = R.k AND L.v < R.v",
            "SELECT * FROM L WHERE L.k IN (SELECT k FROM R WHERE R.v > 3)"});
        // the window aggregate (a preview, switched on), single-phase: HOP over TIMESTAMP_LTZ in a
        // zone with daylight saving (Flink inserts the COUNT(*)), CUMULATE with an offset, TUMBLE
        // with every window property
        CORPUS.put("ferry.window-aggregate.enabled=true,table.optimizer.agg-phase-strategy=ONE_PHASE,"
                + "table.local-time-zone=Europe/Berlin", new String[] {
            "SELECT k, window_start, window_end, MAX(v) FROM TABLE(HOP(TABLE L2, DESCRIPTOR(lt), INTERVAL '5' SECOND,"
                    + " INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end",
            "SELECT k, window_start, window_end, COUNT(*), MAX(v) FROM TABLE(CUMULATE(TABLE L, DESCRIPTOR(rt),"
                    + " INTERVAL '5' SECOND, INTERVAL '15' SECOND, INTERVAL '1' SECOND)) GROUP BY k, window_start, window_end",
            "SELECT k, window_start, window_end, window_time, AVG(v), MIN(s) FROM TABLE(TUMBLE(TABLE L, DESCRIPTOR(rt),"
                    + " INTERVAL '10' SECOND)) GROUP BY k, window_start, window_end, window_time"});
    }


    @Test
    void theWritersCoverEveryFieldGoReads() throws Exception {
        ObjectMapper json = new ObjectMapper();
        Map<String, Set<String>> contract = new TreeMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = json.readTree(Files.readString(CONTRACT)).fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> e = it.next();
            Set<String> paths = new TreeSet<>();
            e.getValue().forEach(p -> paths.add(p.asText()));
            contract.put(e.getKey(), paths);
        }
        NativeSupport.clearCache(); // a cached spec would not be opened again
        NativeOperator.recordSpecs(true);
        Set<String> specs;
        try {
            planCorpus();
            runFrames();
            runLookup();
        } finally {
            specs = NativeOperator.recordedSpecs();
            NativeOperator.recordSpecs(false);
        }
        Map<String, Set<String>> written = new HashMap<>();
        for (String spec : specs) {
            JsonNode root = json.readTree(spec);
            paths(root.path("params"), written.computeIfAbsent(root.get("kind").asText(), k -> new TreeSet<>()));
        }
        Map<String, Set<String>> missing = new TreeMap<>();
        for (Map.Entry<String, Set<String>> k : contract.entrySet()) {
            Set<String> unwritten = new TreeSet<>(k.getValue());
            unwritten.removeAll(written.getOrDefault(k.getKey(), Set.of()));
            unwritten.removeAll(UNWRITTEN.getOrDefault(k.getKey(), Map.of()).keySet());
            if (!unwritten.isEmpty()) {
                missing.put(k.getKey(), unwritten);
            }
            for (String listed : UNWRITTEN.getOrDefault(k.getKey(), Map.of()).keySet()) {
                assertTrue(k.getValue().contains(listed), k.getKey() + ": " + listed + " is listed here but no Go field");
                assertTrue(!written.getOrDefault(k.getKey(), Set.of()).contains(listed),
                        k.getKey() + ": " + listed + " is listed as unwritten, but the JVM writes it");
            }
        }
        assertEquals(Map.of(), missing, "Go fields the corpus never made the JVM write");
    }

    /** Plans the corpus: the planner checks the spec of every candidate with the library. */
    private static void planCorpus() {
        for (Map.Entry<String, String[]> c : CORPUS.entrySet()) {
            TableEnvironment tEnv = env(c.getKey());
            for (String sql : c.getValue()) {
                String plan = PlannerTests.physicalPlan(tEnv.explainSql(sql));
                assertTrue(PlannerTests.ferryTerms(plan).contains("native"), c.getKey() + ": " + sql + "\n" + plan);
            }
        }
    }

    /** Runs two-phase aggregates at parallelism 2: their native stages exchange frames. */
    private static void runFrames() throws Exception {
        TableEnvironment tEnv = env(TWO_PHASE_OPTIONS + ",table.optimizer.distinct-agg.split.enabled=true");
        tEnv.executeSql("CREATE TEMPORARY TABLE B (k BIGINT, s STRING, v BIGINT) WITH ('connector' = 'datagen',"
                + " 'number-of-rows' = '2000', 'fields.k.min' = '0', 'fields.k.max' = '20', 'fields.s.length' = '2')");
        tEnv.executeSql("CREATE TEMPORARY TABLE out1 (k BIGINT, c BIGINT, s BIGINT, m BIGINT) WITH ('connector' = 'blackhole')");
        tEnv.executeSql("INSERT INTO out1 SELECT k, COUNT(DISTINCT s), SUM(v), MAX(v) FROM B GROUP BY k").await();
    }

    /** Runs a lookup join against a real PostgreSQL: the function opens with its spec and secrets. */
    private static void runLookup() throws Exception {
        try (PostgresServer pg = PostgresServer.start()) {
            try (Connection c = pg.connect(); Statement st = c.createStatement()) {
                st.execute("CREATE TABLE dim (id BIGINT, name VARCHAR(20), c CHAR(3))");
                st.execute("INSERT INTO dim VALUES (1, 'one', 'abc'), (2, 'two', 'def')");
            }
            TableEnvironment tEnv = env("");
            tEnv.executeSql("CREATE TEMPORARY TABLE P (id BIGINT, pt AS PROCTIME()) WITH ('connector' = 'datagen',"
                    + " 'number-of-rows' = '20', 'fields.id.min' = '0', 'fields.id.max' = '3')");
            tEnv.executeSql("CREATE TEMPORARY TABLE pgdim (id BIGINT, name STRING, c CHAR(3)) WITH ('connector'='jdbc',"
                    + " 'url'='" + pg.url() + "', 'table-name'='dim', 'username'='" + pg.user() + "', 'password'='" + pg.password() + "',"
                    + " 'lookup.max-retries'='2', 'lookup.cache'='PARTIAL', 'lookup.partial-cache.max-rows'='100',"
                    + " 'lookup.partial-cache.expire-after-write'='10 s', 'lookup.partial-cache.expire-after-access'='5 s',"
                    + " 'lookup.partial-cache.cache-missing-key'='false')");
            tEnv.executeSql("CREATE TEMPORARY TABLE out2 (id BIGINT, name STRING, c CHAR(3)) WITH ('connector' = 'blackhole')");
            tEnv.executeSql("INSERT INTO out2 SELECT P.id, D.name, D.c FROM P JOIN pgdim FOR SYSTEM_TIME AS OF P.pt AS D"
                    + " ON P.id = D.id").await();
        }
    }

    /** A table environment with Ferry, the options (comma-separated key=value) and the corpus's tables. */
    private static TableEnvironment env(String options) {
        TableEnvironment tEnv = PlannerTests.newTableEnv(true);
        for (String option : options.split(",")) {
            if (!option.isEmpty()) {
                String[] kv = option.split("=", 2);
                tEnv.getConfig().set(kv[0], kv[1]);
            }
        }
        tEnv.executeSql(String.format(TABLES, "L"));
        tEnv.executeSql(String.format(TABLES, "R"));
        tEnv.executeSql(String.format(WindowJoinExplainTest.LTZ_TABLES, "L2"));
        tEnv.executeSql(String.format(WindowJoinExplainTest.LTZ_TABLES, "R2"));
        return tEnv;
    }

    /**
     * Adds the paths of node's fields to out as include/spec-params.json writes them: a top-level
     * field by name, a field of an object it holds at any depth as "name.field" ("name[].field"
     * inside a list).
     */
    private static void paths(JsonNode params, Set<String> out) {
        for (Iterator<Map.Entry<String, JsonNode>> it = params.fields(); it.hasNext(); ) {
            Map.Entry<String, JsonNode> f = it.next();
            out.add(f.getKey());
            nested(f.getValue(), f.getKey() + (f.getValue().isArray() ? "[]." : "."), out);
        }
    }

    private static void nested(JsonNode node, String prefix, Set<String> out) {
        if (node.isArray()) {
            node.forEach(e -> nested(e, prefix, out));
        } else if (node.isObject()) {
            for (Iterator<Map.Entry<String, JsonNode>> it = node.fields(); it.hasNext(); ) {
                Map.Entry<String, JsonNode> f = it.next();
                out.add(prefix + f.getKey());
                nested(f.getValue(), prefix, out);
            }
        }
    }
}
