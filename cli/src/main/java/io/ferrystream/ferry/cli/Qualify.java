package io.ferrystream.ferry.cli;

import io.ferrystream.ferry.planner.Ferry;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * {@code ferry qualify DIR|FILE...}: plans every query and INSERT of a team's SQL scripts with
 * Ferry on, runs nothing, and reports what would run natively. Each script is a session of its
 * own: its {@code SET}/{@code RESET} and catalog statements apply (DDL creates nothing outside the
 * in-memory catalog), then each query is planned as EXPLAIN would plan it.
 *
 * <p>The report (Markdown on stdout, HTML with charts with {@code --html}) lists per query the
 * stateful operators of its plan (the candidate nodes of Ferry's native kinds and the stateful
 * operators no kind replaces yet), which would run natively, and the fallback reasons; it ranks the
 * reasons by how many queries they block, and estimates each query's native share as the fraction
 * of its stateful operators that would run natively (a count, not a cost model).
 */
final class Qualify {
    private final PrintStream out;
    private final Settings settings;

    Qualify(PrintStream out, Settings settings) {
        this.out = out;
        this.settings = settings;
    }

    /** One planned query, or the error that stopped it from planning. */
    record Query(String script, SqlScript.Statement statement, PlanAnalysis plan, String error) {
        String label() {
            return script + ":" + statement.line();
        }

        int operators() {
            return plan == null ? 0 : plan.statefulOperators();
        }

        int nativeOperators() {
            return plan == null ? 0 : (int) plan.nativeCandidates();
        }

        /** Fallback reasons of this query's stateful operators (candidates' reasons normalized), with their node counts. */
        Map<String, Integer> reasons() {
            Map<String, Integer> r = new LinkedHashMap<>();
            if (plan != null) {
                for (PlanAnalysis.Candidate c : plan.candidates) {
                    if (!c.isNative()) {
                        r.merge(c.operator() + ": " + normalize(c.reason()), 1, Integer::sum);
                    }
                }
                for (PlanAnalysis.Other o : plan.others) {
                    r.merge(o.reason(), 1, Integer::sum);
                }
            }
            return r;
        }
    }

    /** A fallback reason across the scripts: the queries it blocks and the nodes it keeps Flink's. */
    record Reason(String text, Set<String> queries, int nodes) {}

    /** "aggs[2]: AVG over DECIMAL: ..." counts with "aggs[0]: AVG over DECIMAL: ...". */
    static String normalize(String reason) {
        return reason.replaceFirst("^aggs\\[\\d+\\]: ", "");
    }

    int run(List<String> paths, Path html) throws Exception {
        List<Path> scripts = new ArrayList<>();
        for (String p : paths) {
            Path path = Path.of(p);
            if (Files.isDirectory(path)) {
                try (Stream<Path> walk = Files.walk(path)) {
                    walk.filter(f -> f.toString().endsWith(".sql") && Files.isRegularFile(f)).sorted().forEach(scripts::add);
                }
            } else if (Files.isRegularFile(path)) {
                scripts.add(path);
            } else {
                throw new FerryCli.UsageException("no such file or directory: " + p);
            }
        }
        if (scripts.isEmpty()) {
            throw new FerryCli.UsageException("no .sql scripts in " + paths);
        }
        List<Query> queries = new ArrayList<>();
        for (Path script : scripts) {
            queries.addAll(plan(script));
        }
        Report report = new Report(queries, scripts.size(), Ferry.operatorKinds());
        out.print(report.markdown());
        if (html != null) {
            Files.writeString(html, report.html(), StandardCharsets.UTF_8);
            out.println();
            out.println("HTML report: " + html);
        }
        return FerryCli.OK;
    }

    private List<Query> plan(Path script) throws IOException, FerryCli.UsageException {
        String name = script.normalize().toString();
        Session session = new Session("Ferry", true, settings, null);
        List<Query> queries = new ArrayList<>();
        String ddlError = null;
        for (SqlScript.Statement st : SqlScript.parse(FerryCli.readScript(script))) {
            try {
                switch (st.kind()) {
                    case SET -> {
                        String[] kv = SqlScript.setKeyValue(st.sql());
                        if (kv != null) {
                            session.set(kv[0], kv[1]);
                        }
                    }
                    case RESET -> session.reset(SqlScript.resetKey(st.sql()));
                    case OTHER -> session.execute(st.sql());
                    case QUERY, INSERT -> queries.add(new Query(name, st, session.plan(st.sql()), null));
                }
            } catch (Exception e) {
                String message = FerryCli.describe(e).replaceAll("\\s+", " ");
                if (st.kind() == SqlScript.Kind.QUERY || st.kind() == SqlScript.Kind.INSERT) {
                    queries.add(new Query(name, st, null,
                            (ddlError == null ? "" : "(after a failed statement: " + ddlError + ") ") + message));
                } else {
                    ddlError = name + ":" + st.line() + ": " + message;
                    System.err.println("ferry qualify: " + ddlError);
                }
            }
        }
        return queries;
    }

    /** The report over every planned query. */
    static final class Report {
        final List<Query> queries;
        final int scripts;
        final List<String> kinds;
        final List<Reason> reasons = new ArrayList<>();
        int operators;
        int nativeOperators;
        int fullyNative;
        int partlyNative;
        int notNative;
        int stateless;
        int failed;

