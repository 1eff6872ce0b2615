package io.ferrystream.ferry.planner;

import static io.ferrystream.ferry.planner.PlannerTests.ferryTerms;
import static io.ferrystream.ferry.planner.PlannerTests.newTableEnv;
import static io.ferrystream.ferry.planner.PlannerTests.physicalPlan;
import static io.ferrystream.ferry.planner.PlannerTests.withoutFerryTerms;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrystream.ferry.kinds.deduplicate.DeduplicateSpec;
import io.ferrystream.ferry.kinds.topn.TopNKind;
import io.ferrystream.ferry.kinds.topn.TopNSpec;

import org.apache.calcite.rel.RelNode;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableException;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * EXPLAIN of Top-N queries with Ferry installed: every rank Flink translates to {@code
 * StreamExecRank} (not a deduplication) is the Top-N kind's candidate, native where Flink's
 * translation picks {@code AppendOnlyTopNFunction}, {@code AppendOnlyFirstNFunction} or {@code
 * FastTop1Function}, otherwise with the reason; Ferry changes nothing else in EXPLAIN.
 */
class TopNExplainTest {
    static final String TABLE =
            "CREATE TEMPORARY TABLE R (k BIGINT, g INT, s STRING, v INT, d DOUBLE, f FLOAT, m DECIMAL(10, 2),"
                    + " rt TIMESTAMP(3), bin BYTES, arr ARRAY<INT>, ms BIGINT, lt AS TO_TIMESTAMP_LTZ(ms, 3),"
                    + " pt AS PROCTIME(), WATERMARK FOR rt AS rt) WITH ('connector' = 'datagen')";

    /** An updating source without a primary key: a rank over it retracts (RetractStrategy). */
    static final String CDC_TABLE = "CREATE TEMPORARY TABLE C (k BIGINT, v INT, ts TIMESTAMP(3))"
            + " WITH ('connector' = 'values', 'changelog-mode' = 'I,UB,UA,D')";
    static final String CDC_TABLE_WITH_DOUBLE = "CREATE TEMPORARY TABLE C2 (k BIGINT, v INT, d DOUBLE)"
            + " WITH ('connector' = 'values', 'changelog-mode' = 'I,UB,UA,D')";

    /** Per (k, g) the largest v and the row count: monotonic, increasing, upsert-keyed by (k, g). */
    static final String AGG = "(SELECT k, g, MAX(v) AS mx, COUNT(*) AS c, SUM(v) AS sm FROM R GROUP BY k, g)";

    static TableEnvironment env(boolean ferry, Map<String, String> options) {
        TableEnvironment tEnv = newTableEnv(ferry);
        options.forEach((k, v) -> tEnv.getConfig().set(k, v));
        tEnv.executeSql(TABLE);
        tEnv.executeSql(CDC_TABLE);
        tEnv.executeSql(CDC_TABLE_WITH_DOUBLE);
        return tEnv;
    }

    /**
     * A ROW_NUMBER over {@code table} partitioned by {@code keys}, ordered by {@code order},
     * filtered by {@code filter} on {@code rn}; {@code columns} are selected.
     */
    static String rank(String table, String columns, String keys, String order, String filter) {
        return "SELECT " + columns + " FROM (SELECT *, ROW_NUMBER() OVER ("
                + (keys.isEmpty() ? "" : "PARTITION BY " + keys + " ") + "ORDER BY " + order + ") AS rn FROM " + table
                + ") WHERE " + filter;
    }

    /** Top-3 of R per k by {@code order}, the rank number selected or not. */
    static String topN(String order, boolean withRowNumber) {
        return rank("R", "k, s, v, rt" + (withRowNumber ? ", rn" : ""), "k", order, "rn <= 3");
    }

