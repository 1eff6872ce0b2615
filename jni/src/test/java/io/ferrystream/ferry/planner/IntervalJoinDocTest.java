package io.ferrystream.ferry.planner;

import org.apache.flink.table.api.TableEnvironment;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** docs/operators/interval-join.md's table against EXPLAIN: one query per cell. */
class IntervalJoinDocTest {
    static final Path DOC = Path.of("..", "docs", "operators", "interval-join.md");

    /** The table's row labels and the join each stands for (columns give the join type). */
    static final Map<String, String> JOINS = Map.of(
            "row time, equi keys and time bounds",
            "FROM L %s JOIN R ON L.k = R.k AND R.rt BETWEEN L.rt - INTERVAL '5' SECOND AND L.rt + INTERVAL '10' SECOND",
            "row time, strict bounds (`<`, `>`)",
            "FROM L %s JOIN R ON L.k = R.k AND L.rt > R.rt - INTERVAL '1' SECOND AND L.rt < R.rt + INTERVAL '3' SECOND",
            "row time, composite and `IS NOT DISTINCT FROM` keys",
            "FROM L %s JOIN R ON L.k IS NOT DISTINCT FROM R.k AND L.s = R.s"
                    + " AND R.rt BETWEEN L.rt - INTERVAL '5' SECOND AND L.rt + INTERVAL '10' SECOND",
            "row time, a residual condition (`AND L.v <> R.v`)",
            "FROM L %s JOIN R ON L.k = R.k AND R.rt BETWEEN L.rt - INTERVAL '5' SECOND AND L.rt + INTERVAL '10' SECOND"
                    + " AND L.v <> R.v",
            "row time, a residual condition beyond Ferry's subset (`AND L.v LIKE R.v`)",
            "FROM L %s JOIN R ON L.k = R.k AND R.rt BETWEEN L.rt - INTERVAL '5' SECOND AND L.rt + INTERVAL '10' SECOND"
                    + " AND L.v LIKE R.v",
            "row time of type TIMESTAMP_LTZ (`TO_TIMESTAMP_LTZ(ms, 3)`)",
            "FROM L2 L %s JOIN R2 R ON L.k = R.k AND R.lt BETWEEN L.lt - INTERVAL '5' SECOND AND L.lt + INTERVAL '10' SECOND",
            "row time, a negative window",
            "FROM L %s JOIN R ON L.k = R.k AND R.rt BETWEEN L.rt + INTERVAL '5' SECOND AND L.rt + INTERVAL '1' SECOND",
            "processing time",
            "FROM (SELECT k, v, pt FROM L) L %s JOIN (SELECT k, v, pt FROM R) R"
                    + " ON L.k = R.k AND R.pt BETWEEN L.pt - INTERVAL '5' SECOND AND L.pt",
            "row time, the `EARLY_FIRE` hint (on INNER: ignored)",
            "/*+ EARLY_FIRE('delay'='2s') */ FROM L %s JOIN R ON L.k = R.k"
                    + " AND R.rt BETWEEN L.rt - INTERVAL '5' SECOND AND L.rt + INTERVAL '10' SECOND",
            "processing time, the `EARLY_FIRE` hint (on INNER: ignored)",
            "/*+ EARLY_FIRE('delay'='2s') */ FROM (SELECT k, v, pt FROM L) L %s JOIN (SELECT k, v, pt FROM R) R"
                    + " ON L.k = R.k AND R.pt BETWEEN L.pt - INTERVAL '5' SECOND AND L.pt");

    static List<List<String>> firstTable() throws Exception {
        return DocTables.first(DOC);
    }

    @Test
    void matcherAgreesWithTheDocument() throws Exception {
        List<List<String>> table = firstTable();
        List<String> header = table.get(0);
        assertEquals(List.of("join", "INNER", "LEFT", "RIGHT", "FULL"), header);
        TableEnvironment tEnv = PlannerTests.newTableEnv(true);
        for (String side : List.of("L", "R")) {
            tEnv.executeSql("CREATE TEMPORARY TABLE " + side + " (k BIGINT, s STRING, rt TIMESTAMP(3), v STRING,"
                    + " pt AS PROCTIME(), WATERMARK FOR rt AS rt) WITH ('connector' = 'datagen')");
            tEnv.executeSql("CREATE TEMPORARY TABLE " + side + "2 (k BIGINT, ms BIGINT, v STRING, lt AS TO_TIMESTAMP_LTZ(ms, 3),"
                    + " WATERMARK FOR lt AS lt) WITH ('connector' = 'datagen')");
        }
        List<String> labels = new ArrayList<>();
        int cells = 0;
        for (List<String> row : table.subList(1, table.size())) {
            String join = JOINS.get(row.get(0));
            assertTrue(join != null, "no query for the row " + row.get(0));
            labels.add(row.get(0));
            for (int c = 1; c < header.size(); c++) {
                boolean promised = row.get(c).equals("✓");
                assertTrue(promised || row.get(c).equals("falls back"), row.get(0) + "/" + header.get(c) + ": " + row.get(c));
                int from = join.indexOf("FROM");
                String sql = "SELECT " + join.substring(0, from) + "L.k, L.v, R.v "
                        + String.format(join.substring(from), header.get(c));
                String plan = PlannerTests.physicalPlan(tEnv.explainSql(sql));
                List<String> terms = PlannerTests.ferryTerms(plan);
                if (row.get(0).equals("row time, a negative window")) {
                    assertTrue(plan.contains("IntervalJoin("), plan);
                }
                assertEquals(1, terms.size(), sql + "\n" + plan);
                assertEquals(promised, terms.get(0).equals("native"), sql + " → ferry=[" + terms.get(0) + "]");
                cells++;
            }
        }
        assertEquals(JOINS.keySet(), new java.util.HashSet<>(labels), "every documented row has a query and back");
        assertEquals(40, cells);
    }
}
