package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateKind;

import static io.ferrystream.ferry.planner.PlannerTests.exchangeTerms;
import static io.ferrystream.ferry.planner.PlannerTests.ferryTerms;
import static io.ferrystream.ferry.planner.PlannerTests.groupAggregateLines;
import static io.ferrystream.ferry.planner.PlannerTests.newTableEnv;
import static io.ferrystream.ferry.planner.PlannerTests.physicalPlan;
import static io.ferrystream.ferry.planner.PlannerTests.twoPhaseTerms;
import static io.ferrystream.ferry.planner.PlannerTests.withoutFerryTerms;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.flink.table.api.StatementSet;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.functions.AggregateFunction;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;
import java.util.Map;

/** EXPLAIN of queries with Ferry installed: which GroupAggregates are native, and why not. */
class FerryExplainTest {
    private static String explain(String sql, Map<String, String> options) {
        TableEnvironment tEnv = newTableEnv(true);
        options.forEach((k, v) -> tEnv.getConfig().set(k, v));
        String explained = tEnv.explainSql(sql);
        // Ferry changes nothing but its own terms: same plan, traits, retraction flags
        TableEnvironment stock = newTableEnv(false);
        options.forEach((k, v) -> stock.getConfig().set(k, v));
        assertEquals(stock.explainSql(sql), withoutFerryTerms(explained).stripTrailing() + "\n", sql);
        return physicalPlan(explained);
    }

    private static String explain(String sql) {
        return explain(sql, Map.of());
    }

    /** The ferry terms of the plan's GroupAggregates and Ranks; each must have one. */
    private static List<String> decisions(String sql, Map<String, String> options) {
        String plan = explain(sql, options);
        List<String> terms = ferryTerms(plan);
        assertEquals(groupAggregateLines(plan).size() + DeduplicateExplainTest.rankLines(plan).size(), terms.size(), plan);
        assertFalse(terms.isEmpty(), plan);
        return terms;
    }

    private static List<String> decisions(String sql) {
        return decisions(sql, Map.of());
    }

    private static void assertFallback(String expectedReason, String sql, Map<String, String> options) {
        assertEquals(List.of(expectedReason), decisions(sql, options), sql);
    }

    private static void assertFallback(String expectedReason, String sql) {
        assertFallback(expectedReason, sql, Map.of());
    }

    @ParameterizedTest
    @ValueSource(strings = {"t", "s", "i", "b", "f", "d"})
    void everyNativeFunctionOverEveryNumericType(String x) {
        String sql = String.format(
                "SELECT k, SUM(%1$s), COUNT(*), COUNT(%1$s), MIN(%1$s), MAX(%1$s) FROM T GROUP BY k", x);
        assertEquals(List.of("native"), decisions(sql), sql);
        sql = String.format("SELECT k, SUM(%1$s), AVG(%1$s), COUNT(*) FROM T GROUP BY k", x);
        assertEquals(List.of("native"), decisions(sql), sql);
    }

    @Test
    void mixedTypesAndKeys() {
        assertEquals(
                List.of("native"),
                decisions("SELECT k, k2, SUM(b), COUNT(*), COUNT(i), MIN(d), MAX(f), AVG(i) FROM T GROUP BY k, k2"));
        // keys of any carried type, COUNT over any carried type
        assertEquals(
                List.of("native"),
                decisions("SELECT ts, m, COUNT(*), COUNT(m), COUNT(ts), SUM(b) FROM T GROUP BY ts, m"));
    }

    @Test
    void globalAggregation() {
        assertEquals(List.of("native"), decisions("SELECT COUNT(*), SUM(b), MIN(d), MAX(i), AVG(f) FROM T"));
    }

