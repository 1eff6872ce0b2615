package io.ferry.decimalvectors;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.DecimalDataUtils;
import org.apache.flink.table.data.binary.BinaryStringData;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.CloseableIterator;

import java.io.BufferedWriter;
import java.io.IOException;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Random;

/**
 * Golden vectors for Ferry's DECIMAL and VARCHAR aggregates, computed by Apache Flink 2.3.0.
 *
 * <p>{@code decimal_vectors.jsonl}: the arithmetic the aggregate functions generate, run through
 * Flink's own classes — {@code DecimalDataUtils.add/subtract(sum, x, 38, s)} (SUM, $SUM0, AVG),
 * {@code subtract(0, x, 38, s)} (SUM with retraction of a NULL sum), {@code divide(sum,
 * castFrom(count, 19, 0), 38, max(6, s))} followed by the cast to the AVG result type, {@code
 * DecimalData.compareTo}, and {@code BinaryStringData.compareTo} on byte-backed strings (as the
 * aggregate sees them after a network exchange) and on String-backed ones.
 *
 * <p>{@code decimal_changelogs.jsonl}: whole changelogs of streaming SQL group aggregations over
 * DECIMAL and VARCHAR columns, run on a local MiniCluster (parallelism 1, no mini-batch), with
 * the optimized plan of each query so a change of plan is noticed.
 *
 * <p>Usage: {@code Generate <output dir>}. Output is deterministic (fixed seeds).
 */
public final class Generate {

    private static final int[][] TYPES = {
        {38, 0}, {38, 2}, {38, 5}, {38, 6}, {38, 10}, {38, 18}, {38, 37}, {38, 38}, {37, 0},
        {30, 7}, {20, 3}, {19, 0}, {18, 0}, {18, 4}, {18, 18}, {10, 2}, {9, 9}, {5, 0}, {1, 0},
        {1, 1}
    };

    private static final BigInteger TEN = BigInteger.TEN;

    public static void main(String[] args) throws Exception {
        Path dir = Paths.get(args.length > 0 ? args[0] : "agg/testdata");
        Files.createDirectories(dir);
        try (BufferedWriter w =
                Files.newBufferedWriter(
                        dir.resolve("decimal_vectors.jsonl"), StandardCharsets.UTF_8)) {
            arithmetic(w);
            strings(w);
        }
        try (BufferedWriter w =
                Files.newBufferedWriter(
                        dir.resolve("decimal_changelogs.jsonl"), StandardCharsets.UTF_8)) {
            changelogs(w);
        }
    }

    // ---------------------------------------------------------------------------------------
    // Arithmetic
    // ---------------------------------------------------------------------------------------

    private static BigInteger lim(int p) {
        return TEN.pow(p).subtract(BigInteger.ONE);
    }

    private static BigInteger randomUnscaled(Random rnd, int p) {
        BigInteger l = lim(p);
        BigInteger v;
        switch (rnd.nextInt(8)) {
            case 0:
                v = l;
                break;
            case 1:
                v = l.subtract(BigInteger.valueOf(rnd.nextInt(1000))).max(BigInteger.ZERO);
                break;
            case 2:
                v = l.shiftRight(1).add(BigInteger.valueOf(rnd.nextInt(3) - 1));
                break;
            case 3:
                v = BigInteger.valueOf(rnd.nextInt(100));
                break;
            default:
                // uniform in digit count, then in value
                int digits = 1 + rnd.nextInt(p);
                v = new BigInteger(digits * 4, rnd).mod(TEN.pow(digits));
        }
        v = v.min(l);
        return rnd.nextBoolean() ? v.negate() : v;
    }

    private static DecimalData dec(BigInteger unscaled, int p, int s) {
        DecimalData d = DecimalData.fromBigDecimal(new BigDecimal(unscaled, s), p, s);
        if (d == null) {
            throw new IllegalStateException(unscaled + " does not fit DECIMAL(" + p + "," + s + ")");
        }
        return d;
    }

    private static String unscaled(DecimalData d, int scale) {
        if (d == null) {
            return "null";
        }
        return "\"" + d.toBigDecimal().setScale(scale).unscaledValue() + "\"";
    }