        Report(List<Query> queries, int scripts, List<String> kinds) {
            this.queries = queries;
            this.scripts = scripts;
            this.kinds = kinds;
            Map<String, Set<String>> blocked = new LinkedHashMap<>();
            Map<String, Integer> nodes = new LinkedHashMap<>();
            for (Query q : queries) {
                if (q.plan() == null) {
                    failed++;
                    continue;
                }
                operators += q.operators();
                nativeOperators += q.nativeOperators();
                if (q.operators() == 0) {
                    stateless++;
                } else if (q.nativeOperators() == q.operators()) {
                    fullyNative++;
                } else if (q.nativeOperators() > 0) {
                    partlyNative++;
                } else {
                    notNative++;
                }
                q.reasons().forEach((r, n) -> {
                    blocked.computeIfAbsent(r, k -> new LinkedHashSet<>()).add(q.label());
                    nodes.merge(r, n, Integer::sum);
                });
            }
            blocked.forEach((r, qs) -> reasons.add(new Reason(r, qs, nodes.get(r))));
            reasons.sort((a, b) -> a.queries().size() != b.queries().size()
                    ? b.queries().size() - a.queries().size()
                    : a.nodes() != b.nodes() ? b.nodes() - a.nodes() : a.text().compareTo(b.text()));
        }

        static String percent(int part, int whole) {
            return whole == 0 ? "–" : Math.round(100.0 * part / whole) + " %";
        }

        String headline() {
            return String.format(
                    "%d queries from %d script%s: %d of %d stateful operators would run natively (%s). Queries fully"
                            + " native: %d, partly: %d, not at all: %d, without stateful operators: %d%s.",
                    queries.size(), scripts, scripts == 1 ? "" : "s", nativeOperators, operators, percent(nativeOperators, operators),
                    fullyNative, partlyNative, notNative, stateless, failed == 0 ? "" : ", failed to plan: " + failed);
        }

        String about() {
            return "Planned with Ferry on (native kinds: " + String.join(", ", kinds) + ") and Flink 2.3.0; nothing was"
                    + " run. Stateful operators: the candidate nodes of Ferry's native kinds and the stateful operators no"
                    + " kind replaces yet (joins, windows, Top-N, the incremental aggregate, ...). The native share counts"
                    + " operators; it is not a cost model.";
        }

        String markdown() {
            StringBuilder b = new StringBuilder();
            b.append("# Ferry qualification report\n\n").append(headline()).append("\n\n").append(about()).append("\n\n");
            b.append("## Fallback reasons, by queries blocked\n\n");
            if (reasons.isEmpty()) {
                b.append("None: every stateful operator would run natively.\n\n");
            } else {
                b.append("| reason | queries | operators |\n|---|---:|---:|\n");
                for (Reason r : reasons) {
                    b.append("| ").append(md(r.text())).append(" | ").append(r.queries().size()).append(" | ")
                            .append(r.nodes()).append(" |\n");
                }
                b.append('\n');
            }
            b.append("## Queries\n\n| query | stateful operators | native | native share | falls back |\n|---|---|---:|---:|---|\n");
            for (Query q : queries) {
                b.append("| ").append(md(title(q))).append(" | ");
                if (q.plan() == null) {
                    b.append("planning failed | | | ").append(md(FerryCli.oneLine(q.error(), 200))).append(" |\n");
                    continue;
                }
                b.append(md(operatorList(q))).append(" | ").append(q.nativeOperators()).append(" of ").append(q.operators())
                        .append(" | ").append(percent(q.nativeOperators(), q.operators())).append(" | ");
                List<String> rs = new ArrayList<>();
                q.reasons().forEach((r, n) -> rs.add(n > 1 ? r + " (×" + n + ")" : r));
                b.append(md(String.join("; ", rs))).append(" |\n");
            }
            return b.toString();
        }

        static String title(Query q) {
            SqlScript.Statement st = q.statement();
            return q.label() + (st.title() == null ? "" : " " + st.title()) + ": " + FerryCli.oneLine(st.sql(), 60);
        }

        /** "GroupAggregate ×2 (native), Join" */
        static String operatorList(Query q) {
            Map<String, int[]> ops = new LinkedHashMap<>(); // operator -> {count, native}
            for (PlanAnalysis.Candidate c : q.plan().candidates) {
                int[] n = ops.computeIfAbsent(c.operator(), k -> new int[2]);
                n[0]++;
                n[1] += c.isNative() ? 1 : 0;
            }
            for (PlanAnalysis.Other o : q.plan().others) {
                ops.computeIfAbsent(o.operator(), k -> new int[2])[0]++;
            }
            if (ops.isEmpty()) {
                return "none";
            }
            List<String> parts = new ArrayList<>();
            ops.forEach((op, n) -> parts.add(op + (n[0] > 1 ? " ×" + n[0] : "")
                    + (n[1] == n[0] ? " (native)" : n[1] > 0 ? " (" + n[1] + " native)" : "")));
            return String.join(", ", parts);
        }

        private static String md(String s) {
            return s.replace("|", "\\|").replace("\n", " ");
        }

        String html() {
            return QualifyHtml.render(this);
        }
    }
}