    /**
     * With COUNT(v) and AVG(v) on the same column Calcite's cost-based
     * AggregateReduceFunctionsRule rewrites AVG(v) to SUM/COUNT and SUM(v) to
     * CASE(COUNT(v) = 0, NULL, $SUM0(v)); Go runs $SUM0 natively.
     */
    @ParameterizedTest
    @ValueSource(strings = {"b", "i", "d", "m"})
    void avgWithCountOfTheSameColumnBecomesSum0(String v) {
        String sql = String.format(
                "SELECT k, SUM(%1$s), COUNT(*), COUNT(%1$s), MIN(%1$s), MAX(%1$s), AVG(%1$s) FROM T GROUP BY k", v);
        String plan = explain(sql);
        assertTrue(plan.contains("$SUM0(" + v + ")"), plan);
        assertEquals(List.of("native"), ferryTerms(plan));
    }

    @Test
    void groupByOverGroupByIsNativeOnBothNodes() {
        String plan =
                explain("SELECT c, COUNT(*), SUM(s), MIN(mx), MAX(mx), AVG(a) FROM ("
                        + " SELECT k, COUNT(*) AS c, SUM(b) AS s, MAX(d) AS mx, AVG(i) AS a FROM T GROUP BY k"
                        + ") GROUP BY c");
        assertEquals(List.of("native", "native"), ferryTerms(plan));
        // the outer node consumes the inner one's retractions
        assertTrue(plan.contains("MIN_RETRACT(mx)"), plan);
    }

    /** Ferry nodes inside larger plans: everything around them stays Flink's, byte for byte. */
    @Test
    void surroundingPlansAreUnchanged() {
        List<String> queries =
                List.of(
                        // a join of two aggregates
                        "SELECT a.k, a.c, b.s FROM (SELECT k, COUNT(*) AS c FROM T GROUP BY k) a"
                                + " JOIN (SELECT k, SUM(b) AS s FROM T GROUP BY k) b ON a.k = b.k",
                        // UNION ALL of aggregates, then an aggregate over the union
                        "SELECT k, SUM(c) FROM (SELECT k, COUNT(*) AS c FROM T GROUP BY k"
                                + " UNION ALL SELECT k, MAX(b) AS c FROM T GROUP BY k) GROUP BY k",
                        // Top-N over an aggregate
                        "SELECT * FROM (SELECT k, s, ROW_NUMBER() OVER (ORDER BY s DESC) AS rn FROM"
                                + " (SELECT k, SUM(b) AS s FROM T GROUP BY k)) WHERE rn <= 3",
                        // a filter and a projection over an aggregate
                        "SELECT k, s * 2 FROM (SELECT k, SUM(b) AS s, MIN(d) AS m FROM T GROUP BY k) WHERE m > 0");
        for (String sql : queries) {
            List<String> terms = decisions(sql);
            assertTrue(terms.stream().allMatch("native"::equals), sql + ": " + terms);
        }
        // the non-deterministic-update resolver rewrites the plan after optimization (copying rels)
        List<String> terms =
                decisions(
                        "SELECT k, COUNT(*), SUM(b) FROM T GROUP BY k",
                        Map.of("table.optimizer.non-deterministic-update.strategy", "TRY_RESOLVE"));
        assertEquals(List.of("native"), terms);
    }

    @Test
    void distinct() {
        assertEquals(
                List.of("native"),
                decisions("SELECT k, SUM(b), COUNT(DISTINCT i), SUM(DISTINCT b), MAX(DISTINCT i) FROM T GROUP BY k"));
        assertFallback("aggs[1]: AVG(DISTINCT): not native yet", "SELECT k, SUM(b), AVG(DISTINCT i) FROM T GROUP BY k");
    }

    @Test
    void filter() {
        assertEquals(
                List.of("native"),
                decisions("SELECT k, SUM(b) FILTER (WHERE i > 0), COUNT(DISTINCT i) FILTER (WHERE b < 5) FROM T GROUP BY k"));
    }

    @Test
    void decimalAndStringAggregatesAreNative() {
        assertEquals(List.of("native"),
                decisions("SELECT k2, SUM(m), AVG(m), MIN(m), MAX(m), COUNT(DISTINCT m), MIN(k), MAX(k), COUNT(k) FROM T GROUP BY k2"));
    }

