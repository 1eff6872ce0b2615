package io.ferrystream.ferry.planner;

import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.ValidationException;

import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docs/operators/group-by.md promises, per value type and aggregate, whether the GROUP BY runs
 * natively. This plans one query per cell, on insert-only and on retracting input, and fails when
 * EXPLAIN disagrees with the document.
 */
class FerryGroupByDocTest {
    static final Path DOC = Path.of("..", "docs", "operators", "group-by.md");

    /** The first markdown table of the document: header cells, then rows of cells. */
    static List<List<String>> firstTable() throws Exception {
        return DocTables.first(DOC);
    }

    @Test
    void matcherAgreesWithTheDocument() throws Exception {
        List<List<String>> table = firstTable();
        List<String> header = table.get(0);
        assertEquals(List.of("value type", "SUM", "AVG", "MIN", "MAX", "COUNT"), header);
        int cells = 0;
        for (List<String> row : table.subList(1, table.size())) {
            String type = row.get(0);
            TableEnvironment tEnv = PlannerTests.newTableEnv(true);
            tEnv.executeSql(
                    "CREATE TEMPORARY TABLE D (k BIGINT, v " + type + ") WITH ('connector' = 'datagen')");
            for (int c = 1; c < header.size(); c++) {
                String fn = header.get(c);
                boolean promised = row.get(c).equals("✓");
                String insertOnly = "SELECT k, " + fn + "(v) FROM D GROUP BY k";
                String retracting =
                        "SELECT k, " + fn + "(v) FROM (SELECT k, v, COUNT(*) AS n FROM D GROUP BY k, v) GROUP BY k";
                if (row.get(c).equals("Flink rejects")) {
                    assertThrows(ValidationException.class, () -> tEnv.explainSql(insertOnly), insertOnly);
                    cells++;
                    continue;
                }
                assertTrue(promised || row.get(c).equals("falls back"), "cell " + type + "/" + fn + ": " + row.get(c));
                for (String sql : List.of(insertOnly, retracting)) {
                    List<String> terms = PlannerTests.ferryTerms(PlannerTests.physicalPlan(tEnv.explainSql(sql)));
                    // the outer node is the one under test (the inner GROUP BY k, v is always native)
                    String outer = terms.get(0);
                    assertEquals(promised, outer.equals("native"), sql + " → ferry=[" + outer + "]");
                    cells++;
                }
            }
        }
        assertTrue(cells >= 110, cells + " cells checked");
    }

    /**
     * The "also native" promise about FIRST_VALUE/LAST_VALUE and LISTAGG: on retracting input
     * (their ...WithRetractAggFunction) native over every type of the table whose MIN is, LISTAGG
     * over the strings, with and without a delimiter; under idle-state TTL LISTAGG stays native and
     * FIRST_VALUE/LAST_VALUE fall back with the reason of the fallback table.
     */
    @Test
    void retractVariantsAgreeWithTheDocument() throws Exception {
        List<List<String>> table = firstTable();
        int min = table.get(0).indexOf("MIN");
        String doc = Files.readString(DOC);
        int cells = 0;
        for (List<String> row : table.subList(1, table.size())) {
            String type = row.get(0);
            boolean strings = type.startsWith("VARCHAR") || type.startsWith("CHAR");
            for (String ttl : List.of("0 ms", "1 h")) {
                TableEnvironment tEnv = PlannerTests.newTableEnv(true);
                tEnv.getConfig().set("table.exec.state.ttl", ttl);
                tEnv.executeSql("CREATE TEMPORARY TABLE D (k BIGINT, v " + type + ") WITH ('connector' = 'datagen')");
                List<String> calls = new ArrayList<>(List.of("FIRST_VALUE(v)", "LAST_VALUE(v)"));
                if (strings) {
                    calls.addAll(List.of("LISTAGG(v)", "LISTAGG(v, '|')"));
                }
                for (String call : calls) {
                    String sql = "SELECT n, " + call + " FROM (SELECT k, MAX(v) AS v, COUNT(*) AS n FROM D GROUP BY k) GROUP BY n";
                    String outer = PlannerTests.ferryTerms(PlannerTests.physicalPlan(tEnv.explainSql(sql))).get(0);
                    boolean listAgg = call.startsWith("LISTAGG");
                    if (!listAgg && !row.get(min).equals("✓")) {
                        assertTrue(!outer.equals("native"), sql + " → ferry=[" + outer + "]");
                    } else if (!listAgg && ttl.equals("1 h")) {
                        String reason = outer.substring(outer.indexOf(": ") + 2);
                        assertTrue(reason.startsWith("idle-state TTL with " + call.substring(0, call.indexOf('(')) + " with retraction"), outer);
                        assertTrue(doc.contains(reason.replace("LAST_VALUE", "FIRST_VALUE")), "the fallback table shows " + reason);
                    } else {
                        assertEquals("native", outer, sql);
                    }
                    cells++;
                }
            }
        }
        assertTrue(cells >= 60, cells + " cells checked");
    }

