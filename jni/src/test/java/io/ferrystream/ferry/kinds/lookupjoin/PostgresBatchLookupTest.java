package io.ferrystream.ferry.kinds.lookupjoin;

import io.ferrystream.ferry.lookup.PostgresServer;
import io.ferrystream.ferry.nativelib.FerryException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TimeZone;
import java.util.function.Function;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.flink.connector.jdbc.core.table.source.JdbcRowDataLookupFunction;
import org.apache.flink.connector.jdbc.internal.options.InternalJdbcConnectionOptions;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.utils.LogicalTypeParser;
import org.apache.flink.table.types.utils.TypeConversions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * {@link PostgresBatchLookup} (Go, one statement per batch) against Flink's own
 * {@link JdbcRowDataLookupFunction} (flink-connector-jdbc-postgres 4.0.0-2.0, pgjdbc, one
 * statement per key) on the same real PostgreSQL table: random key batches with duplicates and
 * misses, every type the PostgreSQL dialect maps that Ferry carries; then the errors.
 */
class PostgresBatchLookupTest {
    private static PostgresServer server;
    private static TimeZone jvmZone;

    private static final String TYPES = "id INT, b BOOLEAN, s SMALLINT, i INT, big BIGINT, r FLOAT, d DOUBLE,"
            + " n DECIMAL(10, 2), n2 DECIMAL(5, 1), t STRING, vc VARCHAR(10), c CHAR(5), by BYTES, dt DATE,"
            + " tm TIME(3), ts3 TIMESTAMP(3), ts TIMESTAMP(6), tz TIMESTAMP(6)";

    @BeforeAll
    static void start() throws Exception {
        jvmZone = TimeZone.getDefault();
        TimeZone.setDefault(TimeZone.getTimeZone("UTC")); // pgjdbc and Flink's converters read it; Go gets it in the spec
        server = PostgresServer.start();
        try (Connection c = server.connect(); Statement s = c.createStatement()) {
            s.execute("CREATE TABLE d_types (id int4, b bool, s int2, i int4, big int8, r float4, d float8, n numeric(10,3),"
                    + " n2 numeric, t text, vc varchar(10), c char(5), by bytea, dt date, tm time(6), ts3 timestamp(6),"
                    + " ts timestamp(6), tz timestamptz(6), u uuid, arr int4[])");
            Random rnd = new Random(42);
            for (int id = 1; id <= 50; id++) {
                int copies = id % 7 == 0 ? 3 : id % 5 == 0 ? 0 : 1; // several rows per key, some keys missing
                for (int k = 0; k < copies; k++) {
                    if (rnd.nextInt(6) == 0) {
                        s.execute("INSERT INTO d_types (id) VALUES (" + id + ")"); // every field NULL
                        continue;
                    }
                    s.execute(String.format("INSERT INTO d_types VALUES (%d, %b, %d, %d, %d, %s, %s, %s, %s, '%s', '%s',"
                            + " '%s', '\\x%s', '%s', '%s', '%s', '%s', '%s', gen_random_uuid(), '{1,2}')",
                            id, rnd.nextBoolean(), rnd.nextInt(65536) - 32768, rnd.nextInt(), rnd.nextLong(),
                            k == 1 ? "'NaN'" : Float.toString(rnd.nextFloat() * 1000 - 500),
                            k == 2 ? "'-Infinity'" : Double.toString(rnd.nextGaussian() * 1e6),
                            String.format("%.3f", rnd.nextDouble() * 2000 - 1000), // rounds HALF_UP to 2 digits
                            rnd.nextBoolean() ? "1234.56" : "123456.7", // DECIMAL(5, 1): the second is NULL in Flink
                            k == 0 ? "" : "t é " + rnd.nextInt(100), "v" + rnd.nextInt(1000), rnd.nextBoolean() ? "ab" : "abcde",
                            HexFormat.of().formatHex(new byte[] {0, (byte) rnd.nextInt(256), 0}),
                            (1900 + rnd.nextInt(200)) + "-0" + (1 + rnd.nextInt(9)) + "-1" + rnd.nextInt(10),
                            String.format("%02d:%02d:%02d.%06d", rnd.nextInt(24), rnd.nextInt(60), rnd.nextInt(60), rnd.nextInt(1000000)),
                            String.format("19%02d-12-31 23:59:59.%06d", rnd.nextInt(100), rnd.nextInt(1000000)),
                            String.format("2%03d-01-01 00:00:00.%06d", rnd.nextInt(1000), rnd.nextInt(1000000)),
                            String.format("2024-03-10 12:00:00.%06d+0%d", rnd.nextInt(1000000), rnd.nextInt(10))));
                }
            }
            s.execute("CREATE TABLE d_comp (a int4, c char(4), v text)");
            s.execute("INSERT INTO d_comp VALUES (1,'ab','r1'),(1,'ab','r2'),(1,'cd','r3'),(2,'ab','r4'),(1,'ab','r1')");
        }
    }