    @Test
    void miniBatch() {
        Map<String, String> miniBatch =
                Map.of(
                        "table.exec.mini-batch.enabled", "true",
                        "table.exec.mini-batch.allow-latency", "1 s",
                        "table.exec.mini-batch.size", "100",
                        "table.optimizer.agg-phase-strategy", "ONE_PHASE");
        assertEquals(List.of("native"), decisions("SELECT k, SUM(b), COUNT(DISTINCT i) FROM T GROUP BY k", miniBatch));
        Map<String, String> withTtl = new java.util.HashMap<>(miniBatch);
        withTtl.put("table.exec.state.ttl", "1 h");
        assertEquals(List.of("native"), decisions("SELECT k, SUM(b) FROM T GROUP BY k", withTtl));
    }

    static final Map<String, String> TWO_PHASE =
            Map.of(
                    "table.exec.mini-batch.enabled", "true",
                    "table.exec.mini-batch.allow-latency", "1 s",
                    "table.exec.mini-batch.size", "100");

    /** The ferry terms of a two-phase plan's aggregates (PlannerTests#twoPhaseTerms); each has one. */
    private static List<String> twoPhaseDecisions(String sql, Map<String, String> options) {
        String plan = explain(sql, options);
        List<String> terms = twoPhaseTerms(plan);
        assertFalse(terms.isEmpty(), "no two-phase aggregate in:\n" + plan);
        assertTrue(terms.stream().noneMatch(t -> t.endsWith(": -")), plan);
        return terms;
    }

    @ParameterizedTest
    @ValueSource(strings = {"AUTO", "TWO_PHASE"})
    void twoPhaseBothHalvesNative(String strategy) {
        Map<String, String> options = new java.util.HashMap<>(TWO_PHASE);
        options.put("table.optimizer.agg-phase-strategy", strategy);
        assertEquals(
                List.of("Global: native", "Local: native"),
                twoPhaseDecisions(
                        "SELECT k, COUNT(*), COUNT(i), SUM(b), MIN(d), MAX(m), AVG(f), SUM(s) FILTER (WHERE i > 0),"
                                + " MIN(k2), MAX(ts) FROM T GROUP BY k",
                        options));
        // Retracting input: the inner aggregate's changelog; Flink inserts count1 into the partial rows.
        assertEquals(
                List.of("Global: native", "Local: native", "Global: native", "Local: native"),
                twoPhaseDecisions(
                        "SELECT c, SUM(top), AVG(top), COUNT(top) FROM"
                                + " (SELECT k, MAX(i) AS top, COUNT(*) AS c FROM T GROUP BY k) GROUP BY c",
                        options));
        // With TTL only the global keeps state; the local has none to expire.
        Map<String, String> ttl = new java.util.HashMap<>(options);
        ttl.put("table.exec.state.ttl", "1 h");
        assertEquals(List.of("Global: native", "Local: native"), twoPhaseDecisions("SELECT k, SUM(b) FROM T GROUP BY k", ttl));
    }

    /**
     * The MapViews of DISTINCT calls and of MIN/MAX with retraction cross between the halves; a
     * DISTINCT call whose global result depends on a HashMap's order keeps both halves Flink's,
     * with the same reason: the partial row is one format.
     */
    @Test
    void twoPhaseMapViewPartials() {
        assertEquals(
                List.of("Global: native", "Local: native"),
                twoPhaseDecisions("SELECT k, SUM(b), COUNT(DISTINCT i), SUM(DISTINCT b) FILTER (WHERE i > 0) FROM T GROUP BY k", TWO_PHASE));
        String order = "aggs[1]: SUM(DISTINCT) over DOUBLE: the global aggregate folds the values in a java.util.HashMap's order:"
                + " not native yet";
        assertEquals(
                List.of("Global: " + order, "Local: " + order),
                twoPhaseDecisions("SELECT k, COUNT(DISTINCT i), SUM(DISTINCT CAST(b AS DOUBLE)) FROM T GROUP BY k", TWO_PHASE));
        assertEquals(
                List.of("Global: native", "Local: native", "Global: native", "Local: native"),
                twoPhaseDecisions(
                        "SELECT c, MIN(top), SUM(top) FROM (SELECT k, MAX(i) AS top, COUNT(*) AS c FROM T GROUP BY k) GROUP BY c",
                        TWO_PHASE));
    }