    /** The ferry terms of the plan's ranks; Ferry changes nothing else in EXPLAIN. */
    static List<String> decisions(String sql, Map<String, String> options) {
        String explained = env(true, options).explainSql(sql);
        assertEquals(env(false, options).explainSql(sql), withoutFerryTerms(explained).stripTrailing() + "\n", sql);
        List<String> terms = new ArrayList<>();
        for (String line : DeduplicateExplainTest.rankLines(physicalPlan(explained))) {
            terms.addAll(ferryTerms(line));
        }
        return terms;
    }

    static List<String> decisions(String sql) {
        return decisions(sql, Map.of());
    }

    /**
     * The reasons of the Top-N candidates of {@code sql}, a query Flink plans but whose plan it
     * rejects when it translates it (EXPLAIN translates it too): Ferry falls back to Flink's
     * operator, which fails as without Ferry.
     */
    static List<String> rejected(String sql) {
        return rejected(sql, Map.of());
    }

    static List<String> rejected(String sql, Map<String, String> options) {
        Exception flinks = assertThrows(TableException.class, () -> env(false, options).explainSql(sql));
        List<RelNode> plans;
        try (Ferry.PlanCapture capture = Ferry.capturePlans()) {
            Exception ferrys = assertThrows(TableException.class, () -> env(true, options).explainSql(sql));
            assertEquals(flinks.getMessage(), ferrys.getMessage());
            plans = capture.plans();
        }
        List<NativeCandidate> found = new ArrayList<>();
        for (RelNode root : plans) {
            collect(root, found);
        }
        assertTrue(!found.isEmpty(), sql);
        List<String> reasons = new ArrayList<>();
        for (NativeCandidate c : found) {
            reasons.add(c.fallbackReason().orElse("native"));
        }
        return reasons.stream().distinct().toList();
    }

    /** The physical plan's Rank line of {@code sql} (exactly one), with Ferry off. */
    static String flinksRank(String sql, Map<String, String> options) {
        List<String> ranks = DeduplicateExplainTest.rankLines(physicalPlan(env(false, options).explainSql(sql)));
        assertEquals(1, ranks.size(), ranks.toString());
        return ranks.get(0);
    }

    @Test
    void appendOnlyTopNIsNative() {
        for (String order : List.of("v DESC", "v", "s, v DESC", "m DESC", "rt DESC", "rt", "lt", "v DESC NULLS LAST",
                "v NULLS FIRST", "v DESC, s, rt, m")) {
            for (boolean rn : List.of(false, true)) {
                String sql = topN(order, rn);
                assertTrue(flinksRank(sql, Map.of()).contains("strategy=[AppendFastStrategy]"), sql);
                assertEquals(List.of("native"), decisions(sql), sql);
            }
        }
        // an offset, several partition keys, no partition key (one subtask)
        assertEquals(List.of("native"), decisions(rank("R", "k, v, rn", "k", "v DESC", "rn BETWEEN 3 AND 5")));
        assertEquals(List.of("native"), decisions(rank("R", "k, v", "k", "v DESC", "rn > 2 AND rn <= 5")));
        assertEquals(List.of("native"), decisions(rank("R", "k, g, s, v", "k, g", "v DESC", "rn <= 10")));
        assertEquals(List.of("native"), decisions(rank("R", "k, s, v, rn", "", "v DESC", "rn <= 10")));
        // the processing time descending is no first-N: Flink sorts on it (its rows hold NULL there)
        assertEquals(List.of("native"), decisions(topN("pt DESC", false)));
        // a DOUBLE that is no sort key crosses
        assertEquals(List.of("native"), decisions(rank("R", "k, d, v", "k", "v DESC", "rn <= 3")));
        // async state: Flink's async twin of the function, the same results
        assertEquals(List.of("native"), decisions(topN("v DESC", true), Map.of("table.exec.async-state.enabled", "true")));
    }

