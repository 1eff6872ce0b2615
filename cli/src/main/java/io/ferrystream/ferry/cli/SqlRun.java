package io.ferrystream.ferry.cli;

import io.ferrystream.ferry.FerryOptions;

import org.apache.flink.table.api.ResultKind;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.types.Row;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * {@code ferry sql} and {@code ferry explain}: a script's statements in order, on the stock side,
 * the Ferry side or both (compare), on one embedded MiniCluster.
 *
 * <p>Every query prints its optimized plan, which candidate nodes ran natively (counted from the
 * native operators the job opened, per plan node, not from EXPLAIN text) and why the others fell
 * back, and its changelog. Compare runs each query on both sides, one after the other, and
 * compares the changelogs at the level the plan guarantees ({@link Changelogs}).
 */
final class SqlRun {
    private static final int DESCRIPTION_WIDTH = 160;

    private final PrintStream out;
    private final Settings settings;
    private final String mode; // native, stock, compare, explain
    private final int maxRows;
    private final boolean requireNative;

    /** One line per query for the summary. */
    private final List<String> summary = new ArrayList<>();
    private int candidates;
    private int ranNative;
    private long openedTotal;
    private final List<String> notNative = new ArrayList<>();
    private boolean different;

    SqlRun(PrintStream out, Settings settings, String mode, int maxRows, boolean requireNative) {
        this.out = out;
        this.settings = settings;
        this.mode = mode;
        this.maxRows = maxRows;
        this.requireNative = requireNative;
    }

    int run(String commandLine, Path script, List<SqlScript.Statement> statements) throws Exception {
        boolean explain = mode.equals("explain");
        out.println(commandLine);
        settings.print(out, mode.equals("compare"));
        List<Session> sides = new ArrayList<>();
        try (LocalCluster cluster = explain ? null : new LocalCluster(settings.configuration())) {
            if (mode.equals("stock") || mode.equals("compare")) {
                sides.add(new Session(false, settings, cluster));
            }
            if (!mode.equals("stock")) {
                sides.add(new Session(true, settings, cluster));
            }
            for (Session s : sides) {
                out.printf("%s side: %s = %s%n", s.name, FerryOptions.ENABLED.key(), s.ferry);
            }
            if (explain) {
                out.println("(explain: queries are planned, not run; the counts below are planned nodes)");
            }
            out.println();
            int query = 0;
            for (SqlScript.Statement st : statements) {
                try {
                    switch (st.kind()) {
                        case SET -> set(st, sides);
                        case RESET -> reset(st, sides);
                        case OTHER -> other(st, sides);
                        case QUERY, INSERT -> {
                            query++;
                            if (explain) {
                                explain(st, query, sides.get(0));
                            } else {
                                query(st, query, sides);
                            }
                        }
                    }
                } catch (Exception e) {
                    throw new FerryCli.ScriptException(
                            script + ":" + st.line() + ": " + FerryCli.oneLine(st.sql(), 100) + "\n" + FerryCli.describe(e), e);
                }
            }
        }
        return finish(explain);
    }

    private void set(SqlScript.Statement st, List<Session> sides) {
        String[] kv = SqlScript.setKeyValue(st.sql());
        if (kv == null) {
            out.println("SET; (in effect on the " + sides.get(sides.size() - 1).name + " side):");
            for (Map.Entry<String, String> e : sides.get(sides.size() - 1).effectiveAll().entrySet()) {
                out.printf("  %s = %s%n", e.getKey(), Settings.shown(e.getKey(), e.getValue()));
            }
            return;
        }
        for (Session s : sides) {
            s.set(kv[0], kv[1]);
        }
        out.printf("SET %s = %s%s%n", kv[0], Settings.shown(kv[0], kv[1]), sides.size() > 1 ? "   (both sides)" : "");
    }

    private void reset(SqlScript.Statement st, List<Session> sides) {
        String key = SqlScript.resetKey(st.sql());
        for (Session s : sides) {
            s.reset(key);
        }
        out.println(key == null ? "RESET: every SET undone" : "RESET " + key
                + settings.resetNote(key));
    }

    private void other(SqlScript.Statement st, List<Session> sides) throws Exception {
        TableResult shown = null;
        for (Session s : sides) {
            TableResult r = s.execute(st.sql());
            if (shown == null) {
                shown = r;
            }
        }
        out.println("> " + FerryCli.oneLine(st.sql(), 120));
        if (shown != null && shown.getResultKind() == ResultKind.SUCCESS_WITH_CONTENT) {
            shown.print();
        }
    }

