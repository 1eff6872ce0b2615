package io.ferrystream.ferry.nexmark.runner;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/**
 * The runner's output from its runs: every run as a CSV line ({@link #runsCsv}), per query the
 * sides' medians over the timed rounds and Ferry's ratios ({@link #summaryCsv}, the plot's input),
 * and the Markdown summary with the geometric means of the ratios ({@link #markdown}).
 */
final class Report {
    private final List<JobRun> runs;
    private final List<String> queries;
    private final List<Side> sides;
    private final Map<String, String> verdicts;

    /**
     * @param verdicts per query, how its checksums compared (from {@link NexmarkRunner})
     */
    Report(List<JobRun> runs, List<String> queries, List<Side> sides, Map<String, String> verdicts) {
        this.runs = runs;
        this.queries = queries;
        this.sides = sides;
        this.verdicts = verdicts;
    }

    static final String RUNS_HEADER = "query,side,round,events,seconds,events_per_s,task_cpu_s,events_per_task_core_s,"
            + "process_cpu_s,events_per_process_core_s,checkpoints,mean_sync_ms,mean_async_ms,peak_state_bytes,checksum,"
            + "final_rows,changelog_rows,stateful_operators,native_planned,native_ran,operators,wall_clock";

    static String runsCsvLine(JobRun r) {
        return String.join(",", r.query(), r.side().id, Integer.toString(r.round()), Long.toString(r.events()),
                num(r.seconds()), num(r.eventsPerSecond()), num(r.taskCpuSeconds()), num(r.eventsPerTaskCore()),
                num(r.processCpuSeconds()), num(r.eventsPerProcessCore()), Integer.toString(r.stats().checkpoints()),
                num(r.stats().syncMillis()), num(r.stats().asyncMillis()), Long.toString(r.stats().peakStateBytes()),
                r.checksumHex(), Long.toString(r.finalRows()), Long.toString(r.added() + r.retracted()),
                Integer.toString(r.statefulOperators()), Integer.toString(r.nativePlanned()), Integer.toString(r.nativeRan()),
                quote(r.operators()), quote(r.wallClock()));
    }

    String runsCsv() {
        StringBuilder b = new StringBuilder(RUNS_HEADER).append('\n');
        for (JobRun r : runs) {
            b.append(runsCsvLine(r)).append('\n');
        }
        return b.toString();
    }

    /** The timed runs of a query on a side. */
    List<JobRun> timed(String query, Side side) {
        List<JobRun> l = new ArrayList<>();
        for (JobRun r : runs) {
            if (r.query().equals(query) && r.side() == side && r.round() > 0) {
                l.add(r);
            }
        }
        return l;
    }

    double median(String query, Side side, ToDoubleFunction<JobRun> f) {
        return median(timed(query, side).stream().mapToDouble(f).toArray());
    }

    static double median(double[] v) {
        if (v.length == 0) {
            return Double.NaN;
        }
        double[] s = v.clone();
        Arrays.sort(s);
        int n = s.length;
        return n % 2 == 1 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
    }

    /** Native operators that ran on the Ferry side, of the stateful ones ("2 of 3"), or "–". */
    String nativeShare(String query) {
        List<JobRun> f = timed(query, Side.FERRY);
        if (f.isEmpty()) {
            return "–";
        }
        JobRun r = f.get(0);
        return (r.nativeRan() < 0 ? r.nativePlanned() + " planned" : Integer.toString(r.nativeRan())) + " of "
                + r.statefulOperators();
    }

    boolean ranNative(String query) {
        List<JobRun> f = timed(query, Side.FERRY);
        return !f.isEmpty() && (f.get(0).nativeRan() > 0 || (f.get(0).nativeRan() < 0 && f.get(0).nativePlanned() > 0));
    }

    double ratio(String query, Side over, ToDoubleFunction<JobRun> f) {
        return median(query, Side.FERRY, f) / median(query, over, f);
    }

    /** Geometric mean of Ferry's ratio over {@code over} across the queries (those with a native operator only, if asked). */
    double geomean(Side over, ToDoubleFunction<JobRun> f, boolean nativeOnly) {
        double logSum = 0;
        int n = 0;
        for (String q : queries) {
            if (nativeOnly && !ranNative(q)) {
                continue;
            }
            double r = ratio(q, over, f);
            if (r > 0 && Double.isFinite(r)) {
                logSum += Math.log(r);
                n++;
            }
        }
        return n == 0 ? Double.NaN : Math.exp(logSum / n);
    }

