package io.ferrystream.ferry.nexmark.runner;

import io.ferrystream.ferry.nexmark.table.SideInputTableFactory;

import org.apache.flink.runtime.util.EnvironmentInformation;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * {@code ./build.sh nexmark}: Nexmark's queries on stock Flink (heap, RocksDB) and on Ferry
 * (docs/nexmark.md#the-runner). Per query, one warm-up job per side, then rounds of one timed job
 * per side, the sides' order rotating from round to round. Every job's final table is
 * checksummed; all jobs of a query over the same events must agree, or the run fails (exit 1),
 * except where the plan makes the result depend on the wall clock and no native operator ran.
 * Writes {@code runs.csv} (every job, as it ends), {@code summary.csv} and {@code summary.md} into
 * the output directory and prints the summary. Exit codes: 0 equal results, 1 a result differed,
 * 2 an error (a bad option, a job that failed).
 */
public final class NexmarkRunner {
    private NexmarkRunner() {}

    public static void main(String[] args) {
        int code;
        try {
            code = run(args, System.out, System.err);
        } catch (IllegalArgumentException e) {
            System.err.println("nexmark: " + e.getMessage());
            code = 2;
        } catch (Throwable t) {
            System.err.println("nexmark: failed: " + t);
            t.printStackTrace(System.err);
            code = 2;
        }
        System.out.flush();
        System.err.flush();
        // A MiniCluster and RocksDB leave non-daemon threads behind.
        System.exit(code);
    }

    static int run(String[] args, PrintStream out, PrintStream err) throws Exception {
        RunnerOptions options = RunnerOptions.parse(args);
        Files.createDirectories(options.out());
        Path sideInput = options.out().resolve("side_input.txt");
        SideInputTableFactory.write(sideInput, 10_000);
        Path runsCsv = options.out().resolve("runs.csv");
        Files.writeString(runsCsv, Report.RUNS_HEADER + "\n");
        String started = Instant.now().truncatedTo(ChronoUnit.SECONDS).toString();
        long t0 = System.nanoTime();

        List<JobRun> runs = new ArrayList<>();
        Map<String, String> verdicts = new LinkedHashMap<>();
        List<String> failures = new ArrayList<>();
        String clusterLine;
        try (Cluster cluster = options.cluster() == null
                ? new LocalCluster(options.clusterConfiguration(), options.parallelism())
                : new RemoteCluster(options.cluster(), options.userJar(), options.taskManagerPids())) {
            clusterLine = cluster.describe();
            err.printf("nexmark: %d queries x %d sides on %s; %d events per job%n", options.queries().size(),
                    options.sides().size(), clusterLine, options.events());
            JobRunner runner = new JobRunner(cluster, options.jobConfiguration(), options.variables(sideInput));
            for (String q : options.queries()) {
                List<JobRun> mine = new ArrayList<>();
                if (options.warmupEvents() > 0) {
                    for (Side s : options.sides()) {
                        mine.add(record(runner.run(q, s, 0, options.warmupEvents()), runsCsv, err));
                    }
                }
                for (int round = 1; round <= options.rounds(); round++) {
                    for (Side s : rotated(options.sides(), round - 1)) {
                        mine.add(record(runner.run(q, s, round, options.events()), runsCsv, err));
                    }
                }
                runs.addAll(mine);
                String verdict = verdict(mine);
                verdicts.put(q, verdict);
                if (verdict.startsWith("DIFFERENT")) {
                    failures.add(q + ": " + verdict);
                }
                err.printf("%s: %s%n", q, verdict);
            }
        }
        double minutes = (System.nanoTime() - t0) / 60e9;
        Report report = new Report(runs, options.queries(), options.sides(), verdicts);
        String summary = report.markdown(header(options, clusterLine, started, minutes, args));
        Files.writeString(options.out().resolve("summary.md"), summary);
        Files.writeString(options.out().resolve("summary.csv"), report.summaryCsv());
        out.print(summary);
        if (!failures.isEmpty()) {
            out.println();
            out.println("RESULTS DIFFER:");
            failures.forEach(f -> out.println("  " + f));
            return 1;
        }
        out.printf(Locale.ROOT, "%nevery query's jobs ended with equal results (%s)%n", options.out().resolve("summary.md"));
        return 0;
    }

    private static JobRun record(JobRun r, Path runsCsv, PrintStream err) throws IOException {
        Files.writeString(runsCsv, Report.runsCsvLine(r) + "\n", java.nio.file.StandardOpenOption.APPEND);
        err.printf(Locale.ROOT, "%-4s %-22s %s: %s events/s, %s per core (%.2f s, task CPU %.2f s, process CPU %.2f s),"
                        + " %d checkpoints, %d rows, checksum %s, native %s of %d%n",
                r.query(), r.side().label, r.round() == 0 ? "warm-up" : "round " + r.round(),
                Report.rate(r.eventsPerSecond()), Report.rate(r.eventsPerCore()), r.seconds(), r.taskCpuSeconds(),
                r.processCpuSeconds(), r.stats().checkpoints(), r.finalRows(), r.checksumHex(),
                r.nativeRan() < 0 ? r.nativePlanned() + " planned" : Integer.toString(r.nativeRan()), r.statefulOperators());
        return r;
    }

    /** {@code sides} rotated left by {@code by}: each round starts with another side. */
    static List<Side> rotated(List<Side> sides, int by) {
        List<Side> l = new ArrayList<>(sides.size());
        for (int i = 0; i < sides.size(); i++) {
            l.add(sides.get((i + by) % sides.size()));
        }
        return l;
    }

    /**
     * How one query's results compared: every job over the same number of events must end with the
     * same checksum and row count. Where the plan makes the result depend on the wall clock, a
     * difference is reported but fails only if a native operator ran (then nothing checks it).
     */
    static String verdict(List<JobRun> runs) {
        Map<Long, Set<String>> results = new LinkedHashMap<>();
        String wallClock = "";
        boolean nativeRan = false;
        for (JobRun r : runs) {
            results.computeIfAbsent(r.events(), e -> new LinkedHashSet<>()).add(r.checksumHex() + " (" + r.finalRows() + " rows)");
            if (!r.wallClock().isEmpty()) {
                wallClock = r.wallClock();
            }
            nativeRan |= r.nativeRan() > 0;
        }
        boolean equal = results.values().stream().allMatch(s -> s.size() == 1);
        JobRun last = runs.get(runs.size() - 1);
        String result = last.checksumHex() + ", " + last.finalRows() + " rows";
        if (equal) {
            return wallClock.isEmpty() ? "equal: " + result
                    : "equal: " + result + " (depends on the wall clock: " + wallClock + ")";
        }
        StringBuilder diff = new StringBuilder();
        for (JobRun r : runs) {
            diff.append(String.format(Locale.ROOT, "%s %s: %s, %d rows; ", r.side().id,
                    r.round() == 0 ? "warm-up" : "round " + r.round(), r.checksumHex(), r.finalRows()));
        }
        if (!wallClock.isEmpty() && !nativeRan) {
            return "not compared: its result depends on the wall clock (" + wallClock
                    + "), and every side ran Flink's own operators; " + diff.toString().strip();
        }
        return "DIFFERENT: " + diff.toString().strip();
    }

    private static String header(RunnerOptions o, String cluster, String started, double minutes, String[] args) {
        Runtime rt = Runtime.getRuntime();
        StringBuilder b = new StringBuilder();
        b.append("## Nexmark q0–q22: stock Flink and Ferry\n\n");
        b.append(String.format(Locale.ROOT, "Commit `%s`, started %s, %.0f minutes; %d CPUs, JDK %s, max heap %d MiB,"
                        + " Flink %s; %s.%n%n", System.getProperty("ferry.commit", "unknown"), started, minutes,
                rt.availableProcessors(), System.getProperty("java.version"), rt.maxMemory() >> 20,
                EnvironmentInformation.getVersion(), cluster));
        b.append(String.format(Locale.ROOT, "%s events per job (%s per second of event time, seed %d), parallelism %d;"
                        + " %s; %d timed round%s per query after %s, the sides interleaved; mini-batch of 50,000 rows or"
                        + " 2 s, split distinct aggregation, checkpoints every %s (exactly once; RocksDB incremental).%n%n",
                Report.rate(o.events()).trim(), Report.rate(o.rate()).trim(), o.seed(), o.parallelism(),
                String.join(" / ", o.sides().stream().map(s -> s.label).toList()), o.rounds(), o.rounds() == 1 ? "" : "s",
                o.warmupEvents() == 0 ? "no warm-up" : "one warm-up job per side of " + Report.rate(o.warmupEvents()).trim()
                        + " events", o.checkpointInterval().toSeconds() + " s"));
        b.append("Command: `").append(System.getProperty("nexmark.command", "nexmark " + String.join(" ", args)))
                .append("`\n\n");
        b.append("Events/s: events over Nexmark's time (every task running to the job's end), median of the timed"
                + " rounds (min–max). Per core: events per CPU second of ")
                .append(o.cluster() == null ? "the job's task threads" : "the TaskManager processes")
                .append(". Ratios: of the medians.\n");
        return b.toString();
    }
}
