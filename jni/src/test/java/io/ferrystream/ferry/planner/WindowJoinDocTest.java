package io.ferrystream.ferry.planner;

import org.apache.flink.table.api.TableEnvironment;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** docs/operators/window-join.md's table against EXPLAIN: one query per cell. */
class WindowJoinDocTest {
    static final Path DOC = Path.of("..", "docs", "operators", "window-join.md");

    /** The table's row labels and the join each stands for, given the join type. */
    static final Map<String, Function<String, String>> JOINS = Map.of(
            "TUMBLE windows, equi keys",
            t -> WindowJoinExplainTest.join(t, ""),
            "HOP windows",
            t -> WindowJoinExplainTest.join(t, "HOP", false, "L.k = R.k", ""),
            "CUMULATE windows",
            t -> WindowJoinExplainTest.join(t, "CUMULATE", false, "L.k = R.k", ""),
            "composite and `IS NOT DISTINCT FROM` keys",
            t -> WindowJoinExplainTest.join(t, "TUMBLE", false, "L.k IS NOT DISTINCT FROM R.k AND L.s = R.s", ""),
            "a residual condition (`AND L.v <> R.v`)",
            t -> WindowJoinExplainTest.join(t, " AND L.v <> R.v"),
            "any residual condition (`AND L.v LIKE R.v`)",
            t -> WindowJoinExplainTest.join(t, " AND L.v LIKE R.v"),
            "windows on a TIMESTAMP_LTZ time attribute (`TO_TIMESTAMP_LTZ(ms, 3)`)",
            t -> WindowJoinExplainTest.join(t, "TUMBLE", true, "L.k = R.k", ""),
            "a BINARY/VARBINARY input field (BYTES)",
            t -> WindowJoinExplainTest.join(t, "").replace("SELECT L.k,", "SELECT L.bin, L.k,"),
            "a BINARY/VARBINARY join key (`L.bin = R.bin`)",
            t -> WindowJoinExplainTest.join(t, "TUMBLE", false, "L.bin = R.bin", ""));

    @Test
    void matcherAgreesWithTheDocument() throws Exception {
        List<List<String>> table = firstTable();
        List<String> header = table.get(0);
        assertEquals(List.of("join", "INNER", "LEFT", "RIGHT", "FULL", "SEMI", "ANTI"), header);
        TableEnvironment tEnv = WindowJoinExplainTest.env(true, Map.of());
        List<String> labels = new ArrayList<>();
        int cells = 0;
        for (List<String> row : table.subList(1, table.size())) {
            Function<String, String> join = JOINS.get(row.get(0));
            assertTrue(join != null, "no query for the row " + row.get(0));
            labels.add(row.get(0));
            for (int c = 1; c < header.size(); c++) {
                boolean promised = row.get(c).equals("✓");
                assertTrue(promised || row.get(c).equals("falls back"), row.get(0) + "/" + header.get(c) + ": " + row.get(c));
                String sql = join.apply(header.get(c));
                String plan = PlannerTests.physicalPlan(tEnv.explainSql(sql));
                assertTrue(plan.contains("WindowJoin("), plan);
                List<String> terms = PlannerTests.ferryTerms(plan);
                // a correlated EXISTS with IS NOT DISTINCT FROM decorrelates into two window joins
                assertTrue(!terms.isEmpty() && terms.size() <= 2, sql + "\n" + plan);
                for (String term : terms) {
                    assertEquals(promised, term.equals("native"), sql + " → ferry=[" + term + "]");
                }
                cells++;
            }
        }
        assertEquals(JOINS.keySet(), new HashSet<>(labels), "every documented row has a query and back");
        assertEquals(54, cells);
    }

    static List<List<String>> firstTable() throws Exception {
        return DocTables.first(DOC);
    }
}
