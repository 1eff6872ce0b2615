package io.ferrystream.ferry.lookup;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.TimeZone;

import org.apache.flink.connector.jdbc.core.table.source.JdbcRowDataLookupFunction;
import org.apache.flink.connector.jdbc.internal.options.InternalJdbcConnectionOptions;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.flink.table.data.ArrayData;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericArrayData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.utils.LogicalTypeParser;
import org.apache.flink.table.types.utils.TypeConversions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * lookup/pg against Flink's own JDBC lookup (flink-connector-jdbc-postgres 4.0.0-2.0, pgjdbc):
 * a real PostgreSQL (scripts/postgres.sh), Flink's {@link JdbcRowDataLookupFunction} called once
 * per probe key as Flink's lookup join calls it, then {@code go run ./tests/lookupparity} looks
 * the same keys up with the Go package in one batch per case and fails on any difference in
 * values or row order (docs/operators/lookup-join.md).
 */
class JdbcLookupParityTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    @TempDir Path dir;

    /**
     * One lookup: the table, Flink's key and field columns ("name TYPE"), probe keys in canonical text, the JVM's
     * default zone while Flink looks them up (null: the test JVM's).
     */
    private record Case(String name, String table, List<String> keys, List<String> fields, List<List<String>> probes,
            String zone) {
        Case(String name, String table, List<String> keys, List<String> fields, List<List<String>> probes) {
            this(name, table, keys, fields, probes, null);
        }
    }

    @Test
    void goLookupReturnsFlinksRows() throws Exception {
        try (PostgresServer server = PostgresServer.start()) {
            Map<String, String> env = server.env;
            String url = "jdbc:postgresql://" + env.get("PGHOST") + ":" + env.get("PGPORT") + "/" + env.get("PGDATABASE");
            try (Connection c = DriverManager.getConnection(url, env.get("PGUSER"), env.get("PGPASSWORD"));
                    Statement s = c.createStatement()) {
                s.execute("CREATE TABLE p_types (id int4, b bool, s int2, i int4, i2 int4, i3 int4, big int8, r float4,"
                        + " d float8, n numeric(10,3), n2 numeric, t text, vc varchar(10), c char(5), by bytea, dt date,"
                        + " tm time(6), ts timestamp(6), tz timestamptz(6), ai int4[], at text[], an numeric[])");
                s.execute("INSERT INTO p_types (id) VALUES (1)");
                s.execute("INSERT INTO p_types VALUES (2, true, -32768, 300, 300, 70000, 9223372036854775807, 1.5, '-0',"
                        + " 12.345, 12345.67, '', 'héllo', 'ab', '\\x000100', '1969-12-31', '12:34:56.789',"
                        + " '1969-12-31 23:59:59.123456', '2024-03-10 12:00:00.5+00', '{1,NULL,3}', '{\"a\",NULL,\"\"}',"
                        + " '{1.005,NULL}')");
                s.execute("INSERT INTO p_types VALUES (3, false, 32767, -1, -1, -1, -9223372036854775808, 'NaN', 'Infinity',"
                        + " -12.345, 0.05, 'x y ', 'ab ', 'abcde', '', '1582-10-15', '23:59:59.999999',"
                        + " '1900-01-01 00:00:00.000001', '1969-12-31 23:59:59.999999-01', '{}', '{}', '{-1.005}')");
                s.execute("CREATE TABLE p_batch (a int4, b varchar(10), v text, w int8)");
                s.execute("INSERT INTO p_batch VALUES (1,'x','r1',10),(1,'y','r2',20),(1,'x','r3',30),(2,'x','r4',40),"
                        + "(1,'x','r1',10),(NULL,'x','rn',0)");
                s.execute("CREATE TABLE p_keys (c char(4), t text, f8 float8, f4 float4, tm time(3), dt date,"
                        + " ts timestamp(3), tz timestamptz, n numeric(6,2), bo bool, by bytea, sm int2, v int4)");
                s.execute("INSERT INTO p_keys VALUES ('ab', 'ab', 2.2, 2.5, '12:34:56', '2024-02-29',"
                        + " '2024-01-01 10:00:00.123', '2024-01-01 10:00:00+00', 1.50, true, '\\x00ff', -7, 1)");
                s.execute("INSERT INTO p_keys VALUES (NULL, NULL, NULL, 'NaN', '12:34:56.789', NULL, NULL, NULL, NULL,"
                        + " NULL, NULL, NULL, 2)");
            }
            List<String> keyFields = List.of("c STRING", "t STRING", "f8 DOUBLE", "f4 FLOAT", "tm TIME(3)", "dt DATE",
                    "ts TIMESTAMP(3)", "tz TIMESTAMP(6)", "n DECIMAL(6, 2)", "bo BOOLEAN", "by BYTES", "sm SMALLINT", "v INT");
            String nan = Integer.toString(Float.floatToRawIntBits(Float.NaN));
            List<String> typeFields = List.of("id INT", "b BOOLEAN", "s SMALLINT", "i INT", "i2 TINYINT", "i3 SMALLINT",
                    "big BIGINT", "r FLOAT", "d DOUBLE", "n DECIMAL(10, 2)", "n2 DECIMAL(5, 1)", "t STRING", "vc VARCHAR(10)",
                    "c CHAR(5)", "by BYTES", "dt DATE", "tm TIME(3)", "ts TIMESTAMP(6)", "tz TIMESTAMP(6)", "ai ARRAY<INT>",
                    "at ARRAY<STRING>", "an ARRAY<DECIMAL(10, 2)>");
            List<Case> cases = List.of(
                    new Case("types", "p_types", List.of("id INT"), typeFields,
                            List.of(List.of("1"), List.of("2"), List.of("3"), List.of("4"), List.of("2"))),
                    new Case("types in Asia/Tokyo", "p_types", List.of("id INT"), typeFields,
                            List.of(List.of("2"), List.of("3")), "Asia/Tokyo"),
                    new Case("composite keys, several rows per key", "p_batch", List.of("a INT", "b STRING"),
                            List.of("a INT", "b STRING", "v STRING", "w BIGINT"),
                            List.of(List.of("1", "x"), List.of("2", "y"), List.of("2", "x"), List.of("1", "x"),
                                    List.of("1", "y"))),
                    new Case("STRING key on char(4)", "p_keys", List.of("c STRING"), keyFields,
                            List.of(List.of("ab"), List.of("ab  "), List.of("ab "), List.of("a"))),
                    new Case("STRING key on text", "p_keys", List.of("t STRING"), keyFields,
                            List.of(List.of("ab"), List.of("ab "))),
                    new Case("DOUBLE key", "p_keys", List.of("f8 DOUBLE"), keyFields,
                            List.of(List.of(Long.toString(Double.doubleToRawLongBits(2.2))))),
                    new Case("FLOAT key", "p_keys", List.of("f4 FLOAT"), keyFields,
                            List.of(List.of(Integer.toString(Float.floatToRawIntBits(2.5f))), List.of(nan))),
                    new Case("TIME key", "p_keys", List.of("tm TIME(3)"), keyFields,
                            List.of(List.of("45296000"), List.of("45296789"))),
                    new Case("DATE key", "p_keys", List.of("dt DATE"), keyFields, List.of(List.of("19782"), List.of("0"))),
                    new Case("TIMESTAMP key", "p_keys", List.of("ts TIMESTAMP(3)"), keyFields,
                            List.of(List.of("1704103200123,0"), List.of("1704103200000,0"))),
                    new Case("TIMESTAMP key on timestamptz", "p_keys", List.of("tz TIMESTAMP(6)"), keyFields,
                            List.of(List.of("1704103200000,0"), List.of("1704103200001,0"))),
                    new Case("TIMESTAMP key on timestamptz in Asia/Tokyo", "p_keys", List.of("tz TIMESTAMP(6)"), keyFields,
                            List.of(List.of("1704103200000,0"), List.of("1704135600000,0")), "Asia/Tokyo"),
                    new Case("DECIMAL key", "p_keys", List.of("n DECIMAL(6, 2)"), keyFields,
                            List.of(List.of("150"), List.of("151"))),
                    new Case("BOOLEAN, BYTES, SMALLINT keys", "p_keys", List.of("bo BOOLEAN", "by BYTES", "sm SMALLINT"),
                            keyFields, List.of(List.of("true", "00ff", "-7"), List.of("true", "00", "-7"))));

            ObjectNode root = JSON.createObjectNode();
            root.put("dsn", "postgres://" + env.get("PGUSER") + ":" + env.get("PGPASSWORD") + "@" + env.get("PGHOST")
                    + ":" + env.get("PGPORT") + "/" + env.get("PGDATABASE") + "?sslmode=disable");
            ArrayNode out = root.putArray("cases");
            int flinkRows = 0;
            TimeZone jvmZone = TimeZone.getDefault();
            for (Case c : cases) {
                // pgjdbc and Flink's converters read the JVM's default zone
                TimeZone.setDefault(c.zone == null ? jvmZone : TimeZone.getTimeZone(c.zone));
                try {
                    ObjectNode json = out.addObject();
                    json.put("zone", TimeZone.getDefault().getID());
                    flinkRows += flinkLookup(url, env, c, json);
                } finally {
                    TimeZone.setDefault(jvmZone);
                }
            }
            assertTrue(flinkRows > 10, "Flink's lookup returned only " + flinkRows + " rows");
            Path file = dir.resolve("parity.json");
            Files.writeString(file, JSON.writerWithDefaultPrettyPrinter().writeValueAsString(root));
            String result = PostgresServer.run(List.of("go", "run", "./tests/lookupparity", file.toString()), 600);
            System.out.println(result);
            assertTrue(result.contains("case types:"), result);
        }
    }

    /** Calls Flink's JDBC lookup function once per probe key; writes the case with Flink's rows; returns the row count. */
    private static int flinkLookup(String url, Map<String, String> env, Case c, ObjectNode json) throws Exception {
        String[] names = c.fields.stream().map(f -> f.split(" ", 2)[0]).toArray(String[]::new);
        LogicalType[] types = c.fields.stream().map(f -> LogicalTypeParser.parse(f.split(" ", 2)[1], JdbcLookupParityTest.class.getClassLoader())).toArray(LogicalType[]::new);
        DataType[] dataTypes = new DataType[types.length];
        for (int i = 0; i < types.length; i++) {
            dataTypes[i] = TypeConversions.fromLogicalToDataType(types[i]);
        }
        String[] keyNames = c.keys.stream().map(k -> k.split(" ", 2)[0]).toArray(String[]::new);
        InternalJdbcConnectionOptions options = InternalJdbcConnectionOptions.builder().setDBUrl(url)
                .setTableName(c.table).setUsername(env.get("PGUSER")).setPassword(env.get("PGPASSWORD")).build();
        JdbcRowDataLookupFunction fn = new JdbcRowDataLookupFunction(options, 0, names, dataTypes, keyNames,
                RowType.of(types, names), List.of(), new java.io.Serializable[0]);
        json.put("name", c.name).put("table", c.table);
        ArrayNode keys = json.putArray("keys");
        for (String k : c.keys) {
            keys.addObject().put("name", k.split(" ", 2)[0]).put("type", k.split(" ", 2)[1]);
        }
        ArrayNode fields = json.putArray("fields");
        for (String f : c.fields) {
            fields.addObject().put("name", f.split(" ", 2)[0]).put("type", f.split(" ", 2)[1]);
        }
        ArrayNode probes = json.putArray("probes");
        ArrayNode flink = json.putArray("flink");
        int rows = 0;
        fn.open(null);
        try {
            for (List<String> probe : c.probes) {
                ArrayNode p = probes.addArray();
                Object[] key = new Object[probe.size()];
                for (int i = 0; i < key.length; i++) {
                    p.add(probe.get(i));
                    key[i] = internal(probe.get(i), types[List.of(names).indexOf(keyNames[i])]);
                }
                Collection<RowData> result = fn.lookup(GenericRowData.of(key));
                ArrayNode r = flink.addArray();
                for (RowData row : result) {
                    ArrayNode values = r.addArray();
                    for (int i = 0; i < names.length; i++) {
                        addCanonical(values, ((GenericRowData) row).getField(i));
                    }
                    rows++;
                }
            }
        } finally {
            fn.close();
        }
        return rows;
    }

    /** A key's canonical text (tests/lookupparity) as Flink's internal value of type t. */
    private static Object internal(String s, LogicalType t) {
        return switch (t.getTypeRoot()) {
            case BOOLEAN -> Boolean.parseBoolean(s);
            case TINYINT -> Byte.parseByte(s);
            case SMALLINT -> Short.parseShort(s);
            case INTEGER, DATE, TIME_WITHOUT_TIME_ZONE -> Integer.parseInt(s);
            case BIGINT -> Long.parseLong(s);
            case FLOAT -> Float.intBitsToFloat(Integer.parseInt(s));
            case DOUBLE -> Double.longBitsToDouble(Long.parseLong(s));
            case DECIMAL -> DecimalData.fromBigDecimal(new BigDecimal(new BigInteger(s), ((DecimalType) t).getScale()),
                    ((DecimalType) t).getPrecision(), ((DecimalType) t).getScale());
            case CHAR, VARCHAR -> StringData.fromString(s);
            case VARBINARY, BINARY -> HexFormat.of().parseHex(s);
            case TIMESTAMP_WITHOUT_TIME_ZONE -> TimestampData.fromEpochMillis(Long.parseLong(s.split(",")[0]),
                    Integer.parseInt(s.split(",")[1]));
            default -> throw new IllegalArgumentException("no key parser for " + t);
        };
    }

    /** Appends a Flink internal value's canonical text (tests/lookupparity). */
    private static void addCanonical(ArrayNode out, Object v) {
        if (v == null) {
            out.addNull();
        } else if (v instanceof Float f) {
            out.add(Integer.toString(Float.floatToRawIntBits(f)));
        } else if (v instanceof Double d) {
            out.add(Long.toString(Double.doubleToRawLongBits(d)));
        } else if (v instanceof DecimalData d) {
            out.add(d.toBigDecimal().unscaledValue().toString());
        } else if (v instanceof byte[] b) {
            out.add(HexFormat.of().formatHex(b));
        } else if (v instanceof TimestampData t) {
            out.add(t.getMillisecond() + "," + t.getNanoOfMillisecond());
        } else if (v instanceof ArrayData a) {
            ArrayNode arr = out.addArray();
            for (Object e : ((GenericArrayData) a).toObjectArray()) {
                addCanonical(arr, e);
            }
        } else {
            out.add(v.toString()); // Boolean, Byte, Short, Integer, Long, StringData
        }
    }
}
