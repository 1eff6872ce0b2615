package io.ferrystream.ferry.planner;

import static io.ferrystream.ferry.planner.PlannerTests.ferryTerms;
import static io.ferrystream.ferry.planner.PlannerTests.newTableEnv;
import static io.ferrystream.ferry.planner.PlannerTests.physicalPlan;
import static io.ferrystream.ferry.planner.PlannerTests.withoutFerryTerms;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrystream.ferry.kinds.deduplicate.DeduplicateKind;
import io.ferrystream.ferry.kinds.deduplicate.DeduplicateSpec;
import io.ferrystream.ferry.kinds.topn.TopNSpec;
import io.ferrystream.ferry.planner.candidates.RankCandidate;

import org.apache.calcite.rel.RelNode;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalRank;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * EXPLAIN of deduplications with Ferry installed: the ranks Flink translates to a deduplication
 * are the kind's candidates, native or with the reason; every other rank (Top-N) is the Top-N
 * kind's ({@link TopNExplainTest}), never the deduplication's.
 */
class DeduplicateExplainTest {
    static final String TABLE =
            "CREATE TEMPORARY TABLE D (k BIGINT, s STRING, v INT, rt TIMESTAMP(3), bin BYTES, ms BIGINT, arr ARRAY<INT>,"
                    + " lt AS TO_TIMESTAMP_LTZ(ms, 3), pt AS PROCTIME(), WATERMARK FOR rt AS rt) WITH ('connector' = 'datagen')";
    static final String LTZ_TABLE =
            "CREATE TEMPORARY TABLE D2 (k BIGINT, s STRING, v INT, ms BIGINT, lt AS TO_TIMESTAMP_LTZ(ms, 3),"
                    + " WATERMARK FOR lt AS lt) WITH ('connector' = 'datagen')";

    /** An updating source: a ROW_NUMBER over it is Flink's Rank, not a deduplication. */
    static final String CDC_TABLE = "CREATE TEMPORARY TABLE C (k BIGINT, v INT, ts TIMESTAMP(3), WATERMARK FOR ts AS ts)"
            + " WITH ('connector' = 'values', 'changelog-mode' = 'I,UB,UA,D')";

    static TableEnvironment env(boolean ferry, Map<String, String> options) {
        TableEnvironment tEnv = newTableEnv(ferry);
        options.forEach((k, v) -> tEnv.getConfig().set(k, v));
        tEnv.executeSql(TABLE);
        tEnv.executeSql(LTZ_TABLE);
        tEnv.executeSql(CDC_TABLE);
        return tEnv;
    }

    /**
     * A ROW_NUMBER over D (or {@code table}) partitioned by {@code keys}, ordered by {@code order},
     * keeping rows with {@code rn <= n}; {@code columns} are selected, {@code rn} too with
     * {@code withRowNumber}.
     */
    static String rank(String table, String columns, String keys, String order, int n, boolean withRowNumber) {
        return "SELECT " + columns + (withRowNumber ? ", rn" : "") + " FROM (SELECT *, ROW_NUMBER() OVER ("
                + (keys.isEmpty() ? "" : "PARTITION BY " + keys + " ") + "ORDER BY " + order + ") AS rn FROM " + table
                + ") WHERE rn " + (n == 1 ? "= 1" : "<= " + n);
    }

    static String dedup(String order) {
        return rank("D", "k, s, v, rt", "k", order, 1, false);
    }

    /** The ferry terms of the plan; Ferry changes nothing else in EXPLAIN. */
    static List<String> decisions(String sql, Map<String, String> options) {
        String explained = env(true, options).explainSql(sql);
        assertEquals(env(false, options).explainSql(sql), withoutFerryTerms(explained).stripTrailing() + "\n", sql);
        String plan = physicalPlan(explained);
        assertTrue(plan.contains("Rank("), plan);
        return ferryTerms(plan);
    }

    static List<String> decisions(String sql) {
        return decisions(sql, Map.of());
    }

    @Test
    void everyDeduplicationIsNative() {
        for (String order : List.of("rt DESC", "rt", "pt DESC", "pt")) {
            assertEquals(List.of("native"), decisions(dedup(order)), order);
        }
        // several keys, no key (one subtask), a TIMESTAMP_LTZ row time, the rows kept whole
        assertEquals(List.of("native"), decisions(rank("D", "k, s, v, rt, ms, lt", "k, s", "rt DESC", 1, false)));
        assertEquals(List.of("native"), decisions(rank("D", "k, v", "", "pt DESC", 1, false)));
        assertEquals(List.of("native"), decisions(rank("D2", "k, s, v, lt", "k", "lt", 1, false)));
        assertEquals(List.of("native"), decisions(rank("D", "k, v", "", "rt", 1, false)));
        // rn = 1 selected: Flink plans the deduplication and a constant
        assertEquals(List.of("native"), decisions(rank("D", "k, s, v", "k", "rt DESC", 1, true)));
    }

