package io.ferrystream.ferry.cli;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.planner.Ferry;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.CloseableIterator;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * The {@code ferry} command: runs a SQL script on an embedded MiniCluster with Ferry on, off, or
 * both, and compares the results.
 *
 * <pre>
 *   ferry sql FILE.sql [--mode native|stock|compare] [--parallelism N] [--max-rows N]
 *   ferry explain FILE.sql [--parallelism N]
 * </pre>
 *
 * <p>DDL and SET statements are executed; every query prints its optimized plan (native nodes
 * carry {@code ferry=[native]}, others the reason they stayed Flink's), then its changelog with
 * row kinds and its throughput. {@code --mode compare} runs the script with Ferry off and on and
 * prints IDENTICAL or the first difference (exit code 1): at parallelism 1 the changelogs must be
 * equal row for row; at higher parallelism, where Flink's interleaving is not deterministic, the
 * final results must be equal.
 */
public final class FerryCli {
    private final PrintStream out;
    private String mode = "native";
    private int parallelism = 1;
    private int maxRows = 20;
    private boolean explainOnly;

    FerryCli(PrintStream out) {
        this.out = out;
    }

    public static void main(String[] args) {
        int code;
        try {
            code = new FerryCli(System.out).run(args);
        } catch (UsageException e) {
            System.err.println("ferry: " + e.getMessage());
            System.err.println(
                    "usage: ferry sql FILE.sql [--mode native|stock|compare] [--parallelism N] [--max-rows N]\n"
                            + "       ferry explain FILE.sql [--parallelism N]");
            code = 2;
        } catch (Exception e) {
            System.err.println("ferry: " + e);
            e.printStackTrace();
            code = 1;
        }
        System.exit(code);
    }

    static final class UsageException extends Exception {
        UsageException(String message) {
            super(message);
        }
    }

    int run(String[] args) throws Exception {
        if (args.length < 2) {
            throw new UsageException("missing command or script");
        }
        explainOnly = switch (args[0]) {
            case "sql" -> false;
            case "explain" -> true;
            default -> throw new UsageException("unknown command " + args[0]);
        };
        Path script = Path.of(args[1]);
        for (int i = 2; i < args.length; i++) {
            String opt = args[i];
            if (i + 1 >= args.length) {
                throw new UsageException(opt + " needs a value");
            }
            String v = args[++i];
            switch (opt) {
                case "--mode" -> {
                    if (!List.of("native", "stock", "compare").contains(v)) {
                        throw new UsageException("--mode must be native, stock or compare");
                    }
                    mode = v;
                }
                case "--parallelism" -> parallelism = positive(opt, v);
                case "--max-rows" -> maxRows = positive(opt, v);
                default -> throw new UsageException("unknown option " + opt);
            }
        }
        List<String> statements = SqlScript.split(readScript(script));
        if (explainOnly) {
            runScript(statements, true);
            return 0;
        }
        if (!mode.equals("compare")) {
            runScript(statements, mode.equals("native"));
            return 0;
        }
        out.println("== stock Flink (ferry.enabled = false)");
        List<QueryRun> stock = runScript(statements, false);
        out.println();
        out.println("== Ferry (ferry.enabled = true)");
        List<QueryRun> ferry = runScript(statements, true);
        out.println();
        return compare(stock, ferry) ? 0 : 1;
    }

    private static int positive(String opt, String v) throws UsageException {
        try {
            int n = Integer.parseInt(v);
            if (n >= 1) {
                return n;
            }
        } catch (NumberFormatException ignored) {
            // reported below
        }
        throw new UsageException(opt + " must be a positive integer, got " + v);
    }

    private static String readScript(Path script) throws UsageException {
        try {
            return Files.readString(script, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UsageException("cannot read " + script + ": " + e.getMessage());
        }
    }

    /** One executed query: its text, its changelog and how long it took. */
    record QueryRun(String sql, List<Row> rows, double seconds) {}

    private List<QueryRun> runScript(List<String> statements, boolean ferry) throws Exception {
        Configuration conf = new Configuration();
        StreamExecutionEnvironment env =
                StreamExecutionEnvironment.createLocalEnvironment(parallelism, conf);
        StreamTableEnvironment tEnv =
                StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        Ferry.install(tEnv);
        List<QueryRun> runs = new ArrayList<>();
        for (String sql : statements) {
            if (!SqlScript.isQuery(sql)) {
                tEnv.executeSql(sql);
                continue;
            }
            out.println("-- query " + (runs.size() + 1) + ": " + oneLine(sql));
            out.println(physicalPlan(tEnv.explainSql(sql)));
            if (explainOnly) {
                runs.add(new QueryRun(sql, List.of(), 0));
                continue;
            }
            long start = System.nanoTime();
            List<Row> rows = new ArrayList<>();
            TableResult result = tEnv.executeSql(sql);
            try (CloseableIterator<Row> it = result.collect()) {
                while (it.hasNext()) {
                    rows.add(it.next());
                }
            }
            double seconds = (System.nanoTime() - start) / 1e9;
            printRows(rows);
            out.printf(
                    "%d changelog rows in %.2f s (%.0f rows/s, parallelism %d, %s)%n%n",
                    rows.size(), seconds, rows.size() / Math.max(seconds, 1e-9), parallelism,
                    ferry ? "Ferry" : "stock Flink");
            runs.add(new QueryRun(sql, rows, seconds));
        }
        return runs;
    }

    private void printRows(List<Row> rows) {
        int n = rows.size();
        int head = Math.min(n, maxRows);
        for (int i = 0; i < head; i++) {
            out.println(rows.get(i));
        }
        if (n > head) {
            out.println("... " + (n - head) + " more rows");
        }
    }

    /** The "Optimized Physical Plan" section of an explanation. */
    static String physicalPlan(String explain) {
        int start = explain.indexOf("== Optimized Physical Plan ==");
        if (start < 0) {
            return explain.strip();
        }
        int end = explain.indexOf("== Optimized Execution Plan ==", start);
        return explain.substring(start, end < 0 ? explain.length() : end).strip();
    }

    private static String oneLine(String sql) {
        String s = sql.replaceAll("\\s+", " ").strip();
        return s.length() > 120 ? s.substring(0, 117) + "..." : s;
    }

    private boolean compare(List<QueryRun> stock, List<QueryRun> ferry) {
        boolean identical = true;
        for (int q = 0; q < stock.size(); q++) {
            String diff =
                    parallelism == 1
                            ? firstDifference(stock.get(q).rows(), ferry.get(q).rows())
                            : finalResultDifference(stock.get(q).rows(), ferry.get(q).rows());
            QueryRun s = stock.get(q);
            QueryRun f = ferry.get(q);
            if (diff == null) {
                out.printf(
                        "query %d: IDENTICAL (%d changelog rows; stock %.2f s, Ferry %.2f s)%n",
                        q + 1, s.rows().size(), s.seconds(), f.seconds());
            } else {
                identical = false;
                out.printf("query %d: DIFFERENT: %s%n", q + 1, diff);
            }
        }
        out.println(identical ? "IDENTICAL" : "DIFFERENT");
        return identical;
    }

    /** The first differing changelog row, or null when both changelogs are equal. */
    static String firstDifference(List<Row> stock, List<Row> ferry) {
        int n = Math.max(stock.size(), ferry.size());
        for (int i = 0; i < n; i++) {
            String a = i < stock.size() ? stock.get(i).toString() : "(none)";
            String b = i < ferry.size() ? ferry.get(i).toString() : "(none)";
            if (!a.equals(b)) {
                return String.format(
                        "changelog row %d of %d/%d: stock %s, Ferry %s", i + 1, stock.size(), ferry.size(), a, b);
            }
        }
        return null;
    }

    /** Compares the tables the two changelogs materialize to; null when equal. */
    static String finalResultDifference(List<Row> stock, List<Row> ferry) {
        Map<String, Integer> a = materialize(stock);
        Map<String, Integer> b = materialize(ferry);
        if (a.equals(b)) {
            return null;
        }
        for (Map.Entry<String, Integer> e : a.entrySet()) {
            if (!Objects.equals(b.get(e.getKey()), e.getValue())) {
                return "final row " + e.getKey() + ": stock x" + e.getValue() + ", Ferry x" + b.getOrDefault(e.getKey(), 0);
            }
        }
        for (Map.Entry<String, Integer> e : b.entrySet()) {
            if (!a.containsKey(e.getKey())) {
                return "final row " + e.getKey() + ": stock x0, Ferry x" + e.getValue();
            }
        }
        return "final results differ";
    }

    private static Map<String, Integer> materialize(List<Row> rows) {
        Map<String, Integer> table = new TreeMap<>();
        for (Row r : rows) {
            Row v = Row.copy(r);
            RowKind kind = v.getKind();
            v.setKind(RowKind.INSERT);
            int delta = kind == RowKind.INSERT || kind == RowKind.UPDATE_AFTER ? 1 : -1;
            table.merge(v.toString(), delta, Integer::sum);
            table.remove(v.toString(), 0);
        }
        return table;
    }
}
