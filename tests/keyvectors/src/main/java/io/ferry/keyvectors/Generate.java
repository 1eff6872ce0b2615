package io.ferry.keyvectors;

import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.binary.BinarySegmentUtils;
import org.apache.flink.table.planner.plan.utils.KeySelectorUtil;
import org.apache.flink.table.runtime.keyselector.RowDataKeySelector;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.BinaryType;
import org.apache.flink.table.types.logical.BooleanType;
import org.apache.flink.table.types.logical.DateType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.DoubleType;
import org.apache.flink.table.types.logical.FloatType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.SmallIntType;
import org.apache.flink.table.types.logical.TimestampType;
import org.apache.flink.table.types.logical.TinyIntType;
import org.apache.flink.table.types.logical.VarBinaryType;
import org.apache.flink.table.types.logical.VarCharType;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Objects;
import java.util.Random;
import java.util.Set;

/**
 * Golden vectors for Ferry's grouping-key encoding, computed by Apache Flink 2.3.0 itself.
 *
 * <p>For every vector a {@link GenericRowData} input row is built in which the key columns sit at
 * interleaved, reversed positions (dummy INT columns in between), the key is extracted with the
 * planner's {@link KeySelectorUtil#getRowDataSelector} (the same call the streaming group
 * aggregate uses, i.e. a code-generated BinaryRowData projection), and the key's bytes, {@code
 * BinaryRowData.hashCode()} and {@link KeyGroupRangeAssignment#assignToKeyGroup} are recorded.
 *
 * <p>Usage: {@code Generate <output.jsonl>}. Output is deterministic (fixed seeds).
 */
public final class Generate {

    private static final int[] MAX_PARALLELISMS = {128, 4096, 32768};
    private static final int PER_TYPE = 300;
    private static final int PER_COMBO = 300;

    /** One generated value: the Flink internal object and its JSON text (null = SQL NULL). */
    private record Val(Object internal, String json) {}

    /** A key column type: its Flink logical type, its vector name, boundaries and randoms. */
    private abstract static class Col {
        final String name;
        final LogicalType type;

        Col(String name, LogicalType type) {
            this.name = name;
            this.type = type;
        }

        /** Boundary values; the first one is always NULL. */
        abstract List<Val> boundaries();

        abstract Val random(Random rnd);
    }

    private static final Val NULL = new Val(null, null);

    // ------------------------------------------------------------------------------------------
    // column types
    // ------------------------------------------------------------------------------------------

    private static Col bigint() {
        return new Col("BIGINT", new BigIntType()) {
            List<Val> boundaries() {
                List<Val> l = new ArrayList<>();
                l.add(NULL);
                for (long v :
                        new long[] {
                            0, -1, 1, Long.MIN_VALUE, Long.MAX_VALUE, Long.MIN_VALUE + 1,
                            Long.MAX_VALUE - 1, Integer.MIN_VALUE, Integer.MAX_VALUE,
                            (long) Integer.MIN_VALUE - 1, (long) Integer.MAX_VALUE + 1, 255, 256,
                            -128, -129, 127, 128, 1L << 32, 1L << 56, -(1L << 56), 123
                        }) {
                    l.add(v(v));
                }
                return l;
            }

            Val random(Random r) {
                switch (r.nextInt(4)) {
                    case 0:
                        return v(r.nextLong());
                    case 1:
                        return v(r.nextInt());
                    case 2:
                        return v(r.nextInt(2001) - 1000);
                    default:
                        return v(r.nextLong() >> r.nextInt(64));
                }
            }

            Val v(long x) {
                return new Val(x, Long.toString(x));
            }
        };
    }

    private static Col intCol() {
        return new Col("INT", new IntType()) {
            List<Val> boundaries() {
                List<Val> l = new ArrayList<>();
                l.add(NULL);
                for (int v :
                        new int[] {
                            0, -1, 1, Integer.MIN_VALUE, Integer.MAX_VALUE, Integer.MIN_VALUE + 1,
                            Integer.MAX_VALUE - 1, Short.MIN_VALUE, Short.MAX_VALUE, 255, 256, -128,
                            -129, 127, 128, 65536, 1 << 24, -(1 << 24)
                        }) {
                    l.add(v(v));
                }
                return l;
            }

            Val random(Random r) {
                switch (r.nextInt(3)) {
                    case 0:
                        return v(r.nextInt());
                    case 1:
                        return v(r.nextInt(2001) - 1000);
                    default:
                        return v(r.nextInt() >> r.nextInt(32));
                }
            }

            Val v(int x) {
                return new Val(x, Integer.toString(x));
            }
        };
    }

