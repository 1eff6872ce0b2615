package io.ferrystream.ferry.cli;

import io.ferrystream.ferry.FerryOptions;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * {@code ferry bench FILE.sql}: each query of the script on stock Flink and on Ferry, side by side
 * on one MiniCluster: one untimed warm-up job per side, then {@code runs} rounds, the two sides
 * interleaved and their order alternating from round to round, so that neither side gets the
 * JVM's warm-up or a quiet moment of the machine for itself. Rows/s is the rows the job's sources
 * emitted over the job's net runtime (the JobMaster's: submission to end, deployment included);
 * the table shows the median and the range. Every run's result is checked: the checksum of the
 * final result (the changelog applied) must be the same for every run of both sides.
 */
final class BenchRun {
    private final PrintStream out;
    private final Settings settings;
    private final int runs;

    BenchRun(PrintStream out, Settings settings, int runs) {
        this.out = out;
        this.settings = settings;
        this.runs = runs;
    }

    /** The measurements of one query. */
    private record Result(String label, long rows, double[] stock, double[] ferry, String stockSum, String ferrySum,
            boolean sumsAgree, String nativeNote) {}

    int run(String commandLine, Path script, List<SqlScript.Statement> statements) throws Exception {
        out.println(commandLine + ": stock Flink against Ferry, " + runs + " timed rounds after one warm-up per side");
        settings.print(out, true);
        out.printf("JVM: %s %s, %d cores, max heap %d MiB%n%n", System.getProperty("java.vm.name"),
                System.getProperty("java.version"), Runtime.getRuntime().availableProcessors(),
                Runtime.getRuntime().maxMemory() >> 20);
        List<Result> results = new ArrayList<>();
        try (LocalCluster cluster = new LocalCluster(settings.configuration())) {
            Session stock = new Session(false, settings, cluster);
            Session ferry = new Session(true, settings, cluster);
            List<Session> sides = List.of(stock, ferry);
            int query = 0;
            for (SqlScript.Statement st : statements) {
                try {
                    switch (st.kind()) {
                        case SET -> {
                            String[] kv = SqlScript.setKeyValue(st.sql());
                            if (kv != null) {
                                sides.forEach(s -> s.set(kv[0], kv[1]));
                                out.printf("SET %s = %s%n", kv[0], Settings.shown(kv[0], kv[1]));
                            }
                        }
                        case RESET -> {
                            String key = SqlScript.resetKey(st.sql());
                            sides.forEach(s -> s.reset(key));
                        }
                        case OTHER -> {
                            for (Session s : sides) {
                                s.execute(st.sql());
                            }
                        }
                        case QUERY -> results.add(bench(st, ++query, stock, ferry));
                        case INSERT -> throw new IllegalArgumentException(
                                "ferry bench measures queries (their results are checked); run INSERTs with ferry sql");
                    }
                } catch (Exception e) {
                    throw new FerryCli.ScriptException(
                            script + ":" + st.line() + ": " + FerryCli.oneLine(st.sql(), 100) + "\n" + FerryCli.describe(e), e);
                }
            }
        }
        return report(results);
    }