    private static void arithmetic(BufferedWriter w) throws IOException {
        Random rnd = new Random(42);
        for (int[] t : TYPES) {
            int p = t[0], s = t[1];
            // SUM / $SUM0 / AVG steps: sum DECIMAL(38, s) (+|-) argument DECIMAL(p, s).
            for (int i = 0; i < 150; i++) {
                BigInteger a = randomUnscaled(rnd, 38);
                BigInteger b = randomUnscaled(rnd, p);
                for (String op : new String[] {"add", "sub"}) {
                    DecimalData r =
                            op.equals("add")
                                    ? DecimalDataUtils.add(dec(a, 38, s), dec(b, p, s), 38, s)
                                    : DecimalDataUtils.subtract(
                                            dec(a, 38, s), dec(b, p, s), 38, s);
                    w.write(
                            String.format(
                                    "{\"op\":\"%s\",\"p\":%d,\"s\":%d,\"a\":\"%s\",\"b\":\"%s\",\"r\":%s}\n",
                                    op, p, s, a, b, unscaled(r, s)));
                }
            }
            // SumWithRetract: a NULL sum retracting x computes aggDecimalMinus(literal 0, x).
            for (int i = 0; i < 20; i++) {
                BigInteger b = randomUnscaled(rnd, p);
                DecimalData zero = DecimalDataUtils.castFrom(0L, 10, 0);
                DecimalData r = DecimalDataUtils.subtract(zero, dec(b, p, s), 38, s);
                w.write(
                        String.format(
                                "{\"op\":\"sub\",\"p\":%d,\"s\":%d,\"a\":\"0\",\"b\":\"%s\",\"r\":%s}\n",
                                p, s, b, unscaled(r, s)));
            }
            // MIN / MAX: compareTo between two arguments.
            for (int i = 0; i < 50; i++) {
                BigInteger a = randomUnscaled(rnd, p);
                BigInteger b = rnd.nextInt(5) == 0 ? a : randomUnscaled(rnd, p);
                int c = Integer.signum(dec(a, p, s).compareTo(dec(b, p, s)));
                w.write(
                        String.format(
                                "{\"op\":\"cmp\",\"p\":%d,\"s\":%d,\"a\":\"%s\",\"b\":\"%s\",\"r\":%d}\n",
                                p, s, a, b, c));
            }
        }
        // AVG: divide(sum DECIMAL(38, s), count as DECIMAL(19, 0), 38, max(6, s)), then the cast
        // to the result type.
        for (int s = 0; s <= 38; s++) {
            for (int i = 0; i < 100; i++) {
                avg(w, s, randomUnscaled(rnd, 38), randomCount(rnd));
            }
            for (long n : new long[] {1, -1, 2, -2, 3, 7, 9, 10, 11, 1000, Long.MAX_VALUE, Long.MIN_VALUE}) {
                avg(w, s, lim(38), n);
                avg(w, s, lim(38).negate(), n);
                avg(w, s, TEN.pow(32), n);
                avg(w, s, TEN.pow(32).subtract(BigInteger.ONE), n);
                avg(w, s, BigInteger.ZERO, n);
                avg(w, s, BigInteger.valueOf(5), n);
                avg(w, s, BigInteger.valueOf(-5), n);
            }
            // Quotients just below a half at the result scale, where the 38-digit rounding can
            // round up to the half and the rescale then rounds up again (double rounding), and
            // neighbours where it cannot.
            int up = Math.max(6, s) - s;
            for (int i = 0; i < 120; i++) {
                int d = 16 + rnd.nextInt(23); // digits of the integer quotient at the result scale
                int k = 38 - d;
                // odd C' near 10^k (either side), so R = (C'-1)/2 leaves C' - 2R = 1
                BigInteger c1 =
                        TEN.pow(Math.max(0, k))
                                .add(BigInteger.valueOf(rnd.nextInt(2001) - 1000))
                                .max(BigInteger.ONE)
                                .or(BigInteger.ONE);
                BigInteger count = c1.multiply(TEN.pow(up));
                if (count.bitLength() > 63) {
                    continue;
                }
                BigInteger q = TEN.pow(d - 1).add(new BigInteger(62, rnd)).mod(TEN.pow(d));
                BigInteger sum = q.multiply(c1).add(c1.subtract(BigInteger.ONE).shiftRight(1));
                if (sum.compareTo(lim(38)) > 0) {
                    continue;
                }
                long n = count.longValueExact();
                if (rnd.nextBoolean()) {
                    sum = sum.negate();
                }
                if (rnd.nextBoolean()) {
                    n = -n;
                }
                avg(w, s, sum, n);
            }
        }
    }