    private static Col smallint() {
        return new Col("SMALLINT", new SmallIntType()) {
            List<Val> boundaries() {
                List<Val> l = new ArrayList<>();
                l.add(NULL);
                for (int v :
                        new int[] {
                            0, -1, 1, Short.MIN_VALUE, Short.MAX_VALUE, Short.MIN_VALUE + 1,
                            Short.MAX_VALUE - 1, 255, 256, -128, -129, 127, 128
                        }) {
                    l.add(v((short) v));
                }
                return l;
            }

            Val random(Random r) {
                return r.nextBoolean() ? v((short) r.nextInt()) : v((short) (r.nextInt(201) - 100));
            }

            Val v(short x) {
                return new Val(x, Short.toString(x));
            }
        };
    }

    private static Col tinyint() {
        return new Col("TINYINT", new TinyIntType()) {
            List<Val> boundaries() {
                // exhaustive: NULL and all 256 values
                List<Val> l = new ArrayList<>();
                l.add(NULL);
                for (int v : new int[] {0, -1, 1, Byte.MIN_VALUE, Byte.MAX_VALUE}) {
                    l.add(v((byte) v));
                }
                for (int v = Byte.MIN_VALUE; v <= Byte.MAX_VALUE; v++) {
                    l.add(v((byte) v));
                }
                return l;
            }

            Val random(Random r) {
                return v((byte) r.nextInt());
            }

            Val v(byte x) {
                return new Val(x, Byte.toString(x));
            }
        };
    }

    private static Col bool() {
        return new Col("BOOLEAN", new BooleanType()) {
            List<Val> boundaries() {
                return List.of(NULL, v(true), v(false));
            }

            Val random(Random r) {
                return v(r.nextBoolean());
            }

            Val v(boolean x) {
                return new Val(x, Boolean.toString(x));
            }
        };
    }

    private static Col floatCol() {
        return new Col("FLOAT", new FloatType()) {
            List<Val> boundaries() {
                List<Val> l = new ArrayList<>();
                l.add(NULL);
                for (float f :
                        new float[] {
                            0.0f, -0.0f, 1.0f, -1.0f, Float.NaN, Float.POSITIVE_INFINITY,
                            Float.NEGATIVE_INFINITY, Float.MIN_VALUE, -Float.MIN_VALUE,
                            Float.MAX_VALUE, -Float.MAX_VALUE, Float.MIN_NORMAL, 0.1f, 1.5f,
                            16777216f, 16777217f
                        }) {
                    l.add(v(f));
                }
                // NaNs with a non-canonical payload / sign (raw bits must be kept)
                l.add(v(Float.intBitsToFloat(0x7fc00001)));
                l.add(v(Float.intBitsToFloat(0xffc00000)));
                l.add(v(Float.intBitsToFloat(0x7f800001)));
                return l;
            }

            Val random(Random r) {
                switch (r.nextInt(3)) {
                    case 0:
                        return v(Float.intBitsToFloat(r.nextInt()));
                    case 1:
                        return v((r.nextInt(20001) - 10000) / 100f);
                    default:
                        return v((float) r.nextGaussian() * 1e6f);
                }
            }

            Val v(float x) {
                return new Val(
                        x, "0x" + String.format("%08x", Float.floatToRawIntBits(x)));
            }
        };
    }