    /** Every mini-batch form, with the options its functions read. */
    @Test
    void miniBatchFormsAreNative() {
        Map<String, String> miniBatch = Map.of(
                "table.exec.mini-batch.enabled", "true",
                "table.exec.mini-batch.allow-latency", "1 s",
                "table.exec.mini-batch.size", "7",
                "table.exec.deduplicate.mini-batch.compact-changes-enabled", "true",
                "table.exec.deduplicate.insert-update-after-sensitive-enabled", "false",
                "table.exec.state.ttl", "1 h");
        for (String order : List.of("rt DESC", "rt", "pt DESC", "pt")) {
            assertEquals(List.of("native"), decisions(dedup(order), miniBatch), order);
        }
    }

    /**
     * A Top-N, a rank number, an ORDER BY that is no time attribute or more than one, a
     * ROW_NUMBER over an updating input: Flink's Rank, which the Top-N kind takes (its
     * candidate, its term), not the deduplication: not counted for it.
     */
    @Test
    void topNIsNotTheDeduplications() {
        List<String> topN = List.of(
                rank("D", "k, s, v", "k", "rt DESC", 3, false),
                rank("D", "k, s, v", "k", "rt DESC", 3, true),
                rank("D", "k, s, v", "k", "v DESC", 1, false),
                rank("D", "k, s, v", "k", "rt DESC, v", 1, false),
                rank("C", "k, v", "k", "ts DESC", 1, false));
        for (String sql : topN) {
            long planned = Ferry.nativeNodesPlanned(DeduplicateSpec.KIND);
            String explained;
            List<RelNode> plans;
            try (Ferry.PlanCapture capture = Ferry.capturePlans()) {
                explained = env(true, Map.of()).explainSql(sql);
                plans = capture.plans();
            }
            assertEquals(env(false, Map.of()).explainSql(sql), withoutFerryTerms(explained).stripTrailing() + "\n", sql);
            List<String> ranks = rankLines(physicalPlan(explained));
            assertEquals(1, ranks.size(), explained);
            assertTrue(ranks.get(0).contains("ferry="), ranks.get(0));
            List<NativeCandidate> dedups = new ArrayList<>();
            for (RelNode root : plans) {
                collect(root, dedups);
            }
            assertEquals(List.of(), dedups, sql);
            assertTrue(plans.stream().anyMatch(DeduplicateExplainTest::holdsTopN), sql);
            assertEquals(planned, Ferry.nativeNodesPlanned(DeduplicateSpec.KIND), sql);
        }
    }

    private static boolean holdsTopN(RelNode node) {
        return kindOf(node).equals(TopNSpec.KIND) || node.getInputs().stream().anyMatch(DeduplicateExplainTest::holdsTopN);
    }

    /** The kind of {@code node}'s verdict, or "" when it is no candidate. */
    private static String kindOf(RelNode node) {
        return node instanceof NativeCandidate c ? c.nativeKind() : "";
    }

    /** The plan's Rank lines. */
    static List<String> rankLines(String plan) {
        List<String> lines = new ArrayList<>();
        for (String line : plan.split("\n")) {
            String l = line.replaceFirst("^[ +\\-:|]*", "");
            if (l.startsWith("Rank(")) {
                lines.add(l);
            }
        }
        return lines;
    }

    @Test
    void fallbacks() {
        // BINARY/VARBINARY: Go refuses the row
        List<String> binary = decisions(rank("D", "k, bin", "k", "rt DESC", 1, false));
        assertEquals(1, binary.size(), binary.toString());
        assertTrue(binary.get(0).contains("(bin)") && binary.get(0).contains("BINARY/VARBINARY"), binary.toString());
        // a type the Arrow path does not carry
        assertEquals(List.of("input field arr of type ARRAY<INT>: not carried across the native boundary"),
                decisions(rank("D", "k, arr", "k", "pt", 1, false)));
        assertEquals(List.of("disabled by ferry.deduplicate.enabled=false"),
                decisions(dedup("rt DESC"), Map.of(DeduplicateKind.ENABLED.key(), "false")));
        assertEquals(List.of("disabled by ferry.enabled=false"), decisions(dedup("pt"), Map.of("ferry.enabled", "false")));
    }

    /** The candidate's spec name is the exec node's description, so its opened operators count for it. */
    @Test
    void theSpecIsNamedAsFlinksExecNode() {
        TableEnvironment tEnv = env(true, Map.of());
        for (String sql : List.of(dedup("rt DESC"), dedup("rt"), dedup("pt"), rank("D", "k, v", "", "pt DESC", 1, false))) {
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
                assertTrue(c.nativeDescription().startsWith("Deduplicate(keep=["), c.nativeDescription());
                assertTrue(exec.contains(c.nativeDescription() + "\n"), c.nativeDescription() + "\n" + exec);
            }
        }
    }

    private static void collect(RelNode node, List<NativeCandidate> into) {
        if (kindOf(node).equals(DeduplicateSpec.KIND)) {
            into.add((NativeCandidate) node);
        }
        assertTrue(!(node instanceof StreamPhysicalRank) || node instanceof RankCandidate, node.getClass().getName());
        for (RelNode input : node.getInputs()) {
            collect(input, into);
        }
    }
}