    private static long randomCount(Random rnd) {
        switch (rnd.nextInt(4)) {
            case 0:
                return 1 + rnd.nextInt(10);
            case 1:
                return rnd.nextLong();
            case 2:
                return (rnd.nextBoolean() ? -1 : 1) * (1 + rnd.nextInt(1_000_000));
            default:
                long n = rnd.nextLong() >>> rnd.nextInt(63);
                return n == 0 ? 1 : n;
        }
    }

    private static void avg(BufferedWriter w, int s, BigInteger sum, long count) throws IOException {
        int rs = Math.max(6, s);
        DecimalData cnt = DecimalDataUtils.castFrom(count, 19, 0);
        DecimalData r = DecimalDataUtils.divide(dec(sum, 38, s), cnt, 38, rs);
        if (r != null) {
            r = DecimalDataUtils.castToDecimal(r, 38, rs);
        }
        w.write(
                String.format(
                        "{\"op\":\"avg\",\"s\":%d,\"a\":\"%s\",\"n\":\"%d\",\"r\":%s}\n",
                        s, sum, count, unscaled(r, rs)));
    }

    // ---------------------------------------------------------------------------------------
    // Strings
    // ---------------------------------------------------------------------------------------

    private static final String[] ATOMS = {
        "", "a", "b", "z", "A", "\u0000", "\u007f", "\u0080", "\u00e9", "\u07ff", "\u0800",
        "\u65e5\u672c", "\ud7ff", "\ue000", "\uff61", "\uffff", "\ud83d\ude00", "\udbff\udfff",
        "\ud800\udc00"
    };

    private static String randomString(Random rnd) {
        StringBuilder b = new StringBuilder();
        int n = rnd.nextInt(4);
        for (int i = 0; i < n; i++) {
            b.append(ATOMS[rnd.nextInt(ATOMS.length)]);
        }
        return b.toString();
    }

    private static void strings(BufferedWriter w) throws IOException {
        Random rnd = new Random(7);
        HexFormat hex = HexFormat.of();
        List<String[]> pairs = new ArrayList<>();
        for (String a : ATOMS) {
            for (String b : ATOMS) {
                pairs.add(new String[] {a, b});
            }
        }
        for (int i = 0; i < 1500; i++) {
            String a = randomString(rnd);
            pairs.add(new String[] {a, rnd.nextInt(4) == 0 ? a + randomString(rnd) : randomString(rnd)});
        }
        for (String[] pr : pairs) {
            byte[] a = pr[0].getBytes(StandardCharsets.UTF_8);
            byte[] b = pr[1].getBytes(StandardCharsets.UTF_8);
            // As the aggregate sees them: deserialized from bytes.
            int bytes = Integer.signum(BinaryStringData.fromBytes(a).compareTo(BinaryStringData.fromBytes(b)));
            // Both backed by java.lang.String (e.g. built by a UDF in the same chain): UTF-16 order.
            int utf16 = Integer.signum(BinaryStringData.fromString(pr[0]).compareTo(BinaryStringData.fromString(pr[1])));
            w.write(
                    String.format(
                            "{\"op\":\"cmpstr\",\"a\":\"%s\",\"b\":\"%s\",\"r\":%d,\"utf16\":%d}\n",
                            hex.formatHex(a), hex.formatHex(b), bytes, utf16));
        }
    }

    // ---------------------------------------------------------------------------------------
    // Changelogs of real SQL group aggregations
    // ---------------------------------------------------------------------------------------