    /**
     * Split DISTINCT: Flink plans Local → IncrementalGroupAggregate → Global, all three native:
     * the local writes the DISTINCT calls' maps into Flink's partial rows, the incremental node
     * merges them into its state, and the global merges plain counts.
     */
    @Test
    void splitDistinctAllNative() {
        Map<String, String> split = new java.util.HashMap<>(TWO_PHASE);
        split.put("table.optimizer.distinct-agg.split.enabled", "true");
        String plan = explain("SELECT k, COUNT(DISTINCT i), SUM(b) FROM T GROUP BY k", split);
        assertEquals(List.of("Global: native", "Incremental: native", "Local: native"), twoPhaseTerms(plan), plan);
        // both exchanges carry frames: incremental → global by the final key, local → incremental
        // by the partial key (the key and its bucket)
        assertEquals(List.of("columnar", "columnar"), exchangeTerms(plan), plan);
        assertTrue(plan.contains("Exchange(distribution=[hash[k]], ferry=[columnar])"), plan);
        assertTrue(plan.contains("Exchange(distribution=[hash[k, $f3]], ferry=[columnar])"), plan);
        split.put("ferry.incremental-group-aggregate.enabled", "false");
        plan = explain("SELECT k, COUNT(DISTINCT i), SUM(b) FROM T GROUP BY k", split);
        assertEquals(List.of("Global: native", "Incremental: disabled by ferry.incremental-group-aggregate.enabled=false",
                "Local: native"), twoPhaseTerms(plan), plan);
        // Flink's incremental aggregate reads and writes rows: Flink's exchanges, without a term
        assertEquals(List.of(), exchangeTerms(plan), plan);
    }

    /**
     * Split DISTINCT over retracting input: Flink's final global aggregate counts records in the
     * sum of the partial counts ($SUM0 over BIGINT), not in a COUNT(*); Ferry's global reads it
     * too, so every node runs natively.
     */
    @Test
    void twoPhaseRecordCounterOtherThanCountStar() {
        Map<String, String> split = new java.util.HashMap<>(TWO_PHASE);
        split.put("table.optimizer.distinct-agg.split.enabled", "true");
        String plan = explain(
                "SELECT c, COUNT(DISTINCT top), COUNT(*) FROM (SELECT k, MAX(i) AS top, COUNT(*) AS c FROM T GROUP BY k) GROUP BY c",
                split);
        List<String> terms = twoPhaseTerms(plan);
        assertTrue(plan.contains("$SUM0_RETRACT(count1$1)"), plan);
        assertEquals(List.of("Global: native", "Incremental: native", "Local: native"), terms.subList(0, 3), plan);
        // the inner GROUP BY's halves, last in plan order, stay native
        assertEquals(List.of("Global: native", "Local: native"), terms.subList(terms.size() - 2, terms.size()), plan);
    }

    /** Each half falls back on its own: the other stays native, reading or writing Flink's partial rows. */
    @Test
    void twoPhaseHalvesFallBackIndependently() {
        Map<String, String> noLocal = new java.util.HashMap<>(TWO_PHASE);
        noLocal.put("ferry.local-group-aggregate.enabled", "false");
        assertEquals(
                List.of("Global: native", "Local: disabled by ferry.local-group-aggregate.enabled=false"),
                twoPhaseDecisions("SELECT k, SUM(b), AVG(d) FROM T GROUP BY k", noLocal));
        Map<String, String> noGlobal = new java.util.HashMap<>(TWO_PHASE);
        noGlobal.put("ferry.global-group-aggregate.enabled", "false");
        assertEquals(
                List.of("Global: disabled by ferry.global-group-aggregate.enabled=false", "Local: native"),
                twoPhaseDecisions("SELECT k, SUM(b), AVG(d) FROM T GROUP BY k", noGlobal));
    }