    private static Col doubleCol() {
        return new Col("DOUBLE", new DoubleType()) {
            List<Val> boundaries() {
                List<Val> l = new ArrayList<>();
                l.add(NULL);
                for (double d :
                        new double[] {
                            0.0, -0.0, 1.0, -1.0, Double.NaN, Double.POSITIVE_INFINITY,
                            Double.NEGATIVE_INFINITY, Double.MIN_VALUE, -Double.MIN_VALUE,
                            Double.MAX_VALUE, -Double.MAX_VALUE, Double.MIN_NORMAL, 0.1, 1.5,
                            9007199254740992.0, 9007199254740993.0, Float.MIN_VALUE
                        }) {
                    l.add(v(d));
                }
                l.add(v(Double.longBitsToDouble(0x7ff8000000000001L)));
                l.add(v(Double.longBitsToDouble(0xfff8000000000000L)));
                l.add(v(Double.longBitsToDouble(0x7ff0000000000001L)));
                return l;
            }

            Val random(Random r) {
                switch (r.nextInt(3)) {
                    case 0:
                        return v(Double.longBitsToDouble(r.nextLong()));
                    case 1:
                        return v((r.nextInt(200001) - 100000) / 100.0);
                    default:
                        return v(r.nextGaussian() * 1e9);
                }
            }

            Val v(double x) {
                return new Val(
                        x, "0x" + String.format("%016x", Double.doubleToRawLongBits(x)));
            }
        };
    }

    private static final String[] CHAR_POOL = {
        "a", "b", "z", "A", "0", "9", " ", "_", "-", "~", "\u0000", "\u007f", "é", "ß", "ж", "\u07ff",
        "\u0800", "日", "本", "語", "\uffff", "😀", "\uD800\uDC00", "\uDBFF\uDFFF"
    };

    private static Col varchar() {
        return new Col("VARCHAR", VarCharType.STRING_TYPE) {
            List<Val> boundaries() {
                List<Val> l = new ArrayList<>();
                l.add(NULL);
                for (int len : new int[] {0, 1, 2, 6, 7, 8, 9, 15, 16, 17, 23, 24, 25, 100, 101}) {
                    StringBuilder sb = new StringBuilder();
                    for (int i = 0; i < len; i++) {
                        sb.append((char) ('a' + (i % 26)));
                    }
                    l.add(v(sb.toString()));
                }
                for (String s :
                        new String[] {
                            "é", "日本語", "😀", "aaaaaé", "aaaaaaé", "aaaaaaaé", "日本", "日本語!",
                            "😀😀", "a😀😀", "ab😀😀", "\u0000", "\u0000\u0000\u0000\u0000\u0000\u0000\u0000",
                            "\u0000\u0000\u0000\u0000\u0000\u0000\u0000\u0000", "\u007f\u007f\u007f",
                            "hello", "hello, world", "0", "-1", "NULL", " ", "       ", "        ",
                        }) {
                    l.add(v(s));
                }
                return l;
            }

            Val random(Random r) {
                int len;
                int k = r.nextInt(10);
                if (k < 6) {
                    len = r.nextInt(12);
                } else if (k < 9) {
                    len = r.nextInt(40);
                } else {
                    len = 40 + r.nextInt(90);
                }
                boolean ascii = r.nextInt(3) > 0;
                StringBuilder sb = new StringBuilder();
                for (int i = 0; i < len; i++) {
                    if (ascii) {
                        sb.append((char) (0x20 + r.nextInt(0x5f)));
                    } else {
                        sb.append(CHAR_POOL[r.nextInt(CHAR_POOL.length)]);
                    }
                }
                return v(sb.toString());
            }

            Val v(String s) {
                byte[] b = s.getBytes(StandardCharsets.UTF_8);
                return new Val(StringData.fromBytes(b), hex(b));
            }
        };
    }

    /** BINARY(n) (length n, as Flink pads a BINARY value) or VARBINARY: byte[] internally. */
    private static Col binary(int n) {
        LogicalType type = n > 0 ? new BinaryType(n) : new VarBinaryType(VarBinaryType.MAX_LENGTH);
        return new Col(n > 0 ? "BINARY(" + n + ")" : "VARBINARY", type) {
            List<Val> boundaries() {
                List<Val> l = new ArrayList<>();
                l.add(NULL);
                for (int len : n > 0 ? new int[] {n} : new int[] {0, 1, 7, 8, 9, 16, 17, 100}) {
                    for (int fill : new int[] {0x00, 0x7f, 0x80, 0xff}) {
                        byte[] b = new byte[len];
                        Arrays.fill(b, (byte) fill);
                        l.add(v(b));
                    }
                }
                return l;
            }

            Val random(Random r) {
                byte[] b = new byte[n > 0 ? n : r.nextInt(r.nextInt(4) == 0 ? 60 : 12)];
                r.nextBytes(b);
                return v(b);
            }

            Val v(byte[] b) {
                return new Val(b, hex(b));
            }
        };
    }

