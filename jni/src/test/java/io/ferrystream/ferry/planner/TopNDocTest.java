package io.ferrystream.ferry.planner;

import org.apache.flink.table.api.TableEnvironment;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;

import static io.ferrystream.ferry.planner.TopNExplainTest.AGG;
import static io.ferrystream.ferry.planner.TopNExplainTest.rank;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** docs/operators/top-n.md's table against EXPLAIN: one query per cell. */
class TopNDocTest {
    static final Path DOC = Path.of("..", "docs", "operators", "top-n.md");

    /** The table's row labels and the query each stands for. */
    static final Map<String, String> QUERIES = Map.ofEntries(
            Map.entry("the top N (`rn <= 3`)", rank("R", "k, s, v", "k", "v DESC", "rn <= 3")),
            Map.entry("the top N, `rn` selected", rank("R", "k, s, v, rn", "k", "v DESC", "rn <= 3")),
            Map.entry("an offset (`rn BETWEEN 3 AND 5`)", rank("R", "k, s, v, rn", "k", "v DESC", "rn BETWEEN 3 AND 5")),
            Map.entry("several sort keys, DESC, NULLS FIRST/LAST, strings, decimals, timestamps",
                    rank("R", "k, s, v, m, rt", "k", "s NULLS LAST, m DESC, rt, v DESC NULLS FIRST", "rn <= 3")),
            Map.entry("no partition key (one subtask)", rank("R", "k, s, v, rn", "", "v DESC", "rn <= 10")),
            Map.entry("the top 1 (`rn = 1`, ORDER BY no time attribute)", rank("R", "k, s, v", "k", "v DESC", "rn = 1")),
            Map.entry("the top 1 over an upsert input (a GROUP BY, ORDER BY an aggregate that only grows)",
                    rank(AGG, "k, g, mx", "k", "mx DESC", "rn = 1")),
            Map.entry("the first N by arrival (`ORDER BY pt`, a processing-time attribute ascending)",
                    rank("R", "k, s, v, rn", "k", "pt", "rn <= 3")),
            Map.entry("more than the top 1 over an upsert input (`UpdatableTopNFunction`)",
                    rank(AGG, "k, g, mx", "k", "mx DESC", "rn <= 3")),
            Map.entry("a Top-N over an input with retractions (`RetractableTopNFunction`)",
                    rank("C", "k, v", "k", "v DESC", "rn <= 3")),
            Map.entry("over retractions, an offset with `rn` selected", rank("C", "k, v, rn", "k", "v DESC", "rn BETWEEN 2 AND 4")),
            Map.entry("over retractions, an offset without `rn`", rank("C", "k, v", "k", "v DESC", "rn BETWEEN 2 AND 4")),
            Map.entry("over retractions, a FLOAT/DOUBLE field", rank("C2", "k, v, d", "k", "v DESC", "rn <= 3")),
            Map.entry("over an upsert input, a FLOAT/DOUBLE row key",
                    rank("(SELECT k, d, MAX(v) AS mx FROM R GROUP BY k, d)", "k, d, mx", "k", "mx DESC", "rn <= 3")),
            Map.entry("`rn <= v`, a column (a variable rank range)", rank("R", "k, s, v", "k", "v DESC", "rn <= g")),
            Map.entry("RANK or DENSE_RANK",
                    "SELECT k, v FROM (SELECT *, RANK() OVER (PARTITION BY k ORDER BY v DESC) AS r FROM R) WHERE r <= 3"),
            Map.entry("a FLOAT/DOUBLE sort key", rank("R", "k, s, d", "k", "d DESC", "rn <= 3")),
            Map.entry("a BINARY/VARBINARY field (BYTES)", rank("R", "k, bin", "k", "v DESC", "rn <= 3")),
            Map.entry("a field of a type Ferry does not carry (ARRAY)", rank("R", "k, arr", "k", "v DESC", "rn <= 3")));

    static final Map<String, Map<String, String>> COLUMNS = Map.of(
            "without TTL", Map.of(),
            "with `table.exec.state.ttl`", Map.of("table.exec.state.ttl", "1 h"));

    @Test
    void matcherAgreesWithTheDocument() throws Exception {
        List<List<String>> table = DocTables.first(DOC);
        List<String> header = table.get(0);
        assertEquals(List.of("Top-N", "without TTL", "with `table.exec.state.ttl`"), header);
        List<String> labels = new ArrayList<>();
        int cells = 0;
        for (int c = 1; c < header.size(); c++) {
            Map<String, String> options = COLUMNS.get(header.get(c));
            for (List<String> row : table.subList(1, table.size())) {
                String sql = QUERIES.get(row.get(0));
                assertTrue(sql != null, "no query for the row " + row.get(0));
                if (c == 1) {
                    labels.add(row.get(0));
                }
                boolean promised = row.get(c).equals("✓");
                assertTrue(promised || row.get(c).equals("falls back"), row.get(0) + "/" + header.get(c) + ": " + row.get(c));
                List<String> terms = sql.contains("RANK()") ? TopNExplainTest.rejected(sql, options)
                        : TopNExplainTest.decisions(sql, options);
                assertEquals(1, terms.size(), sql + ": " + terms);
                assertEquals(promised, terms.get(0).equals("native"), sql + " → ferry=[" + terms.get(0) + "]");
                cells++;
            }
        }
        assertEquals(QUERIES.keySet(), new HashSet<>(labels), "every documented row has a query and back");
        assertEquals(38, cells);
    }
}
