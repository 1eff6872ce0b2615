package io.ferrystream.ferry.bench;

import org.apache.flink.test.util.MiniClusterWithClientResource;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * The JVM side-by-side benchmark ({@code ./build.sh bench-jvm}): Flink's own group aggregate
 * against Ferry's, in one JVM. Sections (first argument, default {@code all}):
 *
 * <ul>
 *   <li>{@code operator}: the operators in Flink's test harness, heap / RocksDB / Ferry
 *       interleaved ({@link OperatorBench});
 *   <li>{@code sql}: SQL jobs on a MiniCluster, Ferry off / on interleaved ({@link SqlBench});
 *   <li>{@code sql-2phase}: SQL jobs under Nexmark's mini-batch configuration at parallelism 2,
 *       checksummed ({@link TwoPhaseSqlBench});
 *   <li>{@code split}: where a Ferry batch's time goes ({@link StageSplit});
 *   <li>{@code interval-join}: the row-time interval join of auctions and bids, LEFT and INNER,
 *       heap / RocksDB / Ferry interleaved ({@link IntervalJoinBench}; its defaults: {@code -rows
 *       1M}, {@code -keys 1K,100K}, {@code -reps 5}); {@code interval-join-ferry}: only Ferry's,
 *       for profiling;
 *   <li>{@code window-join}: the tumbling-window join of auctions and bids, likewise ({@link
 *       WindowJoinBench}); {@code window-join-ferry}: only Ferry's;
 *   <li>{@code dedup}: the deduplication ({@code ROW_NUMBER() ... = 1}): q18's last row on row
 *       time and the first row on processing time, heap / RocksDB / Ferry interleaved ({@link
 *       RankBench}; its defaults: {@code -rows 1M}, {@code -keys 1K,1M}, {@code -reps 5});
 *   <li>{@code top-n}: the Top-N: q19's ten highest prices per auction with their rank, and the
 *       highest price per auction, likewise ({@link RankBench}, the same defaults);
 *   <li>{@code ferry-only}: only Ferry's operator through the operator driver, for profiling
 *       (JFR); {@code sql-ferry}: only the Ferry-on SQL jobs, likewise; {@code one-row}: only
 *       Ferry calls of one-row batches (the fixed cost of a call from Java), likewise;
 *   <li>{@code call-cost}: one {@code NativeOperator.process} call of 1 and of 1024 rows, batches
 *       moved by Arrow Java's C Data Interface and by Ferry's own export and chunk loading,
 *       interleaved ({@link CallCost}; first of {@code -keys}, {@code -reps} passes);
 *   <li>{@code lookup-join}: the q13-shaped lookup join with Flink's test lookup source, sync and
 *       async, Ferry off / on interleaved ({@link LookupJoinBench}; {@code -sql-rows} probe rows,
 *       default 200K; {@code -reps});
 *   <li>{@code all}: operator, sql, split.
 * </ul>
 *
 * Flags: {@code -rows N} operator rows per pass (default 2M), {@code -keys 10K,1M},
 * {@code -reps 3}, {@code -batch 1024}, {@code -sql-rows N} (default 2M), {@code -sql-keys N}
 * (default 100K), {@code -variants heap,rocksdb,ferry}, {@code -values bigint,decimal,string}
 * (the operator sections' value columns, one table each: {@link OperatorBench.Values}; default
 * bigint), {@code -csv FILE} (the operator section's medians for tests/perf/plot.py), {@code -quick} (small sizes, one repetition). Progress goes to stderr, markdown tables
 * to stdout.
 */
public final class Bench {
    private Bench() {}

    static final String USAGE =
            "usage: bench-jvm [all|operator|sql|sql-2phase|exchange|split|interval-join|ferry-only|sql-ferry|one-row|call-cost|interval-join-ferry|window-join|window-join-ferry|dedup|top-n|lookup-pg|lookup-join|state-size|checkpoint] [-rows N] [-keys 10K,1M] [-reps N]"
                    + " [-batch N] [-sql-rows N] [-sql-keys N] [-sql-minibatch N] [-variants heap,rocksdb,ferry]"
                    + " [-values bigint,decimal,string] [-csv FILE] [-quick]";

    static void log(String format, Object... args) {
        System.err.printf(Locale.ROOT, format + "%n", args);
        System.err.flush();
    }

    static String rate(double rowsPerSecond) {
        if (rowsPerSecond >= 1e6) {
            return String.format(Locale.ROOT, "%.2f M", rowsPerSecond / 1e6);
        }
        return String.format(Locale.ROOT, rowsPerSecond < 1e4 ? "%.2f K" : "%.0f K", rowsPerSecond / 1e3);
    }

    static String count(long n) {
        if (n >= 1_000_000 && n % 1_000_000 == 0) {
            return n / 1_000_000 + " M";
        }
        if (n >= 1_000 && n % 1_000 == 0) {
            return n / 1_000 + " K";
        }
        return Long.toString(n);
    }

    static long parseCount(String s) {
        String t = s.trim().toUpperCase(Locale.ROOT);
        long mul = 1;
        if (t.endsWith("K")) {
            mul = 1_000;
            t = t.substring(0, t.length() - 1);
        } else if (t.endsWith("M")) {
            mul = 1_000_000;
            t = t.substring(0, t.length() - 1);
        }
        return Long.parseLong(t) * mul;
    }

    public static void main(String[] args) throws Exception {
        String section = "all";
        int rows = 2_000_000;
        int[] keys = {10_000, 1_000_000};
        int reps = 3;
        int batch = 1024;
        long sqlRows = 2_000_000;
        int sqlKeys = 100_000;
        String variantsArg = "heap,rocksdb,ferry";
        String valuesArg = "bigint";
        String csv = null;
        List<String> rest = new ArrayList<>(Arrays.asList(args));
        if (!rest.isEmpty() && !rest.get(0).startsWith("-")) {
            section = rest.remove(0);
        }
        if (section.equals("lookup-join")) {
            sqlRows = 200_000;
        }
        if (section.startsWith("interval-join") || section.startsWith("window-join")) {
            rows = 1_000_000;
            keys = new int[] {1_000, 100_000};
            reps = 5;
        }
        if (section.equals("dedup") || section.equals("top-n")) {
            rows = 1_000_000;
            keys = new int[] {1_000, 1_000_000};
            reps = 5;
        }
        if (section.startsWith("lookup")) {
            rows = 50_000;
            reps = 3;
        }
        for (int i = 0; i < rest.size(); i++) {
            String a = rest.get(i);
            String v = i + 1 < rest.size() ? rest.get(i + 1) : null;
            switch (a) {
                case "-rows": rows = (int) parseCount(v); i++; break;
                case "-keys": keys = Arrays.stream(v.split(",")).mapToInt(k -> (int) parseCount(k)).toArray(); i++; break;
                case "-reps": reps = Integer.parseInt(v); i++; break;
                case "-batch": batch = Integer.parseInt(v); i++; break;
                case "-sql-rows": sqlRows = parseCount(v); i++; break;
                case "-sql-keys": sqlKeys = (int) parseCount(v); i++; break;
                case "-sql-minibatch": SqlBench.miniBatchSize = (int) parseCount(v); i++; break;
                case "-variants": variantsArg = v; i++; break;
                case "-values": valuesArg = v; i++; break;
                case "-csv": csv = v; i++; break;
                case "-quick":
                    rows = 200_000;
                    keys = new int[] {10_000, 100_000};
                    reps = 1;
                    sqlRows = 100_000;
                    sqlKeys = 10_000;
                    break;
                case "-h":
                case "-help":
                    System.err.println(USAGE);
                    return;
                default:
                    throw new IllegalArgumentException("unknown flag " + a + "\n" + USAGE);
            }
        }
        List<OperatorBench.Variant> variants = new ArrayList<>();
        for (String v : variantsArg.split(",")) {
            variants.add(OperatorBench.Variant.valueOf(v.trim().toUpperCase(Locale.ROOT)));
        }
        List<OperatorBench.Values> values = new ArrayList<>();
        for (String v : valuesArg.split(",")) {
            values.add(OperatorBench.Values.valueOf(v.trim().toUpperCase(Locale.ROOT)));
        }
        Runtime rt = Runtime.getRuntime();
        String commit = System.getProperty("ferry.commit", "unknown");
        String env = String.format(Locale.ROOT, "commit %s; JDK %s (%s), %d CPUs, max heap %d MiB, Flink %s", commit,
                System.getProperty("java.version"), System.getProperty("java.vm.name"), rt.availableProcessors(),
                rt.maxMemory() >> 20, org.apache.flink.runtime.util.EnvironmentInformation.getVersion());
        log("bench-jvm %s: %s", section, env);
        StringBuilder out = new StringBuilder();
        out.append("<!-- ").append(env).append(" -->\n\n");
        long start = System.nanoTime();
        switch (section) {
            case "all":
                List<OperatorBench.Result> ops = operator(out, values, keys, rows, reps, batch, variants);
                writeCsv(csv, ops);
                sql(out, sqlRows, sqlKeys, reps, false);
                split(out, keys, rows, reps, batch, ops);
                break;
            case "operator":
                writeCsv(csv, operator(out, values, keys, rows, reps, batch, variants));
                break;
            case "sql":
                sql(out, sqlRows, sqlKeys, reps, false);
                break;
            case "split":
                split(out, keys, rows, reps, batch, List.of());
                break;
            case "ferry-only":
                operator(out, values, keys, rows, reps, batch, List.of(OperatorBench.Variant.FERRY));
                break;
            case "interval-join":
                IntervalJoinBench.table(out, keys, rows, reps, batch, variants);
                break;
            case "lookup-join":
                LookupJoinBench.run(out, sqlRows, reps);
                break;
            case "window-join":
                IntervalJoinBench.table(WindowJoinBench.SHAPE, out, keys, rows, reps, batch, variants);
                break;
            case "window-join-ferry":
                IntervalJoinBench.table(WindowJoinBench.SHAPE, out, keys, rows, reps, batch, List.of(OperatorBench.Variant.FERRY));
                break;
            case "dedup":
            case "top-n":
                RankBench.table(section, out, keys, rows, reps, batch, variants);
                break;
            case "interval-join-ferry":
                IntervalJoinBench.table(out, keys, rows, reps, batch, List.of(OperatorBench.Variant.FERRY));
                break;
            case "sql-2phase":
                TwoPhaseSqlBench.table(out, sqlRows, sqlKeys, reps, commit);
                break;
            case "exchange":
                ExchangeBench.table(out, keys, rows, reps, commit);
                break;
            case "sql-ferry":
                sql(out, sqlRows, sqlKeys, reps, true);
                break;
            case "lookup-pg":
                LookupBench.table(out, rows, rows / 10, reps, commit);
                break;
            case "state-size":
                StateSize.table(out, keys);
                break;
            case "checkpoint":
                CheckpointBench.table(out, keys, reps);
                break;
            case "call-cost":
                CallCost.table(out, keys[0], reps);
                break;
            case "one-row":
                out.append("### Ferry, batches of one row (ns per call, last of ").append(reps).append(" rounds)\n\n")
                        .append("| keys | ns per call |\n|---:|---:|\n");
                for (int k : keys) {
                    double ns = StageSplit.oneRowOnly(k, 200_000, reps);
                    out.append(String.format(Locale.ROOT, "| %s | %.0f |%n", count(k), ns));
                }
                OperatorBench.Planned p = OperatorBench.plan(true, batch);
                double[] trip = StageSplit.javaArrowRoundTrip(
                        ((io.ferrystream.ferry.kinds.groupaggregate.FerryGroupAggregateOperator) p.operator()).spec(),
                        BenchBids.row(1000, 100), 200_000, reps);
                out.append(String.format(Locale.ROOT,
                        "%nArrow Java C Data Interface alone (the one-row input batch, no Go): export %.0f ns,"
                                + " import %.0f ns per call%n%n", trip[0], trip[1]));
                break;
            default:
                throw new IllegalArgumentException("unknown section " + section);
        }
        log("bench-jvm %s done in %.0f s", section, (System.nanoTime() - start) / 1e9);
        System.out.print(out);
        System.out.flush();
        // MiniCluster and RocksDB leave non-daemon threads behind.
        System.exit(0);
    }

    /** The operator side by side: one table per value column, its cardinalities as rows. */
    static List<OperatorBench.Result> operator(StringBuilder out, List<OperatorBench.Values> values, int[] keys,
            int rows, int reps, int batch, List<OperatorBench.Variant> variants) throws Exception {
        List<OperatorBench.Result> all = new ArrayList<>();
        for (OperatorBench.Values v : values) {
            all.addAll(operator(out, v, keys, rows, reps, batch, variants));
        }
        return all;
    }

    static List<OperatorBench.Result> operator(StringBuilder out, OperatorBench.Values values, int[] keys,
            int rows, int reps, int batch, List<OperatorBench.Variant> variants) throws Exception {
        List<OperatorBench.Result> results = new ArrayList<>();
        for (int k : keys) {
            results.add(OperatorBench.run(values, k, rows, reps, batch, variants));
        }
        out.append(String.format(Locale.ROOT,
                "### Operators side by side, %s (%s rows per pass, batch %d, median of %d interleaved passes; min–max)%n%n",
                values.label(), count(rows), batch, reps));
        out.append('`').append(values.query).append("`\n\n");
        StringBuilder head = new StringBuilder("| keys |");
        StringBuilder rule = new StringBuilder("|---:|");
        for (OperatorBench.Variant v : variants) {
            head.append(' ').append(v.label).append(": rows/s |");
            rule.append("---:|");
        }
        boolean ratios = variants.contains(OperatorBench.Variant.FERRY) && variants.size() > 1;
        if (ratios) {
            for (OperatorBench.Variant v : variants) {
                if (v != OperatorBench.Variant.FERRY) {
                    head.append(" Ferry / ").append(v == OperatorBench.Variant.HEAP ? "heap" : "RocksDB (in memory / on disk)").append(" |");
                    rule.append("---:|");
                }
            }
        }
        out.append(head).append('\n').append(rule).append('\n');
        for (OperatorBench.Result r : results) {
            out.append("| ").append(count(r.keys())).append(" |");
            for (OperatorBench.Variant v : variants) {
                double[] all = r.of(v).stream().mapToDouble(OperatorBench.Pass::rowsPerSecond).toArray();
                out.append(' ').append(rate(r.median(v))).append(" (").append(rate(Stats.min(all)))
                        .append("–").append(rate(Stats.max(all))).append(") |");
            }
            if (ratios) {
                for (OperatorBench.Variant v : variants) {
                    if (v != OperatorBench.Variant.FERRY) {
                        out.append(String.format(Locale.ROOT, " %.1f× |", r.median(OperatorBench.Variant.FERRY) / r.median(v)));
                    }
                }
            }
            out.append('\n');
        }
        out.append('\n');
        for (OperatorBench.Result r : results) {
            for (String d : r.operators()) {
                out.append("<!-- ").append(count(r.keys())).append(" keys: ").append(d).append(" -->\n");
            }
            List<OperatorBench.Pass> passes = r.passes();
            out.append(String.format(Locale.ROOT, "<!-- %s keys: every pass of every variant checksummed, equal pass for"
                    + " pass; the last: %016x -->%n", count(r.keys()), passes.get(passes.size() - 1).checksum()));
        }
        out.append('\n');
        return results;
    }

    /**
     * Writes the operator sections' medians to {@code path} (nothing when it is null) as
     * {@code variant,keys,rows_per_s}, the input of tests/perf/plot.py; BIGINT values only.
     */
    static void writeCsv(String path, List<OperatorBench.Result> results) throws java.io.IOException {
        if (path == null) {
            return;
        }
        StringBuilder csv = new StringBuilder("variant,keys,rows_per_s\n");
        for (OperatorBench.Variant v : OperatorBench.Variant.values()) {
            for (OperatorBench.Result r : results) {
                if (r.values() == OperatorBench.Values.BIGINT && !r.of(v).isEmpty()) {
                    csv.append(String.format(Locale.ROOT, "%s,%d,%.0f%n",
                            v.name().toLowerCase(Locale.ROOT), r.keys(), r.median(v)));
                }
            }
        }
        java.nio.file.Files.writeString(java.nio.file.Path.of(path), csv);
        log("wrote %s", path);
    }

    static void sql(StringBuilder out, long rows, int keys, int reps, boolean ferryOnly) throws Exception {
        MiniClusterWithClientResource cluster = SqlBench.startCluster();
        List<SqlBench.Result> results = new ArrayList<>();
        try {
            for (SqlBench.Query q : List.of(SqlBench.Q17, SqlBench.Q4)) {
                results.add(SqlBench.run(q, rows, keys, reps, ferryOnly));
            }
        } finally {
            cluster.after();
        }
        out.append(String.format(Locale.ROOT,
                "### SQL end to end (MiniCluster, 1 TaskManager, parallelism 1, heap backend, %s;"
                        + " %s input rows, %s auctions; median of %d interleaved runs; min–max)%n%n",
                SqlBench.miniBatchSize > 0
                        ? "mini-batch of " + count(SqlBench.miniBatchSize) + " rows, one phase"
                        : "mini-batch off",
                count(rows), count(keys), reps));
        out.append("| query | Ferry off: rows/s | Ferry on: rows/s | Ferry on, columnar exchange off: rows/s | Ferry / Flink |"
                + " columnar off / Flink | no aggregate (source + Calc → checksum sink): rows/s | result checksum |\n"
                + "|---|---:|---:|---:|---:|---:|---:|---|\n");
        for (SqlBench.Result r : results) {
            double stock = r.median(SqlBench.Mode.STOCK);
            out.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %s | %s | %s | %016x |%n", r.query().name(),
                    spread(stock, r.rates(SqlBench.Mode.STOCK)),
                    spread(r.median(SqlBench.Mode.FERRY), r.rates(SqlBench.Mode.FERRY)),
                    spread(r.median(SqlBench.Mode.FERRY_ROWS), r.rates(SqlBench.Mode.FERRY_ROWS)),
                    ratio(r.median(SqlBench.Mode.FERRY) / stock), ratio(r.median(SqlBench.Mode.FERRY_ROWS) / stock),
                    spread(r.median(SqlBench.Mode.BASELINE), r.rates(SqlBench.Mode.BASELINE)), r.checksum()));
        }
        out.append('\n');
    }

    private static String ratio(double r) {
        return Double.isNaN(r) ? "–" : String.format(Locale.ROOT, "%.2f×", r);
    }

    /** "median (min–max)", or "–" without runs. */
    static String spread(double median, double[] all) {
        if (all.length == 0) {
            return "–";
        }
        return rate(median) + " (" + rate(Stats.min(all)) + "–" + rate(Stats.max(all)) + ")";
    }

    static void split(StringBuilder out, int[] keys, int rows, int reps, int batch, List<OperatorBench.Result> ops)
            throws Exception {
        List<StageSplit.Result> results = new ArrayList<>();
        for (int k : keys) {
            results.add(StageSplit.run(k, rows, reps, batch));
        }
        out.append(String.format(Locale.ROOT,
                "### Ferry per stage (ns per input row, median of %d passes of %s rows, batch %d)%n%n",
                reps, count(rows), batch));
        out.append("| keys | RowData→Arrow | native call | emit | operator path | operator bench, Ferry |"
                + " emit with Flink's generic toBinaryRow | downstream: serialize the rows |"
                + " one-row batches: ns per call |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (StageSplit.Result r : results) {
            double[] s = r.nsPerRow();
            double t = r.totalNsPerRow();
            String op = "–";
            for (OperatorBench.Result o : ops) {
                if (o.values() == OperatorBench.Values.BIGINT && o.keys() == r.keys()
                        && !o.of(OperatorBench.Variant.FERRY).isEmpty()) {
                    op = String.format(Locale.ROOT, "%.0f", 1e9 / o.median(OperatorBench.Variant.FERRY));
                }
            }
            out.append(String.format(Locale.ROOT,
                    "| %s | %.0f (%.0f %%) | %.0f (%.0f %%) | %.0f (%.0f %%) | %.0f | %s | %.0f | %.0f | %.0f |%n",
                    count(r.keys()), s[0], 100 * s[0] / t, s[1], 100 * s[1] / t, s[2], 100 * s[2] / t, t, op,
                    s[3], s[4], r.oneRowCallNs()));
        }
        out.append('\n');
    }
}
