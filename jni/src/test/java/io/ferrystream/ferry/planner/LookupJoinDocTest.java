package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.kinds.lookupjoin.LookupJoinKind;

import org.apache.flink.table.api.TableEnvironment;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** docs/operators/lookup-join.md's "what runs natively" table against EXPLAIN: one query per cell. */
class LookupJoinDocTest {
    static final Path DOC = Path.of("..", "docs", "operators", "lookup-join.md");

    /** A row's query (%s: the join type) and the options it is planned with. */
    record Case(String query, Map<String, String> options) {}

    static final String ON = " JOIN %s FOR SYSTEM_TIME AS OF T.proctime AS D ON T.id = D.id";

    static final Map<String, Case> CASES = Map.of(
            "sync lookup, one field key",
            new Case("SELECT T.id, D.name FROM src AS T %s" + ON.replace("%s", "dim"), Map.of()),
            "async lookup (`'async'='true'`), ordered",
            new Case("SELECT T.id, D.name FROM src AS T %s" + ON.replace("%s", "dim_async"), Map.of()),
            "async lookup, `table.exec.async-lookup.output-mode` = `ALLOW_UNORDERED`",
            new Case("SELECT T.id, D.name FROM src AS T %s" + ON.replace("%s", "dim_async"),
                    Map.of("table.exec.async-lookup.output-mode", "ALLOW_UNORDERED")),
            "composite key and a constant key (`AND D.name = 'Julian'`)",
            new Case("SELECT T.id, D.age FROM src AS T %s" + ON.replace("%s", "dim")
                    + " AND T.content = D.name AND D.age = 10", Map.of()),
            "pre-filter and residual condition (`AND T.len > 5 AND D.age > T.len + 10`)",
            new Case("SELECT T.id, D.age FROM src AS T %s" + ON.replace("%s", "dim")
                    + " AND T.len > 5 AND D.age > T.len + 10", Map.of()),
            "filter and computed column on the temporal table (calc)",
            new Case("SELECT T.id, D.a2 FROM src AS T %s" + ON.replace("%s", "dim") + " AND D.age > 15", Map.of()),
            "`LOOKUP` hint with the `lookup_miss` retry",
            new Case("SELECT /*+ LOOKUP('table'='D', 'retry-predicate'='lookup_miss', 'retry-strategy'='fixed_delay',"
                    + " 'fixed-delay'='10ms', 'max-attempts'='3') */ T.id, D.name FROM src AS T %s" + ON.replace("%s", "dim"),
                    Map.of()),
            "updating probe (`'changelog-mode'='I,UB,UA,D'`)",
            new Case("SELECT T.id, D.name FROM src_upd AS T %s" + ON.replace("%s", "dim"), Map.of()),
            "async, updating probe, `table.exec.async-lookup.key-ordered-enabled`",
            new Case("SELECT T.id, D.name FROM src_upd AS T %s" + ON.replace("%s", "dim_async"),
                    Map.of("table.exec.async-lookup.key-ordered-enabled", "true",
                            "table.exec.async-lookup.output-mode", "ALLOW_UNORDERED")));