    private static final int MIN_DATE = -719162; // 0001-01-01
    private static final int MAX_DATE = 2932896; // 9999-12-31

    private static Col date() {
        return new Col("DATE", new DateType()) {
            List<Val> boundaries() {
                List<Val> l = new ArrayList<>();
                l.add(NULL);
                for (int v : new int[] {0, -1, 1, MIN_DATE, MAX_DATE, -25567, 18262, 20000, -365, 365}) {
                    l.add(v(v));
                }
                return l;
            }

            Val random(Random r) {
                return r.nextBoolean()
                        ? v(MIN_DATE + r.nextInt(MAX_DATE - MIN_DATE + 1))
                        : v(r.nextInt(40000) - 20000);
            }

            Val v(int x) {
                return new Val(x, Integer.toString(x));
            }
        };
    }

    private static final long MIN_TS_MILLIS = -62135596800000L; // 0001-01-01T00:00:00
    private static final long MAX_TS_MILLIS = 253402300799999L; // 9999-12-31T23:59:59.999

    private static Col timestamp(int precision) {
        // nanoOfMillisecond granularity that a TIMESTAMP(p) value can carry
        final int nanoStep = precision <= 3 ? 1_000_000 : (precision <= 6 ? 1000 : 1);
        return new Col("TIMESTAMP(" + precision + ")", new TimestampType(precision)) {
            List<Val> boundaries() {
                List<Val> l = new ArrayList<>();
                l.add(NULL);
                long[] millis = {
                    0, -1, 1, -1000, 1000, MIN_TS_MILLIS, MAX_TS_MILLIS, -86400000L,
                    -2208988800000L /* 1900-01-01 */, 1700000000000L, 946684800000L
                };
                int[] nanos = {0, 999_999, 1, 500_000, 999_000, 1000, 123_456};
                for (long m : millis) {
                    for (int n : nanos) {
                        if (n % nanoStep != 0) {
                            continue;
                        }
                        l.add(v(m, n));
                    }
                }
                return l;
            }

            Val random(Random r) {
                long m =
                        r.nextBoolean()
                                ? MIN_TS_MILLIS
                                        + (long) (r.nextDouble() * (MAX_TS_MILLIS - MIN_TS_MILLIS))
                                : r.nextLong() % 4_000_000_000_000L;
                int n = nanoStep >= 1_000_000 ? 0 : r.nextInt(1_000_000 / nanoStep) * nanoStep;
                if (nanoStep < 1_000_000 && r.nextInt(4) == 0) {
                    n = 0;
                }
                return v(m, n);
            }

            Val v(long m, int n) {
                return new Val(TimestampData.fromEpochMillis(m, n), m + ":" + n);
            }
        };
    }

    private static Col decimal(int precision, int scale) {
        final BigInteger limit = BigInteger.TEN.pow(precision); // |unscaled| < limit
        return new Col(
                "DECIMAL(" + precision + "," + scale + ")", new DecimalType(precision, scale)) {
            List<Val> boundaries() {
                List<Val> l = new ArrayList<>();
                l.add(NULL);
                List<BigInteger> c = new ArrayList<>();
                for (long x :
                        new long[] {
                            0, 1, -1, 127, 128, -128, -129, 255, 256, -256, -257, 32767, 32768,
                            -32768, -32769, 12345, -12345, 100, -100, Integer.MAX_VALUE,
                            Integer.MIN_VALUE, Long.MAX_VALUE, Long.MIN_VALUE
                        }) {
                    c.add(BigInteger.valueOf(x));
                }
                BigInteger two63 = BigInteger.ONE.shiftLeft(63);
                c.add(two63);
                c.add(two63.negate().subtract(BigInteger.ONE));
                c.add(BigInteger.ONE.shiftLeft(64));
                c.add(BigInteger.ONE.shiftLeft(64).negate());
                c.add(BigInteger.ONE.shiftLeft(120));
                c.add(BigInteger.ONE.shiftLeft(120).negate());
                c.add(limit.subtract(BigInteger.ONE)); // max precision, all nines
                c.add(limit.subtract(BigInteger.ONE).negate());
                c.add(BigInteger.TEN.pow(precision - 1));
                c.add(BigInteger.TEN.pow(precision - 1).negate());
                c.add(BigInteger.TEN.pow(scale));
                c.add(BigInteger.TEN.pow(scale).negate());
                for (BigInteger u : c) {
                    Val v = v(u);
                    if (v != null) {
                        l.add(v);
                    }
                }
                return l;
            }

            Val random(Random r) {
                while (true) {
                    int digits = 1 + r.nextInt(precision);
                    BigInteger u = new BigInteger(digits * 4 + 4, r).mod(BigInteger.TEN.pow(digits));
                    if (r.nextBoolean()) {
                        u = u.negate();
                    }
                    Val v = v(u);
                    if (v != null) {
                        return v;
                    }
                }
            }

            Val v(BigInteger unscaled) {
                if (unscaled.abs().compareTo(limit) >= 0) {
                    return null; // does not fit
                }
                DecimalData d =
                        DecimalData.fromBigDecimal(new BigDecimal(unscaled, scale), precision, scale);
                if (d == null) {
                    return null;
                }
                return new Val(d, unscaled.toString());
            }
        };
    }