    private static final String[] QUERIES = {
        // Each aggregate function as itself (one call per function: nothing for
        // AggregateReduceFunctionsRule to share).
        "SELECT k, SUM(d), AVG(d), MIN(d), MAX(d), MIN(v), MAX(v), COUNT(*) FROM t GROUP BY k",
        // SUM and AVG next to COUNT(d) share it: AggregateReduceFunctionsRule plans $SUM0(d) and
        // COUNT(d), and a Calc computes CASE COUNT(d) WHEN 0 THEN NULL ELSE $SUM0(d) END and
        // CAST(that AS DECIMAL(38, max(6, s))) / COUNT(d).
        "SELECT k, SUM(d), AVG(d), COUNT(d) FROM t GROUP BY k",
    };

    private static final class Scenario {
        final String name;
        final int p, s;
        final boolean retract;
        final List<Row> rows = new ArrayList<>();

        Scenario(String name, int p, int s, boolean retract) {
            this.name = name;
            this.p = p;
            this.s = s;
            this.retract = retract;
        }

        Scenario row(RowKind kind, int k, BigInteger d, String v) {
            rows.add(Row.ofKind(kind, k, d == null ? null : new BigDecimal(d, s), v));
            return this;
        }
    }

    private static List<Scenario> scenarios() {
        List<Scenario> out = new ArrayList<>();
        BigInteger max38 = lim(38);
        RowKind I = RowKind.INSERT, U = RowKind.UPDATE_BEFORE, A = RowKind.UPDATE_AFTER, D = RowKind.DELETE;
        out.add(
                new Scenario("overflow restarts SUM, sticks in AVG", 38, 0, false)
                        .row(I, 1, max38, "a")
                        .row(I, 1, BigInteger.ONE, "b")
                        .row(I, 1, BigInteger.valueOf(5), "\ue000")
                        .row(I, 1, null, null)
                        .row(I, 1, max38.negate(), "\ud83d\ude00")
                        .row(I, 2, TEN.pow(32), "")
                        .row(I, 2, TEN.pow(31), "\u0000")
                        .row(I, 2, BigInteger.valueOf(-7), "zz")
                        .row(I, 3, BigInteger.valueOf(2), "x")
                        .row(I, 3, BigInteger.valueOf(1), "x")
                        .row(I, 3, BigInteger.valueOf(3), "x"));
        out.add(
                new Scenario("retraction: SUM from 0 - x, AVG of a negative count", 38, 6, true)
                        .row(D, 1, BigInteger.valueOf(5), "a")
                        .row(I, 1, BigInteger.valueOf(1), "b")
                        .row(U, 1, BigInteger.valueOf(9), "c")
                        .row(A, 1, max38, "d")
                        .row(A, 1, max38, "d")
                        .row(U, 1, max38, "d")
                        .row(A, 2, BigInteger.valueOf(10), "\ue000")
                        .row(A, 2, BigInteger.valueOf(20), "\ud83d\ude00")
                        .row(D, 2, BigInteger.valueOf(20), "\ud83d\ude00")
                        .row(D, 2, BigInteger.valueOf(10), "\ue000")
                        .row(I, 2, BigInteger.valueOf(3), "q"));
        Random rnd = new Random(11);
        int n = 0;
        for (int[] t : new int[][] {{38, 0}, {38, 4}, {38, 12}, {37, 1}, {20, 2}, {10, 2}, {5, 0}, {18, 18}}) {
            for (boolean retract : new boolean[] {false, true}) {
                Scenario sc = new Scenario("random " + n++, t[0], t[1], retract);
                List<Row> sent = new ArrayList<>();
                for (int i = 0; i < 150; i++) {
                    int k = rnd.nextInt(4);
                    BigInteger d = rnd.nextInt(8) == 0 ? null : randomUnscaled(rnd, t[0]);
                    if (d != null && rnd.nextInt(3) == 0) {
                        d = BigInteger.valueOf(rnd.nextInt(9) - 4); // repeats
                    }
                    String v = rnd.nextInt(8) == 0 ? null : randomString(rnd);
                    RowKind kind = I;
                    if (retract) {
                        int x = rnd.nextInt(10);
                        if (x < 3 && !sent.isEmpty()) {
                            Row r = sent.remove(rnd.nextInt(sent.size()));
                            k = (Integer) r.getField(0);
                            d = r.getField(1) == null ? null : ((BigDecimal) r.getField(1)).unscaledValue();
                            v = (String) r.getField(2);
                            kind = rnd.nextBoolean() ? U : D;
                        } else if (x == 3) {
                            kind = rnd.nextBoolean() ? U : D;
                        } else if (x == 4) {
                            kind = A;
                        }
                    }
                    sc.row(kind, k, d, v);
                    if (kind == I || kind == A) {
                        sent.add(sc.rows.get(sc.rows.size() - 1));
                    }
                }
                out.add(sc);
            }
        }
        return out;
    }

