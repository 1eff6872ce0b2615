package io.ferrystream.ferry.cli;

import io.ferrystream.ferry.planner.NativeKind;
import io.ferrystream.ferry.planner.NativeKinds;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The Nexmark gains {@code ferry qualify} prints next to each query (docs/cli.md#nexmark-gains):
 * for each native kind, the Nexmark queries in which it ran natively on the Ferry side of one run,
 * and the geometric mean over them of the query's per-core ratio, Ferry ÷ stock Flink on the heap
 * backend and Ferry ÷ stock Flink on RocksDB.
 *
 * <p>Derived by code from the run's raw output ({@link #derive}: the runner's {@code runs.csv},
 * {@code summary.csv} and {@code summary.md}), written as the command's resource {@value
 * #RESOURCE} ({@link #main}, which {@code scripts/nexmark-gains.sh} runs), read back by the report
 * ({@link #shipped}). Never typed by hand.
 */
final class NexmarkGains {
    /** The resource the command ships, next to this class. */
    static final String RESOURCE = "nexmark-gains.csv";

    static final String HEADER = "kind,queries,ferry_over_heap_per_core,ferry_over_rocksdb_per_core";

    /** One kind's figures: the Nexmark queries it ran natively in (none: not measured) and the two geometric means. */
    record Gain(String kind, List<String> queries, double overHeap, double overRocksdb) {}

    /** The run's commit and start time (its summary.md's), and what run it is (given to {@link #main}). */
    final String commit;
    final String started;
    final String source;
    final Map<String, Gain> byKind;

    NexmarkGains(String commit, String started, String source, Map<String, Gain> byKind) {
        this.commit = commit;
        this.started = started;
        this.source = source;
        this.byKind = byKind;
    }

    /** The run, for the report: "the Nexmark run of commit 00ec88c, started ... (source)". */
    String run() {
        return "the Nexmark run of commit " + commit + ", started " + started + " (" + source + ")";
    }

    /** "1.18× heap, 1.57× RocksDB (q4, q17)", or "not measured". */
    String describe(String kind) {
        Gain g = byKind.get(kind);
        if (g == null || g.queries().isEmpty()) {
            return "not measured";
        }
        return String.format(Locale.ROOT, "%.2f× heap, %.2f× RocksDB (%s)", g.overHeap(), g.overRocksdb(),
                String.join(", ", g.queries()));
    }

    // ---- derivation from a run -------------------------------------------------------------------

    /**
     * The gains of every registered kind in the run written to {@code runDir}. A kind ran natively
     * in a query when, in every timed round (round ≥ 1) of its Ferry side, an operator of the kind
     * is marked {@code (native)} in runs.csv's {@code operators} (the operators that opened
     * natively); the query's ratios are summary.csv's {@code ferry_over_heap_per_core} and {@code
     * ferry_over_rocksdb_per_core} (of the medians over the timed rounds).
     */
    static NexmarkGains derive(Path runDir, String source) throws IOException {
        Matcher head = Pattern.compile("(?m)^Commit `([^`]+)`, started ([^,\\s]+)")
                .matcher(Files.readString(runDir.resolve("summary.md"), StandardCharsets.UTF_8));
        if (!head.find()) {
            throw new IOException(runDir.resolve("summary.md") + " does not start with the runner's 'Commit `…`, started …' line");
        }
        Map<String, String> kindOfOperator = new HashMap<>();
        for (NativeKind<?, ?> k : NativeKinds.all()) {
            kindOfOperator.put(k.physicalClass().getSimpleName().replaceFirst("^StreamPhysical", ""), k.name());
        }
        // per query, the kinds that ran natively in every timed Ferry run
        Map<String, Set<String>> ran = new HashMap<>();
        Table runs = Table.read(runDir.resolve("runs.csv"));
        for (List<String> row : runs.rows) {
            if (!runs.get(row, "side").equals("ferry") || Integer.parseInt(runs.get(row, "round")) < 1) {
                continue;
            }
            Set<String> kinds = new LinkedHashSet<>();
            for (String op : runs.get(row, "operators").split(", ")) {
                Matcher m = NATIVE_OPERATOR.matcher(op);
                if (m.matches() && kindOfOperator.containsKey(m.group(1))) {
                    kinds.add(kindOfOperator.get(m.group(1)));
                }
            }
            ran.merge(runs.get(row, "query"), kinds, (a, b) -> {
                a.retainAll(b);
                return a;
            });
        }
        Table summary = Table.read(runDir.resolve("summary.csv"));
        Map<String, Gain> byKind = new LinkedHashMap<>();
        for (String kind : NativeKinds.names()) {
            List<String> queries = new ArrayList<>();
            double logHeap = 0;
            double logRocksdb = 0;
            for (List<String> row : summary.rows) {
                String q = summary.get(row, "query");
                if (ran.getOrDefault(q, Set.of()).contains(kind)) {
                    queries.add(q);
                    logHeap += Math.log(ratio(summary, row, "ferry_over_heap_per_core"));
                    logRocksdb += Math.log(ratio(summary, row, "ferry_over_rocksdb_per_core"));
                }
            }
            int n = queries.size();
            byKind.put(kind, new Gain(kind, queries, n == 0 ? Double.NaN : Math.exp(logHeap / n),
                    n == 0 ? Double.NaN : Math.exp(logRocksdb / n)));
        }
        return new NexmarkGains(head.group(1), head.group(2), source, byKind);
    }

    /** "LocalGroupAggregate ×2 (native)": the operator's name. */
    private static final Pattern NATIVE_OPERATOR = Pattern.compile("(\\w+)(?: ×\\d+)? \\(native\\)");

    private static double ratio(Table t, List<String> row, String column) {
        double r = Double.parseDouble(t.get(row, column));
        if (!(r > 0) || Double.isInfinite(r)) {
            throw new IllegalArgumentException("summary.csv: " + t.get(row, "query") + " has " + column + " " + r);
        }
        return r;
    }

    /** A CSV file of the runner's: a header, then rows; a quoted field may hold commas. */
    private record Table(Path file, List<String> header, List<List<String>> rows) {
        static Table read(Path file) throws IOException {
            List<String> lines = Files.readAllLines(file, StandardCharsets.UTF_8);
            if (lines.isEmpty()) {
                throw new IOException(file + " is empty");
            }
            List<List<String>> rows = new ArrayList<>();
            for (String line : lines.subList(1, lines.size())) {
                if (!line.isBlank()) {
                    rows.add(fields(line));
                }
            }
            return new Table(file, fields(lines.get(0)), rows);
        }

        String get(List<String> row, String column) {
            int i = header.indexOf(column);
            if (i < 0) {
                throw new IllegalArgumentException(file + " has no column " + column + " (a run of every side, heap, rocksdb and ferry, is needed)");
            }
            return row.get(i);
        }

        private static List<String> fields(String line) {
            List<String> fields = new ArrayList<>();
            StringBuilder b = new StringBuilder();
            boolean quoted = false;
            for (int i = 0; i < line.length(); i++) {
                char c = line.charAt(i);
                if (c == '"') {
                    if (quoted && i + 1 < line.length() && line.charAt(i + 1) == '"') {
                        b.append('"');
                        i++;
                    } else {
                        quoted = !quoted;
                    }
                } else if (c == ',' && !quoted) {
                    fields.add(b.toString());
                    b.setLength(0);
                } else {
                    b.append(c);
                }
            }
            fields.add(b.toString());
            return fields;
        }
    }

    // ---- the resource ----------------------------------------------------------------------------

    /** The resource's text: a comment, the run's commit, start and source, then one row per kind. */
    String csv() {
        StringBuilder b = new StringBuilder()
                .append("# Nexmark gains of Ferry's native kinds for ferry qualify (docs/cli.md#nexmark-gains), derived from\n")
                .append("# a Nexmark run's runs.csv, summary.csv and summary.md by scripts/nexmark-gains.sh; do not edit.\n")
                .append("# commit: ").append(commit).append('\n')
                .append("# started: ").append(started).append('\n')
                .append("# source: ").append(source).append('\n')
                .append(HEADER).append('\n');
        for (Gain g : byKind.values()) {
            b.append(g.kind()).append(',').append(String.join(" ", g.queries())).append(',')
                    .append(g.queries().isEmpty() ? "" : String.format(Locale.ROOT, "%.4f", g.overHeap())).append(',')
                    .append(g.queries().isEmpty() ? "" : String.format(Locale.ROOT, "%.4f", g.overRocksdb())).append('\n');
        }
        return b.toString();
    }

    /** Reads what {@link #csv} wrote. */
    static NexmarkGains parse(String csv) {
        Map<String, String> meta = new HashMap<>();
        Map<String, Gain> byKind = new LinkedHashMap<>();
        boolean header = false;
        for (String line : csv.split("\n")) {
            if (line.startsWith("# ")) {
                int colon = line.indexOf(": ");
                if (colon > 0) {
                    meta.put(line.substring(2, colon), line.substring(colon + 2).strip());
                }
            } else if (line.equals(HEADER)) {
                header = true;
            } else if (header && !line.isBlank()) {
                String[] f = line.split(",", -1);
                List<String> queries = f[1].isEmpty() ? List.of() : List.of(f[1].split(" "));
                byKind.put(f[0], new Gain(f[0], queries, queries.isEmpty() ? Double.NaN : Double.parseDouble(f[2]),
                        queries.isEmpty() ? Double.NaN : Double.parseDouble(f[3])));
            }
        }
        if (!header || !meta.keySet().containsAll(List.of("commit", "started", "source"))) {
            throw new IllegalArgumentException("not a Nexmark gains file: it needs the commit, started and source lines and " + HEADER);
        }
        return new NexmarkGains(meta.get("commit"), meta.get("started"), meta.get("source"), byKind);
    }

    /** The gains the command ships ({@value #RESOURCE}). */
    static NexmarkGains shipped() throws IOException {
        try (InputStream in = NexmarkGains.class.getResourceAsStream(RESOURCE)) {
            if (in == null) {
                throw new IOException("the ferry command's resource " + RESOURCE + " is missing");
            }
            return parse(new String(in.readAllBytes(), StandardCharsets.UTF_8));
        }
    }

    /** {@code NexmarkGains RUN_DIR OUT SOURCE}: derives the gains of the run in RUN_DIR and writes them to OUT. */
    public static void main(String[] args) throws IOException {
        if (args.length != 3) {
            System.err.println("usage: NexmarkGains RUN_DIR OUT.csv SOURCE (what run it is, e.g. 'published run docs/data/published-abc1234')");
            System.exit(2);
        }
        NexmarkGains gains = derive(Path.of(args[0]), args[2]);
        Files.writeString(Path.of(args[1]), gains.csv(), StandardCharsets.UTF_8);
        System.out.print(gains.csv());
    }
}