    private static Col byName(String name) {
        switch (name) {
            case "BIGINT":
                return bigint();
            case "INT":
                return intCol();
            case "SMALLINT":
                return smallint();
            case "TINYINT":
                return tinyint();
            case "BOOLEAN":
                return bool();
            case "FLOAT":
                return floatCol();
            case "DOUBLE":
                return doubleCol();
            case "VARCHAR":
                return varchar();
            case "DATE":
                return date();
            case "VARBINARY":
                return binary(0);
            default:
        }
        if (name.startsWith("BINARY(")) {
            return binary(Integer.parseInt(name.substring(7, name.length() - 1)));
        }
        if (name.startsWith("TIMESTAMP(")) {
            return timestamp(Integer.parseInt(name.substring(10, name.length() - 1)));
        }
        if (name.startsWith("DECIMAL(")) {
            String[] ps = name.substring(8, name.length() - 1).split(",");
            return decimal(Integer.parseInt(ps[0]), Integer.parseInt(ps[1]));
        }
        throw new IllegalArgumentException(name);
    }

    // ------------------------------------------------------------------------------------------
    // driver
    // ------------------------------------------------------------------------------------------

    private static final String[] SINGLE_TYPES = {
        "BIGINT", "INT", "SMALLINT", "TINYINT", "BOOLEAN", "FLOAT", "DOUBLE", "VARCHAR", "DATE",
        "TIMESTAMP(3)", "TIMESTAMP(6)", "TIMESTAMP(9)", "DECIMAL(10,2)", "DECIMAL(18,4)",
        "DECIMAL(19,0)", "DECIMAL(38,10)", "DECIMAL(38,0)"
    };

    private static final String[][] COMBOS = {
        {"BIGINT", "VARCHAR"},
        {"VARCHAR", "DECIMAL(38,10)", "TIMESTAMP(9)"},
        {"INT", "SMALLINT", "TINYINT", "BOOLEAN", "DATE"},
        {"DOUBLE", "FLOAT"},
        {"VARCHAR", "VARCHAR"},
        {"DECIMAL(19,0)", "DECIMAL(18,4)", "TIMESTAMP(6)", "TIMESTAMP(3)"},
        {
            "BIGINT", "VARCHAR", "INT", "DECIMAL(10,2)", "TIMESTAMP(3)", "DOUBLE", "BOOLEAN",
            "DECIMAL(38,0)", "TIMESTAMP(9)", "VARCHAR"
        },
    };

    private final ClassLoader cl = Generate.class.getClassLoader();
    private final BufferedWriter out;
    private int count;

    private Generate(BufferedWriter out) {
        this.out = out;
    }

    public static void main(String[] args) throws Exception {
        Path path = Paths.get(args.length > 0 ? args[0] : "engine/testdata/keygroups.jsonl");
        if (path.getParent() != null) {
            Files.createDirectories(path.getParent());
        }
        Thread.currentThread().setContextClassLoader(Generate.class.getClassLoader());
        try (BufferedWriter w =
                new BufferedWriter(
                        new OutputStreamWriter(
                                Files.newOutputStream(path), StandardCharsets.UTF_8))) {
            Generate g = new Generate(w);
            g.run();
            System.out.println("wrote " + g.count + " vectors to " + path.toAbsolutePath().normalize());
        }
    }