    @AfterAll
    static void stop() throws Exception {
        TimeZone.setDefault(jvmZone);
        if (server != null) {
            server.close();
        }
    }

    private static Map<String, String> options(String table) {
        Map<String, String> o = new HashMap<>();
        o.put("connector", "jdbc");
        o.put("url", server.url() + "?sslmode=disable");
        o.put("table-name", table);
        o.put("username", server.user());
        o.put("password", server.password());
        return o;
    }

    private static RowType rowType(String fields) {
        return (RowType) LogicalTypeParser.parse("ROW<" + fields + ">", PostgresBatchLookupTest.class.getClassLoader());
    }

    /** Flink's lookup function over the same table, fields and keys. */
    private static JdbcRowDataLookupFunction flink(String table, RowType type, String[] keys) throws Exception {
        String[] names = type.getFieldNames().toArray(String[]::new);
        DataType[] dataTypes = type.getChildren().stream().map(TypeConversions::fromLogicalToDataType).toArray(DataType[]::new);
        InternalJdbcConnectionOptions o = InternalJdbcConnectionOptions.builder().setDBUrl(server.url())
                .setTableName(table).setUsername(server.user()).setPassword(server.password()).build();
        JdbcRowDataLookupFunction fn = new JdbcRowDataLookupFunction(o, 0, names, dataTypes, keys, type, List.of(),
                new java.io.Serializable[0]);
        fn.open(null);
        return fn;
    }

    /** A row's values as text: floats by their bits, bytes in hex (GenericRowData.equals compares byte[] by identity). */
    private static String canonical(RowData row, RowType type) {
        StringBuilder b = new StringBuilder("[");
        for (int i = 0; i < type.getFieldCount(); i++) {
            Object v = RowData.createFieldGetter(type.getTypeAt(i), i).getFieldOrNull(row);
            b.append(i > 0 ? ", " : "").append(v instanceof byte[] bytes ? HexFormat.of().formatHex(bytes)
                    : v instanceof Float f ? "f" + Float.floatToRawIntBits(f)
                    : v instanceof Double d ? "d" + Double.doubleToRawLongBits(d) : String.valueOf(v));
        }
        return b.append(']').toString();
    }

    /** Calls of the batched statement over table since the server started (pg_stat_statements). */
    private static long batchedStatements(String table) throws Exception {
        try (Connection c = server.connect(); Statement s = c.createStatement();
                ResultSet r = s.executeQuery("SELECT coalesce(sum(calls), 0) FROM pg_stat_statements WHERE query LIKE"
                        + " 'SELECT __ferry_k.__ord%' AND query LIKE '% FROM " + table + " WHERE %'")) {
            r.next();
            return r.getLong(1);
        }
    }

    /** Looks keys up both ways and asserts the same rows in the same order per key, and one statement per batch. */
    private static int compare(String table, RowType type, String[] keyNames, List<RowData> keys, Map<String, String> options)
            throws Exception {
        JdbcRowDataLookupFunction fn = flink(table, type, keyNames);
        try (BufferAllocator allocator = new RootAllocator();
                PostgresBatchLookup ferry = new PostgresBatchLookup(options, type, keyNames, allocator)) {
            long before = batchedStatements(table);
            List<List<RowData>> got = ferry.fetch(keys);
            assertEquals(1, batchedStatements(table) - before, "statements of one batch of " + keys.size() + " keys");
            assertEquals(keys.size(), got.size());
            int rows = 0;
            for (int k = 0; k < keys.size(); k++) {
                List<String> want = new ArrayList<>();
                for (RowData r : fn.lookup(keys.get(k))) {
                    want.add(canonical(r, type));
                }
                List<String> have = new ArrayList<>();
                for (RowData r : got.get(k)) {
                    have.add(canonical(r, type));
                }
                assertEquals(want, have, "key row " + k + " " + keys.get(k));
                rows += have.size();
            }
            return rows;
        } finally {
            fn.close();
        }
    }