    @Test
    void firstNIsNative() {
        // (rn = 1 is a deduplication, rn selected or not: Flink then plans rn as a constant)
        for (String filter : List.of("rn <= 3", "rn BETWEEN 2 AND 4")) {
            for (boolean withRowNumber : List.of(false, true)) {
                String sql = rank("R", "k, s, v" + (withRowNumber ? ", rn" : ""), "k", "pt", filter);
                assertEquals(List.of("native"), decisions(sql), sql);
            }
        }
        assertEquals(List.of("native"), decisions(rank("R", "k, s, v", "", "pt", "rn <= 5")));
        // Flink's AppendOnlyFirstNFunction applies the idle-state TTL as the state's, per key
        assertEquals(List.of("native"), decisions(rank("R", "k, s, v", "k", "pt", "rn <= 3"), Map.of("table.exec.state.ttl", "1 h")));
    }

    @Test
    void top1IsNative() {
        // append-only input, ORDER BY no time attribute (or rn selected): FastTop1Function
        assertEquals(List.of("native"), decisions(rank("R", "k, s, v", "k", "v DESC", "rn = 1")));
        assertEquals(List.of("native"), decisions(rank("R", "k, s, v", "k", "v DESC, rt", "rn <= 1")));
        assertEquals(List.of("native"), decisions(rank("R", "k, s, v, rn", "k", "v DESC", "rn = 1")));
        assertEquals(List.of("native"), decisions(rank("R", "k, s, v", "k", "rt DESC, v", "rn = 1")));
        // an upsert input monotonic on the ORDER BY (UpdateFastStrategy), the partition in its upsert key
        for (String order : List.of("mx DESC", "c DESC", "c DESC, mx DESC")) {
            String sql = rank(AGG, "k, g, mx, c", "k", order, "rn = 1");
            assertTrue(flinksRank(sql, Map.of()).contains("strategy=[UpdateFastStrategy[0,1]]"), flinksRank(sql, Map.of()));
            assertEquals(List.of("native"), decisions(sql), sql);
        }
    }

    /** Inputs with retractions: RetractableTopNFunction. */
    @Test
    void retractableTopNIsNative() {
        // an updating source without an upsert key
        for (String filter : List.of("rn <= 3", "rn = 1")) {
            String sql = rank("C", "k, v, ts", "k", "v DESC, ts", filter);
            assertTrue(flinksRank(sql, Map.of()).contains("strategy=[RetractStrategy]"), flinksRank(sql, Map.of()));
            assertEquals(List.of("native"), decisions(sql), sql);
        }
        // an offset with the rank number
        assertEquals(List.of("native"), decisions(rank("C", "k, v, rn", "k", "v DESC", "rn BETWEEN 2 AND 4")));
        // an aggregate not monotonic on the ORDER BY (a SUM may fall), no partition key
        String sum = rank(AGG, "k, g, sm", "k", "sm DESC", "rn = 1");
        assertTrue(flinksRank(sum, Map.of()).contains("strategy=[RetractStrategy]"), flinksRank(sum, Map.of()));
        assertEquals(List.of("native"), decisions(sum));
        assertEquals(List.of("native"), decisions(rank(AGG, "k, g, sm, rn", "", "sm, k, g", "rn <= 5")));
    }

    /** An upsert input monotonic on the ORDER BY, more than the top 1: UpdatableTopNFunction. */
    @Test
    void updatableTopNIsNative() {
        for (String order : List.of("mx DESC", "c DESC, g")) {
            for (String columns : List.of("k, g, mx, c", "k, g, mx, c, rn")) {
                String sql = rank(AGG, columns, "k", order, "rn <= 3");
                assertTrue(flinksRank(sql, Map.of()).contains("strategy=[UpdateFastStrategy[0,1]]"), flinksRank(sql, Map.of()));
                assertEquals(List.of("native"), decisions(sql), sql);
            }
        }
        // no partition key, an offset
        assertEquals(List.of("native"), decisions(rank(AGG, "k, g, mx, rn", "", "mx DESC", "rn BETWEEN 2 AND 6")));
    }