    private void run() throws Exception {
        // empty key: no key fields -> EmptyRowDataKeySelector
        emitEmptyKey();

        long seed = 42;
        for (String t : SINGLE_TYPES) {
            emitSingle(t, seed++);
        }

        for (String[] combo : COMBOS) {
            emitCombo(combo, PER_COMBO, new Random(seed++));
        }

        // null-bit-set width boundary: 56 key fields fit in one 8-byte header word, 57 need two
        String[] mix = {
            "BIGINT", "INT", "SMALLINT", "TINYINT", "BOOLEAN", "FLOAT", "DOUBLE", "VARCHAR",
            "DATE", "TIMESTAMP(3)", "TIMESTAMP(6)", "TIMESTAMP(9)", "DECIMAL(10,2)",
            "DECIMAL(18,4)", "DECIMAL(19,0)", "DECIMAL(38,10)", "DECIMAL(38,0)"
        };
        for (int arity : new int[] {56, 57, 64}) {
            String[] wide = new String[arity];
            for (int i = 0; i < arity; i++) {
                wide[i] = mix[(i * 5) % mix.length];
            }
            emitCombo(wide, 20, new Random(seed++));
        }

        // BINARY/VARBINARY keys, added after the others with seeds of their own
        emitSingle("VARBINARY", 1000);
        emitSingle("BINARY(4)", 1001);
        emitCombo(new String[] {"VARBINARY", "BIGINT", "BINARY(4)", "VARCHAR"}, PER_COMBO, new Random(1002));
    }

    private void emitSingle(String t, long seed) throws Exception {
        Col c = byName(t);
        Random rnd = new Random(seed);
        List<Val[]> rows = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        for (Val v : c.boundaries()) {
            addUnique(rows, seen, new Val[] {v});
        }
        int attempts = 0;
        while (rows.size() < PER_TYPE && attempts++ < PER_TYPE * 20) {
            addUnique(rows, seen, new Val[] {c.random(rnd)});
        }
        emitAll(new Col[] {c}, rows);
    }

    private void emitCombo(String[] names, int n, Random rnd) throws Exception {
        Col[] cols = new Col[names.length];
        List<List<Val>> bounds = new ArrayList<>();
        for (int i = 0; i < names.length; i++) {
            cols[i] = byName(names[i]);
            bounds.add(cols[i].boundaries());
        }
        List<Val[]> rows = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        // all NULL, then exactly one NULL column each, then the rest
        Val[] allNull = new Val[cols.length];
        Arrays.fill(allNull, NULL);
        addUnique(rows, seen, allNull);
        for (int i = 0; i < cols.length && rows.size() < n; i++) {
            Val[] r = new Val[cols.length];
            for (int j = 0; j < cols.length; j++) {
                r[j] = j == i ? NULL : pickNonNull(cols[j], bounds.get(j), rnd);
            }
            addUnique(rows, seen, r);
        }
        int attempts = 0;
        while (rows.size() < n && attempts++ < n * 20) {
            Val[] r = new Val[cols.length];
            for (int j = 0; j < cols.length; j++) {
                if (rnd.nextInt(3) == 0) {
                    List<Val> b = bounds.get(j);
                    r[j] = b.get(rnd.nextInt(b.size())); // may be NULL
                } else {
                    r[j] = cols[j].random(rnd);
                }
            }
            addUnique(rows, seen, r);
        }
        emitAll(cols, rows);
    }

    private static Val pickNonNull(Col c, List<Val> bounds, Random rnd) {
        if (rnd.nextBoolean()) {
            return bounds.get(1 + rnd.nextInt(bounds.size() - 1));
        }
        return c.random(rnd);
    }

    private static void addUnique(List<Val[]> rows, Set<String> seen, Val[] r) {
        StringBuilder k = new StringBuilder();
        for (Val v : r) {
            k.append(v.json == null ? "\u0001" : v.json).append('|');
        }
        if (seen.add(k.toString())) {
            rows.add(r);
        }
    }