    @Test
    void sameRowsAsFlinksJdbcLookup() throws Exception {
        RowType type = rowType(TYPES);
        Random rnd = new Random(7);
        int rows = 0;
        for (int batch = 0; batch < 4; batch++) {
            List<RowData> keys = new ArrayList<>();
            for (int i = 0; i < 150; i++) {
                keys.add(GenericRowData.of(1 + rnd.nextInt(60))); // ids 51..60 and every 5th miss; duplicates
            }
            rows += compare("d_types", type, new String[] {"id"}, keys, options("d_types"));
        }
        assertTrue(rows > 300, "only " + rows + " rows compared");
        // a composite key, with a STRING key on a char(4) column (bpchar equality: 'ab  ' matches 'ab')
        List<RowData> keys = List.of(GenericRowData.of(1, StringData.fromString("ab")),
                GenericRowData.of(1, StringData.fromString("ab  ")), GenericRowData.of(2, StringData.fromString("cd")),
                GenericRowData.of(1, StringData.fromString("cd")), GenericRowData.of(1, StringData.fromString("ab")));
        assertEquals(10, compare("d_comp", rowType("a INT, c STRING, v STRING"), new String[] {"a", "c"}, keys, options("d_comp")));
    }

    @Test
    void partialCacheFetchesOnlyNewKeys() throws Exception {
        Map<String, String> o = options("d_types");
        o.put("lookup.cache", "PARTIAL");
        o.put("lookup.partial-cache.max-rows", "100");
        RowType type = rowType("id INT, t STRING");
        try (BufferAllocator allocator = new RootAllocator();
                PostgresBatchLookup ferry = new PostgresBatchLookup(o, type, new String[] {"id"}, allocator)) {
            List<RowData> keys = List.of(GenericRowData.of(7), GenericRowData.of(55), GenericRowData.of(8));
            long before = batchedStatements("d_types");
            List<List<RowData>> first = ferry.fetch(keys);
            List<List<RowData>> second = ferry.fetch(keys);
            assertEquals(1, batchedStatements("d_types") - before, "the second batch is answered by the cache");
            assertEquals(3, first.get(0).size());
            assertEquals(0, first.get(1).size());
            for (int k = 0; k < keys.size(); k++) {
                assertEquals(first.get(k).stream().map(r -> canonical(r, type)).toList(),
                        second.get(k).stream().map(r -> canonical(r, type)).toList());
            }
        }
        // the deprecated options make the same kind of cache; PARTIAL without a bound is Flink's error
        o.remove("lookup.cache");
        o.remove("lookup.partial-cache.max-rows");
        o.put("lookup.cache.max-rows", "10");
        o.put("lookup.cache.ttl", "1 min");
        String spec = PostgresBatchLookup.spec(o, type, rowType("id INT"));
        assertTrue(spec.contains("\"cache\":{\"mode\":\"PARTIAL\",\"max_rows\":10,\"expire_after_write_ms\":60000,\"cache_missing_key\":true}"), spec);
        assertFalse(spec.contains(server.password()) || spec.contains("jdbc:"), spec);
        o.put("lookup.cache", "PARTIAL");
        assertTrue(PostgresBatchLookup.reasonNotNative(o, type, new String[] {"id"}, false).startsWith("Missing 'lookup.partial-cache"));
    }