    @Test
    void matcherAgreesWithTheDocument() throws Exception {
        List<List<String>> table = DocTables.first(DOC, "## What runs natively");
        List<String> header = table.get(0);
        assertEquals(List.of("join", "INNER", "LEFT"), header);
        List<String> labels = new ArrayList<>();
        int cells = 0;
        for (List<String> row : table.subList(1, table.size())) {
            Case c = CASES.get(row.get(0));
            assertTrue(c != null, "no query for the row " + row.get(0));
            labels.add(row.get(0));
            for (int col = 1; col < header.size(); col++) {
                boolean promised = row.get(col).equals("✓");
                assertTrue(promised || row.get(col).equals("falls back"), row.get(0) + "/" + header.get(col) + ": " + row.get(col));
                TableEnvironment tEnv = env();
                c.options().forEach(tEnv.getConfig()::set);
                String sql = String.format(c.query(), header.get(col));
                String plan = PlannerTests.physicalPlan(tEnv.explainSql(sql));
                assertTrue(plan.contains("LookupJoin("), plan);
                List<String> terms = PlannerTests.ferryTerms(plan);
                assertEquals(1, terms.size(), sql + "\n" + plan);
                assertEquals(promised, terms.get(0).equals("native"), sql + " → ferry=[" + terms.get(0) + "]");
                if (!promised) {
                    String reason = row.get(0).contains("key-ordered") ? "key-ordered async lookup" : "updating probe (changelog";
                    assertTrue(terms.get(0).startsWith(reason), sql + " → ferry=[" + terms.get(0) + "]");
                }
                cells++;
            }
        }
        assertEquals(CASES.keySet(), new HashSet<>(labels), "every documented row has a query and back");
        assertEquals(18, cells);
    }

    /** A row of "Where the lookups run": the dim table's extra options, the ON clause's tail, the config. */
    record Fetch(String options, String condition, Map<String, String> config) {}

    static final String PG = "'connector'='jdbc', 'url'='jdbc:postgresql://127.0.0.1:5432/db', 'table-name'='dim',"
            + " 'username'='u', 'password'='p'";

    static final Map<String, Fetch> FETCHES = Map.of(
            "a JDBC table on PostgreSQL (`'url'='jdbc:postgresql://…'`)", new Fetch("", "", Map.of()),
            "the same with `'lookup.cache'='PARTIAL'`",
            new Fetch(", 'lookup.cache'='PARTIAL', 'lookup.partial-cache.max-rows'='1000'", "", Map.of()),
            "the same with a pre-filter and a residual condition (`AND T.len > 5 AND D.age > T.len`)",
            new Fetch("", " AND T.len > 5 AND D.age > T.len", Map.of()),
            "a condition on the dim table alone (`AND D.age > 15`: Flink pushes it into the JDBC source)",
            new Fetch("", " AND D.age > 15", Map.of()),
            "a `LOOKUP` hint with retries", new Fetch("", "", Map.of()),
            "`ferry.lookup.jdbc.native=false`", new Fetch("", "", Map.of("ferry.lookup.jdbc.native", "false")),
            "a field of a type Ferry does not carry (`ARRAY<INT>`)", new Fetch("", "", Map.of()),
            "a table of any other connector (`values`)", new Fetch("", "", Map.of()));

    private static final java.util.regex.Pattern FETCH_TERM = java.util.regex.Pattern.compile("fetch=\\[([^\\]]*)\\]");

    /** docs/operators/lookup-join.md's "Where the lookups run" table against EXPLAIN's fetch term. */
    @Test
    void fetchAgreesWithTheDocument() throws Exception {
        List<List<String>> table = DocTables.first(DOC, "## Where the lookups run");
        assertEquals(List.of("temporal table", "`fetch=[…]`"), table.get(0));
        List<String> labels = new ArrayList<>();
        for (List<String> row : table.subList(1, table.size())) {
            Fetch f = FETCHES.get(row.get(0));
            assertTrue(f != null, "no query for the row " + row.get(0));
            labels.add(row.get(0));
            TableEnvironment tEnv = env();
            f.config().forEach(tEnv.getConfig()::set);
            boolean array = row.get(0).contains("ARRAY");
            tEnv.executeSql("CREATE TEMPORARY TABLE pgdim (age INT, id BIGINT, name STRING" + (array ? ", tags ARRAY<INT>" : "")
                    + ") WITH (" + PG + f.options() + ")");
            String hint = row.get(0).contains("LOOKUP") ? "/*+ LOOKUP('table'='D', 'retry-predicate'='lookup_miss',"
                    + " 'retry-strategy'='fixed_delay', 'fixed-delay'='10ms', 'max-attempts'='3') */ " : "";
            String dim = row.get(0).contains("values") ? "dim" : "pgdim";
            String sql = "SELECT " + hint + "T.id, D.name" + (array ? ", D.tags" : "") + " FROM src AS T LEFT"
                    + String.format(ON, dim) + f.condition();
            String plan = PlannerTests.physicalPlan(tEnv.explainSql(sql));
            assertEquals(List.of("native"), PlannerTests.ferryTerms(plan), plan);
            java.util.regex.Matcher m = FETCH_TERM.matcher(plan);
            String expected = row.get(1).replace("`", "");
            if (expected.equals("none")) {
                assertTrue(!m.find(), sql + "\n" + plan);
            } else {
                assertTrue(m.find(), sql + "\n" + plan);
                assertEquals(expected, m.group(1), sql);
            }
        }
        assertEquals(FETCHES.keySet(), new HashSet<>(labels), "every documented row has a query and back");
    }