    @Test
    void ttlFromConfiguration() {
        assertEquals(List.of("native"), decisions("SELECT k, SUM(b) FROM T GROUP BY k", Map.of("table.exec.state.ttl", "1 h")));
        // DISTINCT values and MIN/MAX-with-retraction multisets live in MapViews whose entries
        // expire one by one: Ferry's value sets and multisets do too.
        assertEquals(List.of("native"), decisions("SELECT k, COUNT(DISTINCT b), SUM(DISTINCT b) FROM T GROUP BY k",
                Map.of("table.exec.state.ttl", "1 h")));
        assertEquals(List.of("native", "native"), decisions(
                "SELECT k, MIN(c), MAX(c) FROM (SELECT k, COUNT(*) AS c FROM T GROUP BY k, b) GROUP BY k",
                Map.of("table.exec.state.ttl", "1 h")));
    }

    @Test
    void ttlFromHint() {
        assertEquals(List.of("native"), decisions("SELECT /*+ STATE_TTL('T' = '1d') */ k, SUM(b) FROM T GROUP BY k"));
    }

    @Test
    void zeroTtlHintOverridesConfiguration() {
        assertEquals(
                List.of("native"),
                decisions(
                        "SELECT /*+ STATE_TTL('T' = '0s') */ k, SUM(b) FROM T GROUP BY k",
                        Map.of("table.exec.state.ttl", "1 h")));
    }

    @Test
    void disabledByOption() {
        String sql = "SELECT k, SUM(b) FROM T GROUP BY k";
        assertFallback("disabled by ferry.enabled=false", sql, Map.of(FerryOptions.ENABLED.key(), "false"));
        assertFallback(
                "disabled by ferry.group-aggregate.enabled=false",
                sql,
                Map.of(GroupAggregateKind.ENABLED.key(), "false"));
    }

    @Test
    void rocksDbAndForStWithHeapTimersFallBack() {
        String sql = "SELECT k, SUM(b) FROM T GROUP BY k";
        for (String backend : new String[] {"rocksdb", "forst"}) {
            String timers = "state.backend." + backend + ".timer-service.factory";
            assertFallback(
                    (backend.equals("rocksdb") ? "RocksDB" : "ForSt") + " with heap timers (" + timers
                            + "=HEAP) cannot checkpoint native state next to them",
                    sql,
                    Map.of("state.backend.type", backend, timers, "HEAP"));
            assertEquals(List.of("native"), decisions(sql, Map.of("state.backend.type", backend)));
        }
    }

    /**
     * Where Flink would plan its async-state GROUP BY, Ferry's operator runs (its state is its own),
     * on every backend, ForSt included.
     */
    @Test
    void asyncStateRunsNatively() {
        for (String backend : new String[] {"hashmap", "rocksdb", "forst"}) {
            Map<String, String> async = Map.of("table.exec.async-state.enabled", "true", "state.backend.type", backend);
            assertEquals(List.of("native"), decisions("SELECT k, SUM(b), MAX(i) FROM T GROUP BY k", async));
            assertEquals(List.of("native"), decisions("SELECT k, COUNT(DISTINCT i) FROM T GROUP BY k", async));
        }
    }

    @Test
    void distinctSplit() {
        Map<String, String> split =
                Map.of(
                        "table.optimizer.distinct-agg.split.enabled", "true",
                        "table.exec.mini-batch.enabled", "false");
        // the partial (per key and hash bucket) and the final aggregate are both native
        List<String> terms = decisions("SELECT k, COUNT(DISTINCT i), SUM(DISTINCT b), MAX(i) FROM T GROUP BY k", split);
        assertEquals(List.of("native", "native"), terms);
    }