    @Test
    void clearErrorsWithoutThePassword() throws Exception {
        RowType type = rowType("id INT, t STRING");
        String[] id = {"id"};
        Function<Map<String, String>, FerryException> open = o -> assertThrows(FerryException.class, () -> {
            try (BufferAllocator a = new RootAllocator(); PostgresBatchLookup l = new PostgresBatchLookup(o, type, id, a)) {
                l.fetch(List.of(GenericRowData.of(1)));
            }
        });
        Map<String, String> o = options("d_types");
        o.put("password", "wrong-" + server.password());
        FerryException e = open.apply(o);
        assertEquals(FerryException.EEXTERNAL, e.code(), e.toString());
        assertTrue(e.getMessage().contains("password authentication failed"), e.getMessage());
        assertFalse(e.getMessage().contains(server.password()), e.getMessage());

        o = options("d_types");
        o.put("url", "jdbc:postgresql://127.0.0.1:1/db?connectTimeout=5");
        e = open.apply(o);
        assertEquals(FerryException.EEXTERNAL, e.code(), e.toString());
        assertTrue(e.getMessage().contains("cannot connect to PostgreSQL"), e.getMessage());
        assertFalse(e.getMessage().contains(server.password()), e.getMessage());

        e = open.apply(options("d_missing"));
        assertTrue(e.getMessage().contains("relation \"d_missing\" does not exist"), e.getMessage());
        FerryException col = assertThrows(FerryException.class, () -> {
            try (BufferAllocator a = new RootAllocator();
                    PostgresBatchLookup l = new PostgresBatchLookup(options("d_types"), rowType("id INT, nope STRING"), id, a)) {
                l.fetch(List.of(GenericRowData.of(1)));
            }
        });
        assertTrue(col.getMessage().contains("column \"nope\" does not exist"), col.getMessage());
        FerryException uuid = assertThrows(FerryException.class, () -> {
            try (BufferAllocator a = new RootAllocator();
                    PostgresBatchLookup l = new PostgresBatchLookup(options("d_types"), rowType("id INT, u STRING"), id, a)) {
                l.fetch(List.of(GenericRowData.of(1)));
            }
        });
        assertTrue(uuid.getMessage().contains("column u") && uuid.getMessage().contains("uuid"), uuid.getMessage());
        IllegalArgumentException arr = assertThrows(IllegalArgumentException.class,
                () -> new PostgresBatchLookup(options("d_types"), rowType("id INT, arr ARRAY<INT>"), id, new RootAllocator()));
        assertTrue(arr.getMessage().contains("field arr: type ARRAY<INT> is not carried natively"), arr.getMessage());
    }

    @Test
    void reasonNotNative() {
        RowType type = rowType("id INT, t STRING");
        String[] id = {"id"};
        Map<String, String> o = options("d_types");
        assertNull(PostgresBatchLookup.reasonNotNative(o, type, id, false));
        assertEquals("a filter is pushed into the JDBC source", PostgresBatchLookup.reasonNotNative(o, type, id, true));
        o.put("lookup.cache", "FULL");
        // the JDBC connector ignores FULL (no cache, or the deprecated options' one): so does Ferry
        assertEquals(null, PostgresBatchLookup.reasonNotNative(o, type, id, false));
        assertEquals(null, PostgresBatchLookup.cacheParams(org.apache.flink.configuration.Configuration.fromMap(o)));
        o = options("d_types");
        o.put("url", "jdbc:mysql://h/db");
        assertEquals("the URL is not a jdbc:postgresql: URL", PostgresBatchLookup.reasonNotNative(o, type, id, false));
        o.put("url", "jdbc:postgresql://h/db?stringtype=unspecified");
        assertEquals("URL parameter stringtype is not mapped to the native lookup", PostgresBatchLookup.reasonNotNative(o, type, id, false));
        o.put("url", "jdbc:postgresql://h1,h2/db");
        assertEquals("the URL names several hosts", PostgresBatchLookup.reasonNotNative(o, type, id, false));
        o = options("d_types");
        assertEquals("field b: the PostgreSQL dialect supports only BYTES, not VARBINARY(10)",
                PostgresBatchLookup.reasonNotNative(o, rowType("id INT, b VARBINARY(10)"), id, false));
        assertEquals("field z: type TIMESTAMP_LTZ(3) is not carried natively",
                PostgresBatchLookup.reasonNotNative(o, rowType("id INT, z TIMESTAMP_LTZ(3)"), id, false));
        assertEquals("host='db.example' port='5433' dbname='my db' connect_timeout='3' sslmode='require' search_path='s'",
                PostgresBatchLookup.dsn("jdbc:postgresql://db.example:5433/my%20db?sslmode=require&connectTimeout=3&currentSchema=s"));
        assertEquals("host='localhost' port='5432' dbname='d' connect_timeout='10'", PostgresBatchLookup.dsn("jdbc:postgresql:d"));
    }
}