    /**
     * Upsert materialization (TRY_RESOLVE on an updating probe whose dim columns reach a retracting
     * sink): Flink's planner sets it after Ferry's program decided, through the node's copy, which
     * keeps the node Flink's with the reason.
     */
    @Test
    void upsertMaterializeFallsBack() {
        TableEnvironment tEnv = env();
        tEnv.getConfig().set("table.optimizer.non-deterministic-update.strategy", "TRY_RESOLVE");
        tEnv.executeSql("CREATE TEMPORARY TABLE snk (id BIGINT, cnt BIGINT, name STRING)"
                + " WITH ('connector'='values', 'sink-insert-only'='false')");
        String plan = PlannerTests.physicalPlan(tEnv.explainSql("INSERT INTO snk SELECT T.id, T.cnt, D.name FROM"
                + " (SELECT id, COUNT(*) AS cnt, PROCTIME() AS proctime FROM src GROUP BY id) AS T"
                + " LEFT JOIN dim FOR SYSTEM_TIME AS OF T.proctime AS D ON T.id = D.id"));
        List<String> terms = PlannerTests.ferryTerms(plan).stream().filter(t -> !t.equals("native")).toList();
        assertTrue(plan.contains("LookupJoin("), plan);
        assertEquals(List.of(LookupJoinKind.MATERIALIZE_REASON), terms, plan);
    }

    /** A compiled plan records Flink's node type and fields (a loaded plan runs Flink's operator, as for every kind). */
    @Test
    void compiledPlanKeepsFlinksNodeType() {
        TableEnvironment tEnv = env();
        tEnv.executeSql("CREATE TEMPORARY TABLE snk2 (id BIGINT, name STRING) WITH ('connector'='values')");
        String json = tEnv.compilePlanSql("INSERT INTO snk2 SELECT T.id, D.name FROM src AS T"
                + String.format(ON, "dim")).asJsonString();
        assertTrue(json.contains("\"stream-exec-lookup-join_1\""), json);
        // Ferry's own fields stay out of the JSON (the description, EXPLAIN's text, says ferry=[native])
        assertTrue(!json.contains("fallbackReason") && !json.contains("\"fetchers\"") && !json.contains("probeChangelog"), json);
    }

    static TableEnvironment env() {
        TableEnvironment tEnv = PlannerTests.newTableEnv(true);
        tEnv.executeSql("CREATE TEMPORARY TABLE src (id BIGINT, len INT, content STRING, proctime AS PROCTIME())"
                + " WITH ('connector'='values')");
        tEnv.executeSql("CREATE TEMPORARY TABLE src_upd (id BIGINT, len INT, content STRING, proctime AS PROCTIME())"
                + " WITH ('connector'='values', 'changelog-mode'='I,UB,UA,D')");
        tEnv.executeSql("CREATE TEMPORARY TABLE dim (age INT, id BIGINT, name STRING, a2 AS age * 2)"
                + " WITH ('connector'='values')");
        tEnv.executeSql("CREATE TEMPORARY TABLE dim_async (age INT, id BIGINT, name STRING)"
                + " WITH ('connector'='values', 'async'='true')");
        return tEnv;
    }
}