    /** Per query: the medians and Ferry's ratios, for the plot. */
    String summaryCsv() {
        StringBuilder b = new StringBuilder("query,native,ran_native");
        for (Side s : sides) {
            b.append(',').append(s.id).append("_events_per_s,").append(s.id).append("_events_per_core_s");
        }
        b.append(",ferry_over_heap,ferry_over_rocksdb,ferry_over_heap_per_core,ferry_over_rocksdb_per_core\n");
        for (String q : queries) {
            b.append(q).append(',').append(quote(nativeShare(q))).append(',').append(ranNative(q));
            for (Side s : sides) {
                b.append(',').append(num(median(q, s, JobRun::eventsPerSecond)))
                        .append(',').append(num(median(q, s, JobRun::eventsPerCore)));
            }
            b.append(',').append(num(ratioOrNaN(q, Side.HEAP, JobRun::eventsPerSecond)))
                    .append(',').append(num(ratioOrNaN(q, Side.ROCKSDB, JobRun::eventsPerSecond)))
                    .append(',').append(num(ratioOrNaN(q, Side.HEAP, JobRun::eventsPerCore)))
                    .append(',').append(num(ratioOrNaN(q, Side.ROCKSDB, JobRun::eventsPerCore))).append('\n');
        }
        return b.toString();
    }

    private double ratioOrNaN(String q, Side over, ToDoubleFunction<JobRun> f) {
        return sides.contains(Side.FERRY) && sides.contains(over) ? ratio(q, over, f) : Double.NaN;
    }