    @Test
    void fallbacks() {
        // RANK and DENSE_RANK: Flink plans them, and rejects them when it translates the plan
        assertEquals(List.of("RANK() on a streaming table: Flink rejects it at translation"),
                rejected("SELECT k, v FROM (SELECT *, RANK() OVER (PARTITION BY k ORDER BY v DESC) AS r FROM R) WHERE r <= 3"));
        assertEquals(List.of("DENSE_RANK() on a streaming table: Flink rejects it at translation"),
                rejected("SELECT k, v FROM (SELECT *, DENSE_RANK() OVER (PARTITION BY k ORDER BY v) AS r FROM R) WHERE r <= 3"));
        // rn <= a column: a VariableRankRange
        assertEquals(List.of("a Top-N whose rank end is the column g (a variable rank range): not native yet"),
                decisions(rank("R", "k, s, v", "k", "v DESC", "rn <= g")));
        // the retracting Top-N: an offset without the rank number, a FLOAT/DOUBLE field anywhere
        assertEquals(List.of("a Top-N over an updating input (RetractableTopNFunction) with an offset (rank 2 to 4) and"
                + " without the rank number selected: not native yet (Flink's function then stores rows with the row kind it"
                + " emitted them with, which its retractions compare)"), decisions(rank("C", "k, v", "k", "v DESC", "rn BETWEEN 2 AND 4")));
        assertEquals(List.of("input field d of type DOUBLE in a Top-N over an updating input (RetractableTopNFunction): not"
                + " native yet (Flink's equaliser compares FLOAT/DOUBLE by value or by bits, depending on the form a row arrives"
                + " in)"), decisions(rank("C2", "k, v, d", "k", "v DESC", "rn <= 3")));
        // the updatable Top-N: a FLOAT/DOUBLE row key (a DOUBLE group key)
        String doubleKey = rank("(SELECT k, d, MAX(v) AS mx FROM R GROUP BY k, d)", "k, d, mx", "k", "mx DESC", "rn <= 3");
        assertTrue(flinksRank(doubleKey, Map.of()).contains("strategy=[UpdateFastStrategy[0,1]]"), flinksRank(doubleKey, Map.of()));
        assertEquals(List.of("row key field d of type DOUBLE of a Top-N over an upsert input (UpdatableTopNFunction): a"
                + " FLOAT/DOUBLE row key is not native yet"), decisions(doubleKey));
        // idle-state TTL where Flink's results depend on its cache, or its states expire apart
        Map<String, String> ttl = Map.of("table.exec.state.ttl", "1 h");
        assertEquals(List.of("idle-state TTL (table.exec.state.ttl) on a Top-N kept by AppendOnlyTopNFunction: Flink's results"
                + " then depend on which partitions its cache (table.exec.rank.topn-cache-size) holds; not native"),
                decisions(topN("v DESC", false), ttl));
        assertEquals(List.of("idle-state TTL (table.exec.state.ttl) on a Top-N kept by FastTop1Function: Flink's results"
                + " then depend on which partitions its cache (table.exec.rank.topn-cache-size) holds; not native"),
                decisions(rank("R", "k, s, v", "k", "v DESC", "rn = 1"), ttl));
        assertEquals(List.of("idle-state TTL (table.exec.state.ttl) on a Top-N kept by UpdatableTopNFunction: Flink's results"
                + " then depend on which partitions its cache (table.exec.rank.topn-cache-size) holds; not native"),
                decisions(rank(AGG, "k, g, mx", "k", "mx DESC", "rn <= 3"), ttl));
        assertEquals(List.of("idle-state TTL (table.exec.state.ttl) on a Top-N kept by RetractableTopNFunction: its sorted-map"
                + " and data-state then expire separately; not native"), decisions(rank("C", "k, v", "k", "v DESC", "rn <= 3"), ttl));
        // FLOAT/DOUBLE sort keys
        assertEquals(List.of("ORDER BY d of type DOUBLE: a FLOAT/DOUBLE sort key is not native yet (Flink's comparator takes"
                + " NaN as equal to every value)"), decisions(topN("d DESC", false)));
        assertEquals(List.of("ORDER BY f of type FLOAT: a FLOAT/DOUBLE sort key is not native yet (Flink's comparator takes"
                + " NaN as equal to every value)"), decisions(topN("v, f", true)));
        // the whole input row crosses into Go
        assertEquals(List.of("input field bin of type BYTES: BINARY/VARBINARY in a Top-N: not native yet"),
                decisions(rank("R", "k, bin", "k", "v DESC", "rn <= 3")));
        assertEquals(List.of("input field arr of type ARRAY<INT>: not carried across the native boundary"),
                decisions(rank("R", "k, arr", "k", "v DESC", "rn <= 3")));
        // the switches
        assertEquals(List.of("disabled by ferry.top-n.enabled=false"),
                decisions(topN("v DESC", false), Map.of(TopNKind.ENABLED.key(), "false")));
        assertEquals(List.of("disabled by ferry.enabled=false"), decisions(topN("v DESC", false), Map.of("ferry.enabled", "false")));
    }