    /**
     * The two-phase section's promise about the table: in a two-phase plan (mini-batch, AUTO) each
     * cell runs natively on both halves exactly when the table says so on insert-only input; on
     * retracting input the same, MIN and MAX with retraction included. COUNT(DISTINCT) and
     * SUM(DISTINCT) of every cell likewise, except
     * SUM(DISTINCT) over FLOAT, DOUBLE and DECIMAL (the order Flink's global adds in is a
     * HashMap's).
     */
    @Test
    void twoPhaseAgreesWithTheDocument() throws Exception {
        List<List<String>> table = firstTable();
        List<String> header = table.get(0);
        int cells = 0;
        for (List<String> row : table.subList(1, table.size())) {
            String type = row.get(0);
            TableEnvironment tEnv = PlannerTests.newTableEnv(true);
            tEnv.getConfig().set("table.exec.mini-batch.enabled", "true");
            tEnv.getConfig().set("table.exec.mini-batch.allow-latency", "1 s");
            tEnv.getConfig().set("table.exec.mini-batch.size", "100");
            tEnv.executeSql(
                    "CREATE TEMPORARY TABLE D (k BIGINT, v " + type + ") WITH ('connector' = 'datagen')");
            for (int c = 1; c < header.size(); c++) {
                String fn = header.get(c);
                if (row.get(c).equals("Flink rejects")) {
                    continue;
                }
                boolean promised = row.get(c).equals("✓");
                String insertOnly = "SELECT k, " + fn + "(v) FROM D GROUP BY k";
                // v changes with every update of the inner key: the outer calls take retraction
                String retracting =
                        "SELECT n, " + fn + "(v) FROM (SELECT k, MAX(v) AS v, COUNT(*) AS n FROM D GROUP BY k) GROUP BY n";
                List<String> queries = new java.util.ArrayList<>(List.of(insertOnly, retracting));
                boolean distinct = fn.equals("COUNT") || fn.equals("SUM");
                if (distinct) { // the DISTINCT twins (Calcite drops DISTINCT from MIN and MAX)
                    queries.add(insertOnly.replace("(v)", "(DISTINCT v)"));
                    queries.add(retracting.replace(fn + "(v)", fn + "(DISTINCT v)"));
                }
                boolean orderDependent = fn.equals("SUM") && (type.startsWith("FLOAT") || type.startsWith("DOUBLE") || type.startsWith("DECIMAL"));
                for (String sql : queries) {
                    boolean expected = promised && !(sql.contains("DISTINCT") && orderDependent);
                    List<String> terms = PlannerTests.twoPhaseTerms(PlannerTests.physicalPlan(tEnv.explainSql(sql)));
                    // the outer aggregate's halves come first (top-down)
                    assertTrue(terms.size() >= 2 && terms.get(0).startsWith("Global: ") && terms.get(1).startsWith("Local: "),
                            sql + " → " + terms);
                    for (String t : terms.subList(0, 2)) {
                        assertEquals(expected, t.endsWith(": native"), sql + " → " + terms);
                    }
                    cells++;
                }
            }
        }
        assertTrue(cells >= 150, cells + " cells checked");
    }
}