    private void header(SqlScript.Statement st, int query, Session session) {
        out.println();
        out.println("-- query " + query + " (" + st.label() + "): " + FerryCli.oneLine(st.sql(), 120));
        if (!session.sets().isEmpty()) {
            List<String> sets = new ArrayList<>();
            session.sets().forEach((k, v) -> sets.add(k + " = " + Settings.shown(k, v)));
            out.println("   in effect from SET: " + String.join(", ", sets));
        }
    }

    private void explain(SqlScript.Statement st, int query, Session ferry) {
        header(st, query, ferry);
        PlanAnalysis plan = ferry.plan(st.sql());
        out.println("== Optimized Physical Plan ==");
        out.println(plan.planText);
        long n = plan.nativeCandidates();
        out.printf("native: %d of %d candidate nodes planned native (planned, not run)%n", n, plan.candidates.size());
        printNodes(plan, null);
        out.println("changelog: " + determinism(plan));
        summary.add("query " + query + " (" + st.label() + "): " + n + " of " + plan.candidates.size() + " candidate nodes planned native");
        candidates += plan.candidates.size();
        ranNative += (int) n;
    }

    private void query(SqlScript.Statement st, int query, List<Session> sides) throws Exception {
        boolean insert = st.kind() == SqlScript.Kind.INSERT;
        Session last = sides.get(sides.size() - 1);
        header(st, query, last);
        List<Session.Run> runs = new ArrayList<>();
        for (Session s : sides) {
            String sql = st.sql();
            if (!s.ferry) {
                sql = withoutEarlyFire(sql);
                if (!sql.equals(st.sql())) {
                    out.println(s.name + " side: without the EARLY_FIRE hint (Flink 2.3 has none; its updates are compared"
                            + " as the final result)");
                }
            }
            runs.add(s.run(sql, insert, null));
        }
        Session.Run shown = runs.get(runs.size() - 1);
        out.println("== Optimized Physical Plan ==" + (sides.size() > 1 ? " (" + last.name + " side)" : ""));
        out.println(shown.plan.planText);
        String nativeLine = "";
        if (last.ferry) {
            nativeLine = nativeReport(st, query, shown);
        } else {
            out.println("native: Ferry is off on this side (" + FerryOptions.ENABLED.key() + " = false)");
        }
        if (insert) {
            out.printf("INSERT: the job finished in %.2f s wall clock; its rows went to the sink (not compared)%n",
                    shown.wallSeconds);
            summary.add("query " + query + " (" + st.label() + "): INSERT, not compared" + nativeLine);
            return;
        }
        out.println("changelog" + (sides.size() > 1 ? " (" + last.name + " side)" : "") + ": " + shown.rows.size() + " rows");
        printRows(shown.rows);
        if (sides.size() == 1) {
            out.printf("%d changelog rows in %.2f s wall clock (%s; one run from submission to the last row: not a"
                            + " benchmark)%n", shown.rows.size(), shown.wallSeconds, last.name);
            summary.add("query " + query + " (" + st.label() + "): " + shown.rows.size() + " changelog rows" + nativeLine);
            return;
        }
        Session.Run stock = runs.get(0);
        out.printf("wall clock, one run each: %s %.2f s, %s %.2f s (the %s side ran first and paid the JVM's class"
                        + " loading and JIT warm-up: not a speed comparison; ferry bench measures one)%n",
                sides.get(0).name, stock.wallSeconds, last.name, shown.wallSeconds, sides.get(0).name);
        Changelogs.Verdict v = Changelogs.compare(stock.rows, shown.rows, shown.plan, shown.openedTotal() > 0);
        different |= v.failure();
        out.println("query " + query + ": " + v.text());
        summary.add("query " + query + " (" + st.label() + "): " + v.brief() + nativeLine);
    }

    /** Prints and counts the candidate nodes of a Ferry-side run; returns the summary's part. */
    private String nativeReport(SqlScript.Statement st, int query, Session.Run run) {
        PlanAnalysis plan = run.plan;
        int ran = 0;
        for (PlanAnalysis.Candidate c : plan.candidates) {
            if (c.isNative() && run.openedFor(c.description()) > 0) {
                ran++;
            } else {
                notNative.add("query " + query + " (" + st.label() + "): " + c.operator() + ": "
                        + (c.isNative() ? "planned native, but no native operator opened" : c.reason()));
            }
        }
        candidates += plan.candidates.size();
        ranNative += ran;
        openedTotal += run.openedTotal();
        out.printf("native: %d of %d candidate nodes ran natively (%s opened)%n",
                ran, plan.candidates.size(), subtasks(run.openedTotal()));
        printNodes(plan, run);
        return "; native " + ran + " of " + plan.candidates.size();
    }