    /** Builds the key selector for the given key column types and emits one line per row. */
    private void emitAll(Col[] cols, List<Val[]> rows) throws Exception {
        int n = cols.length;
        // Input row: 2n+1 fields. Dummy INT columns at even positions; key column i sits at odd
        // position 2*(n-1-i)+1, i.e. the key columns appear in reverse order in the input.
        LogicalType[] inTypes = new LogicalType[2 * n + 1];
        int[] keyFields = new int[n];
        for (int p = 0; p < inTypes.length; p += 2) {
            inTypes[p] = new IntType();
        }
        for (int i = 0; i < n; i++) {
            keyFields[i] = 2 * (n - 1 - i) + 1;
            inTypes[keyFields[i]] = cols[i].type;
        }
        RowType inputType = RowType.of(inTypes);
        RowDataKeySelector selector =
                KeySelectorUtil.getRowDataSelector(cl, keyFields, InternalTypeInfo.of(inputType));

        LogicalType[] keyTypes = new LogicalType[n];
        RowData.FieldGetter[] keyGetters = new RowData.FieldGetter[n];
        RowData.FieldGetter[] inGetters = new RowData.FieldGetter[n];
        for (int i = 0; i < n; i++) {
            keyTypes[i] = cols[i].type;
            keyGetters[i] = RowData.createFieldGetter(cols[i].type, i);
            inGetters[i] = RowData.createFieldGetter(cols[i].type, keyFields[i]);
        }

        int dummy = 0;
        for (Val[] r : rows) {
            GenericRowData in = new GenericRowData(inTypes.length);
            for (int p = 0; p < inTypes.length; p += 2) {
                in.setField(p, 1_000_000 + (dummy++));
            }
            for (int i = 0; i < n; i++) {
                in.setField(keyFields[i], r[i].internal);
            }
            BinaryRowData key = (BinaryRowData) selector.getKey(in);
            // sanity: the key row must read back the input's key values
            for (int i = 0; i < n; i++) {
                Object got = keyGetters[i].getFieldOrNull(key);
                Object want = inGetters[i].getFieldOrNull(in);
                if (!Objects.deepEquals(got, want)) { // deepEquals: byte[] of BINARY/VARBINARY
                    throw new IllegalStateException(
                            "read-back mismatch for " + cols[i].name + ": " + got + " vs " + want);
                }
            }
            String[] names = new String[n];
            String[] vals = new String[n];
            for (int i = 0; i < n; i++) {
                names[i] = cols[i].name;
                vals[i] = r[i].json;
            }
            emit(names, vals, key);
        }
    }

    private void emitEmptyKey() throws Exception {
        RowType inputType = RowType.of(new IntType(), VarCharType.STRING_TYPE);
        RowDataKeySelector selector =
                KeySelectorUtil.getRowDataSelector(cl, new int[0], InternalTypeInfo.of(inputType));
        GenericRowData in = GenericRowData.of(7, StringData.fromString("x"));
        BinaryRowData key = (BinaryRowData) selector.getKey(in);
        emit(new String[0], new String[0], key);
    }

    private void emit(String[] types, String[] vals, BinaryRowData key) throws IOException {
        byte[] bytes =
                BinarySegmentUtils.copyToBytes(
                        key.getSegments(), key.getOffset(), key.getSizeInBytes());
        int hash = key.hashCode();
        StringBuilder sb = new StringBuilder(64 + bytes.length * 2);
        sb.append("{\"types\":[");
        for (int i = 0; i < types.length; i++) {
            if (i > 0) {
                sb.append(',');
            }
            sb.append('"').append(types[i]).append('"');
        }
        sb.append("],\"values\":[");
        for (int i = 0; i < vals.length; i++) {
            if (i > 0) {
                sb.append(',');
            }
            if (vals[i] == null) {
                sb.append("null");
            } else {
                sb.append('"').append(vals[i]).append('"');
            }
        }
        sb.append("],\"row\":\"").append(hex(bytes)).append("\",\"hash\":").append(hash);
        sb.append(",\"kg\":{");
        for (int i = 0; i < MAX_PARALLELISMS.length; i++) {
            if (i > 0) {
                sb.append(',');
            }
            int mp = MAX_PARALLELISMS[i];
            sb.append('"')
                    .append(mp)
                    .append("\":")
                    .append(KeyGroupRangeAssignment.assignToKeyGroup(key, mp));
        }
        sb.append("}}\n");
        out.write(sb.toString());
        count++;
    }

    private static String hex(byte[] b) {
        StringBuilder sb = new StringBuilder(b.length * 2);
        for (byte x : b) {
            sb.append(Character.forDigit((x >> 4) & 0xf, 16)).append(Character.forDigit(x & 0xf, 16));
        }
        return sb.toString();
    }
}