    private Result bench(SqlScript.Statement st, int query, Session stock, Session ferry) throws Exception {
        out.println("-- query " + query + " (" + st.label() + "): " + FerryCli.oneLine(st.sql(), 120));
        String[] sums = new String[2];
        boolean agree = true;
        long rows = -1;
        String nativeNote = null;
        double[][] rates = new double[2][runs];
        for (int round = 0; round <= runs; round++) {
            Session[] order = round % 2 == 0 ? new Session[] {stock, ferry} : new Session[] {ferry, stock};
            StringBuilder line = new StringBuilder(round == 0 ? "  warm-up:   " : String.format("  round %d/%d: ", round, runs));
            for (Session s : order) {
                out.print(line);
                out.flush();
                line.setLength(0);
                Changelogs.Materializer[] m = new Changelogs.Materializer[1]; // made once the plan is known
                Session.Run r = s.run(st.sql(), false, plan -> m[0] = new Changelogs.Materializer(plan.upsertKey));
                int side = s.ferry ? 1 : 0;
                String sum = Changelogs.checksum(m[0].table());
                if (sums[side] == null) {
                    sums[side] = sum;
                } else if (!sums[side].equals(sum)) {
                    agree = false;
                }
                long source = r.sourceRows();
                if (rows < 0) {
                    rows = source;
                }
                double rate = source * 1000.0 / Math.max(1, r.netRuntimeMillis);
                if (round > 0) {
                    rates[side][round - 1] = rate;
                }
                if (s.ferry && nativeNote == null) {
                    nativeNote = nativeNote(r);
                }
                out.printf("%s %s rows/s (%.2f s, %s changelog rows, checksum %s)%s", s.name, rate(rate),
                        r.netRuntimeMillis / 1000.0, count(r.rowCount), sum, s == order[0] ? " | " : "\n");
                out.flush();
            }
        }
        agree &= sums[0].equals(sums[1]);
        out.println("  native on the Ferry side: " + nativeNote);
        out.println();
        return new Result("query " + query + " (" + st.label() + ")", rows, rates[0], rates[1], sums[0], sums[1], agree, nativeNote);
    }

    /** "N of M candidate nodes" of a Ferry run, counted from the operators the job opened. */
    private static String nativeNote(Session.Run r) {
        int ran = 0;
        for (PlanAnalysis.Candidate c : r.plan.candidates) {
            if (c.isNative() && r.openedFor(c.description()) > 0) {
                ran++;
            }
        }
        String s = ran + " of " + r.plan.candidates.size() + " candidate nodes";
        if (!r.plan.others.isEmpty()) {
            s += " (+" + r.plan.others.size() + " stateful operators without a native kind)";
        }
        return s;
    }

    private int report(List<Result> results) {
        out.println("== " + FerryOptions.ENABLED.key() + " false against true: median rows/s of " + runs
                + " interleaved runs (range), rows the sources emitted over the job's net runtime");
        out.println();
        out.println("| query | rows | stock Flink: rows/s | Ferry: rows/s | Ferry / stock | native | result checksum, stock / Ferry |");
        out.println("|---|---:|---:|---:|---:|---|---|");
        boolean ok = true;
        for (Result r : results) {
            double s = median(r.stock());
            double f = median(r.ferry());
            ok &= r.sumsAgree();
            out.printf(Locale.ROOT, "| %s | %s | %s (%s–%s) | %s (%s–%s) | %.2f× | %s | %s / %s %s |%n", r.label(), count(r.rows()),
                    rate(s), rate(min(r.stock())), rate(max(r.stock())), rate(f), rate(min(r.ferry())), rate(max(r.ferry())),
                    f / s, r.nativeNote(), r.stockSum(), r.ferrySum(), r.sumsAgree() ? "(equal)" : "(DIFFERENT)");
        }
        out.println();
        out.println(ok ? "checksums: every run of both sides produced the same final result"
                : "DIFFERENT: the runs' final results differ (see the checksums above)");
        return ok ? FerryCli.OK : FerryCli.DIFFERENT;
    }

    static String rate(double perSecond) {
        if (perSecond >= 1e6) {
            return String.format(Locale.ROOT, "%.2f M", perSecond / 1e6);
        }
        if (perSecond >= 1e3) {
            return String.format(Locale.ROOT, "%.0f K", perSecond / 1e3);
        }
        return String.format(Locale.ROOT, "%.0f", perSecond);
    }

    static String count(long n) {
        return String.format(Locale.ROOT, "%,d", n);
    }

    static double median(double[] v) {
        double[] s = v.clone();
        Arrays.sort(s);
        return s.length % 2 == 1 ? s[s.length / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
    }

    private static double min(double[] v) {
        return Arrays.stream(v).min().orElse(0);
    }

    private static double max(double[] v) {
        return Arrays.stream(v).max().orElse(0);
    }
}