    private void printNodes(PlanAnalysis plan, Session.Run run) {
        for (PlanAnalysis.Candidate c : plan.candidates) {
            String d = FerryCli.oneLine(c.description(), DESCRIPTION_WIDTH);
            if (!c.isNative()) {
                out.println("  fallback  " + d + "\n            reason: " + c.reason());
            } else if (run == null) {
                out.println("  native    " + d);
            } else {
                long n = run.openedFor(c.description());
                out.println(n > 0 ? "  native    " + d + "   [" + n + " subtask" + (n == 1 ? "" : "s") + " opened]"
                        : "  fallback  " + d + "\n            reason: planned native, but no native operator opened"
                                + " (Flink's operator ran; the log says why)");
            }
        }
        for (PlanAnalysis.Other o : plan.others) {
            out.println("  Flink's   " + FerryCli.oneLine(o.description(), DESCRIPTION_WIDTH) + "\n            not a candidate: "
                    + o.reason());
        }
    }

    static String subtasks(long n) {
        return n + " native operator subtask" + (n == 1 ? "" : "s");
    }

    /** How the plan's changelog compares, in words. */
    static String determinism(PlanAnalysis plan) {
        return switch (Changelogs.Level.of(plan)) {
            case STRICT -> "deterministic (compare requires it equal row for row)";
            case ORDER -> "order not deterministic (" + String.join("; ", plan.orderReasons)
                    + "): compare requires the same multiset of rows and the same final result";
            case CONTENT -> "intermediate updates not deterministic (" + String.join("; ", plan.contentReasons)
                    + "): compare requires the same final result";
            case RESULT -> "result not deterministic (" + String.join("; ", plan.resultReasons)
                    + "): compare can only report whether the final results agree";
        };
    }

    private void printRows(List<Row> rows) {
        int n = rows.size();
        int head = Math.min(n, maxRows);
        for (int i = 0; i < head; i++) {
            out.println(rows.get(i));
        }
        if (n > head && head > 0) {
            out.println("... " + (n - head) + " more rows");
        }
    }

    private int finish(boolean explain) {
        out.println();
        out.println("== summary");
        for (String s : summary) {
            out.println(s);
        }
        if (explain) {
            out.printf("native: %d of %d candidate nodes planned native%n", ranNative, candidates);
            return FerryCli.OK;
        }
        boolean ferry = !mode.equals("stock");
        if (ferry) {
            out.printf("native: %d of %d candidate nodes ran natively; %s opened%n",
                    ranNative, candidates, subtasks(openedTotal));
            if (openedTotal == 0) {
                out.println("WARNING: no operator ran natively: both sides ran Flink's own operators"
                        + (mode.equals("compare") ? ", so this compared Flink with Flink" : ""));
            }
        }
        int code = FerryCli.OK;
        if (requireNative) {
            List<String> why = new ArrayList<>(notNative);
            if (openedTotal == 0) {
                why.add("no native operator opened in the whole run");
            }
            if (!why.isEmpty()) {
                out.println("NOT NATIVE (--require-native):");
                for (String w : why) {
                    out.println("  " + w);
                }
                code = FerryCli.NOT_NATIVE;
            }
        }
        if (mode.equals("compare")) {
            out.println(different ? "DIFFERENT" : "IDENTICAL");
            if (different) {
                code = FerryCli.DIFFERENT;
            }
        }
        return code;
    }

    private static final Pattern HINT_COMMENT = Pattern.compile("/\\*\\+(.*?)\\*/", Pattern.DOTALL);
    private static final Pattern EARLY_FIRE = Pattern.compile(
            "EARLY_FIRE\\s*\\((?:'(?:[^']|'')*'|[^()'])*\\)", Pattern.CASE_INSENSITIVE);

    /**
     * {@code sql} without its {@code EARLY_FIRE} hints (docs/operators/interval-join.md#early_fire):
     * what the stock side runs, since Flink 2.3 has no such hint. An early-fire join's changelog,
     * applied to a table, ends as the join's result without the hint (the pads it corrects are
     * retracted), which compare checks: the join's updates make it compare final results.
     */
    static String withoutEarlyFire(String sql) {
        Matcher m = HINT_COMMENT.matcher(sql);
        StringBuilder b = new StringBuilder();
        while (m.find()) {
            String hints = EARLY_FIRE.matcher(m.group(1)).replaceAll("")
                    .replaceAll(",(\\s*,)+", ",")
                    .replaceAll("^\\s*,|,\\s*$", "")
                    .trim();
            m.appendReplacement(b, Matcher.quoteReplacement(hints.isEmpty() ? "" : "/*+ " + hints + " */"));
        }
        return m.appendTail(b).toString();
    }
}