    /** The Markdown summary: the main table, checkpoints and state, the geometric means. */
    String markdown(String header) {
        boolean ratios = sides.contains(Side.FERRY) && sides.size() > 1;
        StringBuilder b = new StringBuilder(header).append('\n');
        b.append("| query | stateful operators (Ferry side) | native |");
        StringBuilder rule = new StringBuilder("|---|---|---:|");
        for (Side s : sides) {
            b.append(" events/s: ").append(s.label).append(" |");
            rule.append("---:|");
        }
        if (ratios) {
            for (Side s : sides) {
                if (s != Side.FERRY) {
                    b.append(" Ferry ÷ ").append(s == Side.HEAP ? "heap" : "RocksDB").append(" |");
                    rule.append("---:|");
                }
            }
        }
        for (Side s : sides) {
            b.append(" per core: ").append(s.label).append(" |");
            rule.append("---:|");
        }
        if (ratios) {
            for (Side s : sides) {
                if (s != Side.FERRY) {
                    b.append(" per core, Ferry ÷ ").append(s == Side.HEAP ? "heap" : "RocksDB").append(" |");
                    rule.append("---:|");
                }
            }
        }
        b.append(" result |\n").append(rule).append("---|\n");
        for (String q : queries) {
            List<JobRun> any = timed(q, sides.get(sides.size() - 1));
            String ops = any.isEmpty() ? "–" : any.get(0).operators();
            b.append("| ").append(q).append(" | ").append(ops).append(" | ").append(nativeShare(q)).append(" |");
            for (Side s : sides) {
                b.append(' ').append(spread(q, s, JobRun::eventsPerSecond)).append(" |");
            }
            if (ratios) {
                for (Side s : sides) {
                    if (s != Side.FERRY) {
                        b.append(' ').append(times(ratio(q, s, JobRun::eventsPerSecond))).append(" |");
                    }
                }
            }
            for (Side s : sides) {
                b.append(' ').append(rate(median(q, s, JobRun::eventsPerCore))).append(" |");
            }
            if (ratios) {
                for (Side s : sides) {
                    if (s != Side.FERRY) {
                        b.append(' ').append(times(ratio(q, s, JobRun::eventsPerCore))).append(" |");
                    }
                }
            }
            b.append(' ').append(verdicts.getOrDefault(q, "")).append(" |\n");
        }
        if (ratios) {
            b.append('\n');
            for (Side s : sides) {
                if (s == Side.FERRY) {
                    continue;
                }
                String name = s == Side.HEAP ? "heap" : "RocksDB";
                b.append(String.format(Locale.ROOT,
                        "Geometric mean of Ferry ÷ %s: events/s %s over all %d queries, %s over the %d with a native"
                                + " operator; per core %s and %s.%n",
                        name, times(geomean(s, JobRun::eventsPerSecond, false)), queries.size(),
                        times(geomean(s, JobRun::eventsPerSecond, true)), nativeQueries(),
                        times(geomean(s, JobRun::eventsPerCore, false)),
                        times(geomean(s, JobRun::eventsPerCore, true))));
            }
        }
        b.append("\n| query | side | checkpoints per run | mean sync ms | mean async ms | peak checkpointed state |"
                + " task CPU s | process CPU s | events per process CPU s |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
        for (String q : queries) {
            for (Side s : sides) {
                List<JobRun> t = timed(q, s);
                if (t.isEmpty()) {
                    continue;
                }
                b.append(String.format(Locale.ROOT, "| %s | %s | %.1f | %s | %s | %s | %s | %.2f | %s |%n", q, s.label,
                        t.stream().mapToInt(r -> r.stats().checkpoints()).average().orElse(0),
                        ms(mean(t, r -> r.stats().syncMillis())), ms(mean(t, r -> r.stats().asyncMillis())),
                        bytes(t.stream().mapToLong(r -> r.stats().peakStateBytes()).max().orElse(-1)),
                        seconds(median(q, s, JobRun::taskCpuSeconds)), median(q, s, JobRun::processCpuSeconds),
                        rate(median(q, s, JobRun::eventsPerProcessCore))));
            }
        }
        return b.toString();
    }

    private int nativeQueries() {
        int n = 0;
        for (String q : queries) {
            if (ranNative(q)) {
                n++;
            }
        }
        return n;
    }

    /** Mean over the runs that took a checkpoint. */
    private static double mean(List<JobRun> runs, ToDoubleFunction<JobRun> f) {
        return runs.stream().mapToDouble(f).filter(v -> !Double.isNaN(v)).average().orElse(Double.NaN);
    }

    private String spread(String q, Side s, ToDoubleFunction<JobRun> f) {
        double[] v = timed(q, s).stream().mapToDouble(f).toArray();
        if (v.length == 0) {
            return "–";
        }
        if (v.length == 1) {
            return rate(v[0]);
        }
        return rate(median(v)) + " (" + rate(Arrays.stream(v).min().orElseThrow()) + "–"
                + rate(Arrays.stream(v).max().orElseThrow()) + ")";
    }

    static String rate(double perSecond) {
        if (Double.isNaN(perSecond)) {
            return "–";
        }
        if (perSecond >= 1e6) {
            return String.format(Locale.ROOT, "%.2f M", perSecond / 1e6);
        }
        if (perSecond >= 1e4) {
            return String.format(Locale.ROOT, "%.0f K", perSecond / 1e3);
        }
        return String.format(Locale.ROOT, "%.1f K", perSecond / 1e3);
    }

    static String times(double ratio) {
        return Double.isNaN(ratio) ? "–" : String.format(Locale.ROOT, "%.2f×", ratio);
    }

    private static String seconds(double v) {
        return Double.isNaN(v) ? "–" : String.format(Locale.ROOT, "%.2f", v);
    }

    private static String ms(double v) {
        return Double.isNaN(v) ? "–" : String.format(Locale.ROOT, "%.0f", v);
    }

    static String bytes(long b) {
        if (b < 0) {
            return "–";
        }
        if (b >= 1 << 30) {
            return String.format(Locale.ROOT, "%.2f GiB", b / (double) (1 << 30));
        }
        if (b >= 1 << 20) {
            return String.format(Locale.ROOT, "%.1f MiB", b / (double) (1 << 20));
        }
        return String.format(Locale.ROOT, "%.1f KiB", b / 1024.0);
    }

    private static String num(double v) {
        return Double.isNaN(v) ? "" : String.format(Locale.ROOT, "%.4f", v);
    }

    private static String quote(String s) {
        return "\"" + s.replace("\"", "\"\"") + "\"";
    }

    /** Runs grouped by query, in order. */
    static Map<String, List<JobRun>> byQuery(List<JobRun> runs) {
        Map<String, List<JobRun>> m = new LinkedHashMap<>();
        for (JobRun r : runs) {
            m.computeIfAbsent(r.query(), k -> new ArrayList<>()).add(r);
        }
        return m;
    }
}
