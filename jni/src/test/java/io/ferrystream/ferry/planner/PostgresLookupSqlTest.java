package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.lookupjoin.JdbcLookups;
import io.ferrystream.ferry.lookup.PostgresServer;

import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.planner.factories.TestValuesTableFactory;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Lookup joins against a real PostgreSQL through Flink's JDBC connector, in SQL on a MiniCluster,
 * Ferry off (Flink's JDBC lookup, one statement per probe row) vs on (Go, one statement per batch):
 * INNER and LEFT, composite keys, pre-filter, residual condition, a calc on the temporal table,
 * NULL probe keys, several rows per key, misses, the partial cache, and every carried type. The
 * rows of one key come back in the server's order, which PostgreSQL does not promise across two
 * different statements, so results are compared as multisets. Each Ferry run must have sent
 * Ferry's batched statement; the cases that keep Flink's JDBC lookup say why in EXPLAIN.
 */
class PostgresLookupSqlTest {
    @RegisterExtension
    static final MiniClusterExtension CLUSTER = MiniClusters.twoByTwo();

    static PostgresServer pg;

    @BeforeAll
    static void startPostgres() throws Exception {
        pg = PostgresServer.start();
        try (Connection c = pg.connect(); Statement st = c.createStatement()) {
            st.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
            st.execute("CREATE TABLE dim (id BIGINT, name VARCHAR(20), price NUMERIC(10, 2), ts TIMESTAMP(3),"
                    + " tz TIMESTAMPTZ, d DATE, flag BOOLEAN, data BYTEA, f DOUBLE PRECISION, small SMALLINT)");
            // ids 0..11 with 0..2 rows each (id % 4 == 3: none), NULL columns and NULL ids
            for (int i = 0; i < 30; i++) {
                long id = i % 12;
                if (id % 4 == 3) {
                    continue;
                }
                st.execute(String.format(java.util.Locale.ROOT,
                        "INSERT INTO dim VALUES (%s, %s, %s, TIMESTAMP '2026-03-01 10:00:00.123' + %d * INTERVAL '1 hour',"
                                + " TIMESTAMPTZ '2026-03-01 10:00:00+02' + %d * INTERVAL '1 minute', DATE '2026-01-01' + %d,"
                                + " %s, %s, %s, %d)",
                        i == 29 ? "NULL" : Long.toString(id), i % 5 == 2 ? "NULL" : "'n" + (i % 6) + "'",
                        i % 7 == 1 ? "NULL" : (i * 37) + ".5" + (i % 10), i, i, i, i % 3 == 0 ? "NULL" : (i % 2 == 0 ? "true" : "false"),
                        i % 4 == 1 ? "NULL" : "'\\x0" + (i % 10) + "ff'", i % 6 == 0 ? "'NaN'" : (i / 4.0) + "", i - 10));
            }
        }
    }

    @AfterAll
    static void stopPostgres() throws Exception {
        if (pg != null) {
            pg.close();
        }
    }

    /** Probe rows (id BIGINT, name STRING, len INT): NULL ids, repeated ids, missing ids. */
    static List<Row> probeRows() {
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < 400; i++) {
            Long id = i % 17 == 3 ? null : (long) ((i * 7) % 14);
            rows.add(Row.of(id, "n" + (i % 7), i % 11 == 4 ? null : (i * 3) % 40));
        }
        return rows;
    }

    static StreamTableEnvironment env(boolean ferry, String dimOptions) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
        Ferry.install(tEnv);
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        tEnv.getConfig().set(FerryOptions.BATCH_SIZE, 64);
        tEnv.executeSql("CREATE TABLE src (id BIGINT, name STRING, len INT, proctime AS PROCTIME()) WITH ("
                + "'connector'='values', 'bounded'='true', 'data-id'='" + TestValuesTableFactory.registerData(probeRows()) + "')");
        tEnv.executeSql("CREATE TABLE dim (id BIGINT, name STRING, price DECIMAL(10, 2), ts TIMESTAMP(3), tz TIMESTAMP(6),"
                + " d DATE, flag BOOLEAN, data BYTES, f DOUBLE, small SMALLINT) WITH ('connector'='jdbc', 'url'='" + pg.url()
                + "', 'table-name'='dim', 'username'='" + pg.user() + "', 'password'='" + pg.password() + "'" + dimOptions + ")");
        return tEnv;
    }

    static final String[] NATIVE_QUERIES = {
        // INNER, every column, several rows per key, misses, NULL probe keys
        "SELECT T.id, T.len, D.* FROM src AS T JOIN dim FOR SYSTEM_TIME AS OF T.proctime AS D ON T.id = D.id",
        // LEFT with a pre-filter and a residual condition
        "SELECT T.id, T.len, D.name, D.price FROM src AS T LEFT JOIN dim FOR SYSTEM_TIME AS OF T.proctime AS D"
                + " ON T.id = D.id AND T.len > 5 AND D.price > T.len",
        // composite key, LEFT
        "SELECT T.id, T.name, D.ts, D.small FROM src AS T LEFT JOIN dim FOR SYSTEM_TIME AS OF T.proctime AS D"
                + " ON T.id = D.id AND T.name = D.name",
        // a calc on the temporal table (computed projection), LEFT
        "SELECT T.id, D.price * 2 AS p2, UPPER(D.name) AS u, D.f FROM src AS T LEFT JOIN dim"
                + " FOR SYSTEM_TIME AS OF T.proctime AS D ON T.id = D.id",
    };

    /** Statements PostgreSQL has run so far that are Ferry's batched one. */
    static long ferryStatements() throws Exception {
        try (Connection c = pg.connect(); Statement st = c.createStatement();
                ResultSet rs = st.executeQuery("SELECT coalesce(sum(calls), 0) FROM pg_stat_statements"
                        + " WHERE query LIKE '%__ferry_k%' AND query NOT LIKE '%pg_stat_statements%'")) {
            rs.next();
            return rs.getLong(1);
        }
    }

    static List<String> run(boolean ferry, String dimOptions, String query, String fetch) throws Exception {
        StreamTableEnvironment tEnv = env(ferry, dimOptions);
        String plan = tEnv.explainSql(query);
        assertTrue(plan.contains(ferry ? "ferry=[native]" : "ferry=[disabled by ferry.enabled=false]"), plan);
        if (ferry) {
            assertTrue(plan.contains("fetch=[" + fetch + "]"), plan);
        }
        long before = ferryStatements();
        List<String> rows = new ArrayList<>();
        try (CloseableIterator<Row> it = tEnv.executeSql(query).collect()) {
            it.forEachRemaining(r -> rows.add(r.toString()));
        }
        boolean batched = ferry && fetch.equals(JdbcLookups.NATIVE);
        assertEquals(batched, ferryStatements() > before, "Ferry's batched statement ran");
        Collections.sort(rows);
        return rows;
    }

    static void compare(String dimOptions, String query, String fetch) throws Exception {
        List<String> flink = run(false, dimOptions, query, fetch);
        List<String> ferry = run(true, dimOptions, query, fetch);
        assertFalse(flink.isEmpty());
        assertEquals(flink, ferry);
    }

    @ParameterizedTest(name = "query {0}")
    @ValueSource(ints = {0, 1, 2, 3})
    void sameRowsAsFlinksJdbcLookup(int query) throws Exception {
        compare("", NATIVE_QUERIES[query], JdbcLookups.NATIVE);
    }

    @Test
    void partialCache() throws Exception {
        compare(", 'lookup.cache'='PARTIAL', 'lookup.partial-cache.max-rows'='5'", NATIVE_QUERIES[0], JdbcLookups.NATIVE);
    }

    /** The JDBC connector ignores {@code lookup.cache = FULL}: Go looks up with no cache, as Flink's lookup does. */
    @Test
    void fullCacheIsIgnoredAsFlinkDoes() throws Exception {
        compare(", 'lookup.cache'='FULL'", NATIVE_QUERIES[1], JdbcLookups.NATIVE);
    }

    /** A constant condition on the dim table is pushed into the JDBC source: Flink's lookup stays, inside Ferry's operator. */
    @Test
    void pushedFilterKeepsFlinksJdbcLookup() throws Exception {
        compare("", "SELECT T.id, D.price FROM src AS T JOIN dim FOR SYSTEM_TIME AS OF T.proctime AS D"
                + " ON T.id = D.id AND D.small > 0",
                "Flink's JDBC lookup per probe row: a filter is pushed into the JDBC source");
    }

    @Test
    void retryHintKeepsFlinksJdbcLookup() throws Exception {
        compare("", "SELECT /*+ LOOKUP('table'='D', 'retry-predicate'='lookup_miss', 'retry-strategy'='fixed_delay',"
                + " 'fixed-delay'='1ms', 'max-attempts'='2') */ T.id, D.name FROM src AS T LEFT JOIN dim"
                + " FOR SYSTEM_TIME AS OF T.proctime AS D ON T.id = D.id",
                "Flink's JDBC lookup per probe row: a LOOKUP hint with retries (they run inside Flink's lookup function)");
    }

    @Test
    void switchOffKeepsFlinksJdbcLookup() {
        StreamTableEnvironment tEnv = env(true, "");
        tEnv.getConfig().set(FerryOptions.LOOKUP_JDBC_NATIVE, false);
        String plan = tEnv.explainSql(NATIVE_QUERIES[0]);
        assertTrue(plan.contains("ferry=[native], fetch=[Flink's JDBC lookup per probe row: disabled by"
                + " ferry.lookup.jdbc.native=false]"), plan);
    }
}