    @Test
    void otherFunctions() {
        // SINGLE_VALUE: a scalar sub-query, native (its error too: FerryExecutionTest.singleValue)
        String plan = explain("SELECT k2, (SELECT b FROM T WHERE b = 1) FROM T GROUP BY k2");
        assertTrue(ferryTerms(plan).stream().allMatch(t -> t.equals("native")) && !ferryTerms(plan).isEmpty(), plan);
        // STDDEV_POP is reduced to Flink's internal $WELFORD_M2: native over numbers, not DECIMAL
        assertEquals(List.of("native"), decisions("SELECT k, STDDEV_POP(d), VAR_SAMP(i) FROM T GROUP BY k"));
        assertFallback("aggs[0]: WELFORD_M2 over DECIMAL(10, 2): not native yet", "SELECT k, STDDEV_POP(m) FROM T GROUP BY k");
        assertFallback("aggs[0]: aggregate function COLLECT: not native yet", "SELECT k2, COLLECT(k) FROM T GROUP BY k2");
        assertEquals(List.of("native"), decisions("SELECT k2, LISTAGG(k), LISTAGG(k, '; ') FROM T GROUP BY k2"));
    }

    /** A user-defined aggregate function, even one named like a built-in. */
    @Test
    void userDefinedAggregateFunction() {
        TableEnvironment tEnv = newTableEnv(true);
        tEnv.createTemporarySystemFunction("MY_SUM", MySum.class);
        String plan = physicalPlan(tEnv.explainSql("SELECT k, MY_SUM(b) FROM T GROUP BY k"));
        assertEquals(List.of("aggs[0]: aggregate function MY_SUM: not native yet"), ferryTerms(plan), plan);
    }

    /** SUM over BIGINT as a UDAF. */
    public static class MySum extends AggregateFunction<Long, MySum.Acc> {
        /** Accumulator. */
        public static class Acc {
            public long sum;
        }

        @Override
        public Acc createAccumulator() {
            return new Acc();
        }

        public void accumulate(Acc acc, Long v) {
            if (v != null) {
                acc.sum += v;
            }
        }

        @Override
        public Long getValue(Acc acc) {
            return acc.sum;
        }
    }

    @Test
    void firstLastValueAndListAggOnRetractingInput() {
        assertEquals(List.of("native"), decisions("SELECT k, FIRST_VALUE(ts), LAST_VALUE(ltz), LAST_VALUE(k2) FROM T GROUP BY k",
                Map.of()));
        String retracting = "SELECT k2, LAST_VALUE(c), FIRST_VALUE(s), LISTAGG(s), LISTAGG(s, '|') FROM "
                + "(SELECT k, k2, COUNT(*) AS c, CAST(MAX(k) AS STRING) AS s FROM T GROUP BY k, k2) GROUP BY k2";
        assertEquals(List.of("native", "native"), decisions(retracting));
        // Flink's FIRST_VALUE/LAST_VALUE with retraction key an order map by wall-clock millisecond
        assertEquals(
                List.of("aggs[0]: idle-state TTL with LAST_VALUE with retraction: not native (Flink's order map has one entry per"
                        + " wall-clock millisecond, so which rows share an entry and its expiry depends on the clock)", "native"),
                decisions(retracting, Map.of("table.exec.state.ttl", "1 h")));
        assertEquals(List.of("native", "native"),
                decisions("SELECT k2, LISTAGG(s), LISTAGG(s, '|') FROM (SELECT k, k2, CAST(MAX(k) AS STRING) AS s FROM T GROUP BY k, k2)"
                        + " GROUP BY k2", Map.of("table.exec.state.ttl", "1 h")));
        assertEquals(List.of("native"), decisions("SELECT k, FIRST_VALUE(b > 0), LAST_VALUE(b < 0) FROM T GROUP BY k"));
    }