    /** The two kinds split Flink's ranks: a deduplication is the deduplicate kind's, every other rank the Top-N's. */
    @Test
    void theKindsSplitTheRanks() {
        long dedup = Ferry.nativeNodesPlanned(DeduplicateSpec.KIND);
        long topN = Ferry.nativeNodesPlanned(TopNSpec.KIND);
        TableEnvironment tEnv = env(true, Map.of());
        List<String> sqls = List.of(rank("R", "k, s, v", "k", "rt DESC", "rn = 1"), topN("rt DESC", false));
        List<String> kinds = new ArrayList<>();
        for (String sql : sqls) {
            try (Ferry.PlanCapture capture = Ferry.capturePlans()) {
                tEnv.explainSql(sql);
                for (RelNode root : capture.plans()) {
                    collectRanks(root, kinds);
                }
            }
        }
        assertEquals(List.of(DeduplicateSpec.KIND, TopNSpec.KIND), kinds.stream().distinct().toList());
        assertEquals(1, Ferry.nativeNodesPlanned(TopNSpec.KIND) - topN);
        assertTrue(Ferry.nativeNodesPlanned(DeduplicateSpec.KIND) - dedup >= 1);
    }

    private static void collectRanks(RelNode node, List<String> into) {
        if (node.getRelTypeName().equals("StreamPhysicalRank")) {
            into.add(node instanceof NativeCandidate c ? c.nativeKind() : node.getClass().getName());
        }
        for (RelNode input : node.getInputs()) {
            collectRanks(input, into);
        }
    }

    /**
     * The candidate's spec name is the exec node's description (Flink's: the rank's detailed
     * description), so its opened operators count for it.
     */
    @Test
    void theSpecIsNamedAsFlinksExecNode() {
        TableEnvironment tEnv = env(true, Map.of());
        for (String sql : List.of(topN("v DESC", true), rank("R", "k, s, v", "k", "pt", "rn <= 3"),
                rank("R", "k, s, v", "k", "v DESC", "rn = 1"))) {
            List<RelNode> plans;
            String explained;
            try (Ferry.PlanCapture capture = Ferry.capturePlans()) {
                explained = tEnv.explainSql(sql);
                plans = capture.plans();
            }
            List<NativeCandidate> found = new ArrayList<>();
            for (RelNode root : plans) {
                collect(root, found);
            }
            assertTrue(!found.isEmpty(), sql);
            String exec = explained.substring(explained.indexOf("== Optimized Execution Plan =="));
            for (NativeCandidate c : found) {
                assertTrue(c.nativeDescription().startsWith("Rank(strategy=["), c.nativeDescription());
                assertTrue(c.nativeDescription().contains("ferry=[native]"), c.nativeDescription());
                assertTrue(exec.contains(c.nativeDescription() + "\n"), c.nativeDescription() + "\n" + exec);
            }
        }
    }

    private static void collect(RelNode node, List<NativeCandidate> into) {
        if (node instanceof NativeCandidate c && c.nativeKind().equals(TopNSpec.KIND)) {
            into.add(c);
        }
        for (RelNode input : node.getInputs()) {
            collect(input, into);
        }
    }
}