    private static void changelogs(BufferedWriter w) throws Exception {
        HexFormat hex = HexFormat.of();
        for (Scenario sc : scenarios()) {
            for (String query : QUERIES) {
                StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
                env.setParallelism(1);
                StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
                DataStream<Row> ds =
                        env.fromData(
                                sc.rows,
                                Types.ROW_NAMED(
                                        new String[] {"k", "d", "v"},
                                        Types.INT,
                                        Types.BIG_DEC,
                                        Types.STRING));
                Schema schema =
                        Schema.newBuilder()
                                .column("k", DataTypes.INT())
                                .column("d", DataTypes.DECIMAL(sc.p, sc.s))
                                .column("v", DataTypes.STRING())
                                .build();
                Table t =
                        tEnv.fromChangelogStream(
                                ds, schema, sc.retract ? ChangelogMode.all() : ChangelogMode.insertOnly());
                tEnv.createTemporaryView("t", t);
                String plan = tEnv.explainSql(query);
                String agg = plan.substring(plan.lastIndexOf("== Optimized Execution Plan =="));
                agg = agg.substring(agg.indexOf("== Optimized Execution Plan ==") + 31);
                agg = agg.substring(0, agg.indexOf("+- Exchange")).strip().replace("\n", " ");
                Table result = tEnv.sqlQuery(query);
                int cols = result.getResolvedSchema().getColumnCount();
                StringBuilder b = new StringBuilder();
                b.append("{\"name\":\"").append(sc.name).append("\",\"p\":").append(sc.p);
                b.append(",\"s\":").append(sc.s).append(",\"retract\":").append(sc.retract);
                b.append(",\"query\":\"").append(query).append("\",\"agg\":\"").append(agg);
                b.append("\",\"types\":[");
                for (int c = 0; c < cols; c++) {
                    b.append(c > 0 ? "," : "").append('"')
                            .append(result.getResolvedSchema().getColumnDataTypes().get(c))
                            .append('"');
                }
                b.append("],\"in\":[");
                for (int i = 0; i < sc.rows.size(); i++) {
                    Row r = sc.rows.get(i);
                    b.append(i > 0 ? "," : "").append(rowJson(r, hex));
                }
                b.append("],\"out\":[");
                int i = 0;
                try (CloseableIterator<Row> it = tEnv.toChangelogStream(result).executeAndCollect()) {
                    while (it.hasNext()) {
                        b.append(i++ > 0 ? "," : "").append(rowJson(it.next(), hex));
                    }
                }
                b.append("]}\n");
                w.write(b.toString());
            }
        }
    }

    /** A row as [kind, values...]: DECIMAL as its unscaled value, strings as UTF-8 hex. */
    private static String rowJson(Row r, HexFormat hex) {
        StringBuilder b = new StringBuilder("[\"").append(r.getKind().shortString()).append('"');
        for (int c = 0; c < r.getArity(); c++) {
            Object v = r.getField(c);
            b.append(',');
            if (v == null) {
                b.append("null");
            } else if (v instanceof BigDecimal) {
                b.append("\"d").append(((BigDecimal) v).unscaledValue()).append('"');
            } else if (v instanceof String) {
                b.append("\"s").append(hex.formatHex(((String) v).getBytes(StandardCharsets.UTF_8))).append('"');
            } else {
                b.append("\"n").append(v).append('"');
            }
        }
        return b.append(']').toString();
    }
}