    @Test
    void typesTheArrowLayerCannotCarry() {
        assertFallback(
                "argument arr of type ARRAY<INT>: not carried across the native boundary",
                "SELECT k, COUNT(arr) FROM T GROUP BY k");
    }

    @Test
    void plansWithoutCandidatesAreUnchanged() {
        for (String sql : List.of(
                "SELECT k, b * 2 FROM T WHERE i > 3",
                "SELECT k, b, ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts) FROM T",
                "SELECT DISTINCT k FROM T WHERE 1 = 0")) {
            String plan = explain(sql); // also compares with Flink alone
            assertEquals(List.of(), ferryTerms(plan), plan);
        }
    }

    /**
     * Sub-plan reuse merges two equal Ferry nodes into one, as Flink merges its own: Ferry nodes
     * need no per-instance digest (each prints ferry=[...], and equal digests mean equal decisions).
     */
    @Test
    void subPlanReuseMergesEqualFerryNodes() {
        String[] explained = new String[2];
        for (int ferry = 0; ferry < 2; ferry++) {
            TableEnvironment tEnv = newTableEnv(ferry == 1);
            tEnv.executeSql("CREATE TEMPORARY TABLE S1 (k STRING, c BIGINT) WITH ('connector' = 'blackhole')");
            tEnv.executeSql("CREATE TEMPORARY TABLE S2 (k STRING, c BIGINT) WITH ('connector' = 'blackhole')");
            StatementSet set = tEnv.createStatementSet();
            set.addInsertSql("INSERT INTO S1 SELECT k, SUM(b) FROM T GROUP BY k");
            set.addInsertSql("INSERT INTO S2 SELECT k, SUM(b) FROM T GROUP BY k");
            explained[ferry] = set.explain();
        }
        assertEquals(explained[0], withoutFerryTerms(explained[1]).stripTrailing() + "\n");
        String execPlan = explained[1].substring(explained[1].indexOf("== Optimized Execution Plan =="));
        assertTrue(execPlan.contains("ferry=[native])(reuse_id=[1])"), execPlan);
        assertEquals(1, groupAggregateLines(execPlan).size(), execPlan);
        assertEquals(2, execPlan.split("Reused\\(reference_id=\\[1\\]\\)", -1).length - 1, execPlan);
    }

    /**
     * A compiled plan (FLIP-190) serialises a Ferry node as Flink's stream-exec-group-aggregate_1:
     * compiling works, and a plan loaded later runs Flink's operator.
     */
    @Test
    void compiledPlansRecordFlinksNode() {
        TableEnvironment tEnv = newTableEnv(true);
        tEnv.executeSql("CREATE TEMPORARY TABLE S1 (k STRING, c BIGINT) WITH ('connector' = 'blackhole')");
        String json = tEnv.compilePlanSql("INSERT INTO S1 SELECT k, SUM(b) FROM T GROUP BY k").asJsonString();
        assertTrue(json.contains("\"stream-exec-group-aggregate_1\""), json);
        assertFalse(json.contains("Ferry"), json);
    }

    /** The same for the two halves of a two-phase plan: Flink's local and global exec nodes. */
    @Test
    void compiledTwoPhasePlansRecordFlinksNodes() {
        TableEnvironment tEnv = newTableEnv(true);
        TWO_PHASE.forEach((k, v) -> tEnv.getConfig().set(k, v));
        tEnv.executeSql("CREATE TEMPORARY TABLE S1 (k STRING, c BIGINT) WITH ('connector' = 'blackhole')");
        String sql = "INSERT INTO S1 SELECT k, SUM(b) FROM T GROUP BY k";
        assertEquals(List.of("Global: native", "Local: native"), twoPhaseTerms(physicalPlan(tEnv.explainSql(sql))));
        String json = tEnv.compilePlanSql(sql).asJsonString();
        assertTrue(json.contains("\"stream-exec-local-group-aggregate_1\"")
                && json.contains("\"stream-exec-global-group-aggregate_1\""), json);
        assertFalse(json.contains("Ferry"), json);
    }
}
