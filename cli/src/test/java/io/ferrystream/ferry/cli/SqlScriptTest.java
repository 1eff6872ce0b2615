package io.ferrystream.ferry.cli;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** Scripts as the SQL Client reads them: statements, comments, SET and RESET. */
class SqlScriptTest {
    @Test
    void statementsCommentsAndTitles() {
        String script = String.join("\n",
                "-- a header, not a title",
                "",
                "SET 'table.exec.mini-batch.enabled' = 'true';",
                "/* block",
                "   comment */ CREATE TABLE t (s STRING) WITH ('connector' = 'datagen'); -- trailing",
                "-- q1: first query",
                "-- more words",
                "SELECT s, ';' AS semi, 'it''s' AS quoted, `a;b` -- inline",
                "FROM t;",
                "RESET 'table.exec.mini-batch.enabled';",
                "SELECT 1",
                "");
        List<SqlScript.Statement> s = SqlScript.parse(script);
        assertEquals(5, s.size(), s.toString());
        assertEquals(SqlScript.Kind.SET, s.get(0).kind());
        assertEquals(3, s.get(0).line());
        assertNull(s.get(0).title());
        assertEquals(SqlScript.Kind.OTHER, s.get(1).kind());
        assertEquals(5, s.get(1).line());
        assertEquals(SqlScript.Kind.QUERY, s.get(2).kind());
        assertEquals(8, s.get(2).line());
        assertEquals("q1: first query", s.get(2).title());
        assertEquals("SELECT s, ';' AS semi, 'it''s' AS quoted, `a;b` \nFROM t", s.get(2).sql());
        assertEquals(SqlScript.Kind.RESET, s.get(3).kind());
        assertEquals(10, s.get(3).line());
        assertEquals("SELECT 1", s.get(4).sql());
        assertEquals(11, s.get(4).line());
    }

    @Test
    void queryHintsAreKept() {
        List<SqlScript.Statement> st = SqlScript.parse(String.join("\n",
                "-- q: early fire",
                "SELECT /*+ EARLY_FIRE('delay'='5s') */ a /* a comment */ FROM t;"));
        assertEquals(1, st.size());
        assertEquals("SELECT /*+ EARLY_FIRE('delay'='5s') */ a   FROM t", st.get(0).sql());
        assertEquals("line 2, q: early fire", st.get(0).label());
    }

    @Test
    void setAndResetForms() {
        assertArrayEquals(new String[] {"table.exec.mini-batch.allow-latency", "1 s"},
                SqlScript.setKeyValue("SET 'table.exec.mini-batch.allow-latency' = '1 s'"));
        assertArrayEquals(new String[] {"pipeline.name", "it's"}, SqlScript.setKeyValue("set 'pipeline.name'='it''s'"));
        assertArrayEquals(new String[] {"parallelism.default", "2"}, SqlScript.setKeyValue("SET parallelism.default = 2"));
        assertNull(SqlScript.setKeyValue("SET"));
        assertEquals("table.exec.state.ttl", SqlScript.resetKey("RESET 'table.exec.state.ttl'"));
        assertNull(SqlScript.resetKey("reset"));
        assertEquals(SqlScript.Kind.SET, SqlScript.kind("SET"));
        assertEquals(SqlScript.Kind.RESET, SqlScript.kind("RESET"));
        assertEquals(SqlScript.Kind.INSERT, SqlScript.kind("INSERT INTO s SELECT 1"));
        assertEquals(SqlScript.Kind.QUERY, SqlScript.kind("WITH x AS (SELECT 1) SELECT * FROM x"));
        assertEquals(SqlScript.Kind.OTHER, SqlScript.kind("SETTINGS_TABLE_CREATE"));
    }
}
