package io.ferrystream.ferry.planner;

import org.apache.flink.table.api.TableEnvironment;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;

import static io.ferrystream.ferry.planner.DeduplicateExplainTest.rank;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** docs/operators/deduplicate.md's table against EXPLAIN: one query per cell. */
class DeduplicateDocTest {
    static final Path DOC = Path.of("..", "docs", "operators", "deduplicate.md");

    /** The table's row labels and the query each stands for. */
    static final Map<String, String> QUERIES = Map.of(
            "row time, last row (`ORDER BY ts DESC`)", rank("D", "k, s, v, rt", "k", "rt DESC", 1, false),
            "row time, first row (`ORDER BY ts`)", rank("D", "k, s, v, rt", "k", "rt", 1, false),
            "processing time, last row (`ORDER BY pt DESC`)", rank("D", "k, s, v", "k", "pt DESC", 1, false),
            "processing time, first row (`ORDER BY pt`)", rank("D", "k, s, v", "k", "pt", 1, false),
            "a row time of type TIMESTAMP_LTZ (`TO_TIMESTAMP_LTZ(ms, 3)`)", rank("D2", "k, s, v, lt", "k", "lt DESC", 1, false),
            "several partition keys", rank("D", "k, s, v, rt", "k, s", "rt DESC", 1, false),
            "no partition key (one subtask)", rank("D", "k, s, v", "", "pt DESC", 1, false),
            "`rn` selected (Flink plans the deduplication and a constant)", rank("D", "k, s, v", "k", "rt DESC", 1, true),
            "a BINARY/VARBINARY field (BYTES)", rank("D", "k, bin", "k", "rt DESC", 1, false),
            "a field of a type Ferry does not carry (ARRAY)", rank("D", "k, arr", "k", "pt DESC", 1, false));

    static final Map<String, Map<String, String>> COLUMNS = Map.of(
            "per record", Map.of(),
            "mini-batch", Map.of(
                    "table.exec.mini-batch.enabled", "true",
                    "table.exec.mini-batch.allow-latency", "1 s",
                    "table.exec.mini-batch.size", "100"));

    @Test
    void matcherAgreesWithTheDocument() throws Exception {
        List<List<String>> table = DocTables.first(DOC);
        List<String> header = table.get(0);
        assertEquals(List.of("deduplication", "per record", "mini-batch"), header);
        List<String> labels = new ArrayList<>();
        int cells = 0;
        for (int c = 1; c < header.size(); c++) {
            TableEnvironment tEnv = DeduplicateExplainTest.env(true, COLUMNS.get(header.get(c)));
            for (List<String> row : table.subList(1, table.size())) {
                String sql = QUERIES.get(row.get(0));
                assertTrue(sql != null, "no query for the row " + row.get(0));
                if (c == 1) {
                    labels.add(row.get(0));
                }
                boolean promised = row.get(c).equals("✓");
                assertTrue(promised || row.get(c).equals("falls back"), row.get(0) + "/" + header.get(c) + ": " + row.get(c));
                String plan = PlannerTests.physicalPlan(tEnv.explainSql(sql));
                List<String> terms = PlannerTests.ferryTerms(plan);
                assertEquals(1, terms.size(), sql + "\n" + plan);
                assertEquals(promised, terms.get(0).equals("native"), sql + " → ferry=[" + terms.get(0) + "]");
                cells++;
            }
        }
        assertEquals(QUERIES.keySet(), new HashSet<>(labels), "every documented row has a query and back");
        assertEquals(20, cells);
    }
}
