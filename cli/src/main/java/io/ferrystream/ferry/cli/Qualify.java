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
 * Ferry on, and reads its compiled plans (JSON) as {@code EXECUTE PLAN} would run them; runs
 * nothing, and reports what would run natively. Each script is a session of its own: its {@code
 * SET}/{@code RESET} and catalog statements apply (DDL creates nothing outside the in-memory
 * catalog), then each query is planned as EXPLAIN would plan it. Each compiled plan is one query,
 * decided by Ferry's code for loaded plans ({@link CompiledPlanAnalysis}).
 *
 * <p>The report (Markdown on stdout, HTML with charts with {@code --html}) lists per query the
 * stateful operators of its plan (the candidate nodes of Ferry's native kinds and the stateful
 * operators no kind replaces yet), which would run natively, the fallback reasons, and the Nexmark
 * gains measured for the native kinds it would use ({@link NexmarkGains}); it ranks the reasons by
 * how many queries they block, and estimates each query's native share as the fraction of its
 * stateful operators that would run natively (a count, not a cost model).
 */
final class Qualify {
    private final PrintStream out;
    private final Settings settings;

    Qualify(PrintStream out, Settings settings) {
        this.out = out;
        this.settings = settings;
    }

    /**
     * One query: a statement of a script, or a compiled plan ({@code statement} null); its stateful
     * operators, or the error that stopped it from planning or loading ({@code error} set, the lists empty).
     */
    record Query(String source, SqlScript.Statement statement, List<PlanAnalysis.Candidate> candidates,
            List<PlanAnalysis.Other> others, String error) {
        static Query failed(String source, SqlScript.Statement statement, String error) {
            return new Query(source, statement, List.of(), List.of(), error);
        }

        boolean isFailed() {
            return error != null;
        }

        /** What failed: "planning failed" for a statement, "loading failed" for a compiled plan. */
        String failure() {
            return statement == null ? "loading failed" : "planning failed";
        }

        /** {@code script:line} for a statement, the file's path for a compiled plan. */
        String label() {
            return statement == null ? source : source + ":" + statement.line();
        }

        /** The label with the file's name only, and the statement's title. */
        String shortLabel() {
            String file = String.valueOf(Path.of(source).getFileName());
            return statement == null ? file : file + ":" + statement.line() + (statement.title() == null ? "" : " " + statement.title());
        }

        int operators() {
            return candidates.size() + others.size();
        }

        int nativeOperators() {
            return (int) candidates.stream().filter(PlanAnalysis.Candidate::isNative).count();
        }

        /** The kinds of the candidates that would run natively, in plan order, each once. */
        Set<String> nativeKinds() {
            Set<String> kinds = new LinkedHashSet<>();
            for (PlanAnalysis.Candidate c : candidates) {
                if (c.isNative()) {
                    kinds.add(c.kind());
                }
            }
            return kinds;
        }

        /** Fallback reasons of this query's stateful operators (candidates' reasons normalized), with their node counts. */
        Map<String, Integer> reasons() {
            Map<String, Integer> r = new LinkedHashMap<>();
            for (PlanAnalysis.Candidate c : candidates) {
                if (!c.isNative()) {
                    r.merge(c.operator() + ": " + normalize(c.reason()), 1, Integer::sum);
                }
            }
            for (PlanAnalysis.Other o : others) {
                r.merge(o.reason(), 1, Integer::sum);
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

    /** A compiled plan: a {@code .json} file; every other file is a script. */
    static boolean isCompiledPlan(Path file) {
        return file.toString().endsWith(".json");
    }

    int run(List<String> paths, Path html) throws Exception {
        List<Path> files = new ArrayList<>();
        for (String p : paths) {
            Path path = Path.of(p);
            if (Files.isDirectory(path)) {
                try (Stream<Path> walk = Files.walk(path)) {
                    walk.filter(f -> (f.toString().endsWith(".sql") || isCompiledPlan(f)) && Files.isRegularFile(f))
                            .sorted().forEach(files::add);
                }
            } else if (Files.isRegularFile(path)) {
                files.add(path);
            } else {
                throw new FerryCli.UsageException("no such file or directory: " + p);
            }
        }
        if (files.isEmpty()) {
            throw new FerryCli.UsageException("no .sql scripts or .json compiled plans in " + paths);
        }
        List<Query> queries = new ArrayList<>();
        int plans = 0;
        for (Path file : files) {
            if (isCompiledPlan(file)) {
                queries.add(load(file));
                plans++;
            } else {
                queries.addAll(plan(file));
            }
        }
        Report report = new Report(queries, files.size() - plans, plans, Ferry.operatorKinds(), NexmarkGains.shipped());
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
        Session session = new Session(true, settings, null);
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
                    case QUERY, INSERT -> {
                        PlanAnalysis plan = session.plan(st.sql());
                        queries.add(new Query(name, st, plan.candidates, plan.others, null));
                    }
                }
            } catch (Exception e) {
                String message = FerryCli.describe(e).replaceAll("\\s+", " ");
                if (st.kind() == SqlScript.Kind.QUERY || st.kind() == SqlScript.Kind.INSERT) {
                    queries.add(Query.failed(name, st,
                            (ddlError == null ? "" : "(after a failed statement: " + ddlError + ") ") + message));
                } else {
                    ddlError = name + ":" + st.line() + ": " + message;
                    System.err.println("ferry qualify: " + ddlError);
                }
            }
        }
        return queries;
    }

    /** A compiled plan, read in a session of its own with the command's settings; a file that does not load is its error. */
    private Query load(Path file) {
        String name = file.normalize().toString();
        try {
            CompiledPlanAnalysis plan = CompiledPlanAnalysis.of(new Session(true, settings, null).env(), file);
            return new Query(name, null, plan.candidates, plan.others, null);
        } catch (Exception e) {
            return Query.failed(name, null, FerryCli.describe(e).replaceAll("\\s+", " "));
        }
    }

    /** The report over every planned query. */
    static final class Report {
        final List<Query> queries;
        final int scripts;
        final int plans;
        final List<String> kinds;
        final NexmarkGains gains;
        final List<Reason> reasons = new ArrayList<>();
        int operators;
        int nativeOperators;
        int fullyNative;
        int partlyNative;
        int notNative;
        int stateless;
        int failed;

        Report(List<Query> queries, int scripts, int plans, List<String> kinds, NexmarkGains gains) {
            this.queries = queries;
            this.scripts = scripts;
            this.plans = plans;
            this.kinds = kinds;
            this.gains = gains;
            Map<String, Set<String>> blocked = new LinkedHashMap<>();
            Map<String, Integer> nodes = new LinkedHashMap<>();
            for (Query q : queries) {
                if (q.isFailed()) {
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
            List<String> from = new ArrayList<>();
            if (scripts > 0 || plans == 0) {
                from.add(scripts + " script" + (scripts == 1 ? "" : "s"));
            }
            if (plans > 0) {
                from.add(plans + " compiled plan" + (plans == 1 ? "" : "s"));
            }
            return String.format(
                    "%d queries from %s: %d of %d stateful operators would run natively (%s). Queries fully"
                            + " native: %d, partly: %d, not at all: %d, without stateful operators: %d%s.",
                    queries.size(), String.join(" and ", from), nativeOperators, operators, percent(nativeOperators, operators),
                    fullyNative, partlyNative, notNative, stateless, failed == 0 ? "" : ", failed to plan or load: " + failed);
        }

        String about() {
            return "Planned with Ferry on (native kinds: " + String.join(", ", kinds) + ") and Flink 2.3.0"
                    + (plans == 0 ? "" : "; compiled plans decided as EXECUTE PLAN decides them") + "; nothing was run."
                    + " Stateful operators: the candidate nodes of Ferry's native kinds and the stateful operators no kind"
                    + " replaces yet (joins, windows, OVER, ...). The native share counts"
                    + " operators; it is not a cost model.";
        }

        /** What the gains column shows, and from which Nexmark run. */
        String gainsAbout() {
            return "Nexmark gains: for each native kind a query would use, the geometric mean, over the Nexmark queries"
                    + " in which that kind ran natively (listed), of the whole query's events per CPU second, Ferry ÷"
                    + " stock Flink on the heap backend and ÷ stock Flink on RocksDB (docs/cli.md#nexmark-gains). From "
                    + gains.run() + ".";
        }

        /** The gains column of a query: each native kind it would use with its Nexmark figures. */
        String gainsOf(Query q) {
            List<String> parts = new ArrayList<>();
            for (String kind : q.nativeKinds()) {
                parts.add(kind + ": " + gains.describe(kind));
            }
            return String.join("; ", parts);
        }

        String markdown() {
            StringBuilder b = new StringBuilder();
            b.append("# Ferry qualification report\n\n").append(headline()).append("\n\n").append(about()).append("\n\n")
                    .append(gainsAbout()).append("\n\n");
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
            b.append("## Queries\n\n| query | stateful operators | native | native share | falls back | Nexmark gains (per core)"
                    + " |\n|---|---|---:|---:|---|---|\n");
            for (Query q : queries) {
                b.append("| ").append(md(title(q))).append(" | ");
                if (q.isFailed()) {
                    b.append(q.failure()).append(" | | | ")
                            .append(md(FerryCli.oneLine(q.error(), 200))).append(" | |\n");
                    continue;
                }
                b.append(md(operatorList(q))).append(" | ").append(q.nativeOperators()).append(" of ").append(q.operators())
                        .append(" | ").append(percent(q.nativeOperators(), q.operators())).append(" | ");
                List<String> rs = new ArrayList<>();
                q.reasons().forEach((r, n) -> rs.add(n > 1 ? r + " (×" + n + ")" : r));
                b.append(md(String.join("; ", rs))).append(" | ").append(md(gainsOf(q))).append(" |\n");
            }
            return b.toString();
        }

        static String title(Query q) {
            SqlScript.Statement st = q.statement();
            if (st == null) {
                return q.label() + ": compiled plan";
            }
            return q.label() + (st.title() == null ? "" : " " + st.title()) + ": " + FerryCli.oneLine(st.sql(), 60);
        }

        /** "GroupAggregate ×2 (native), Join" */
        static String operatorList(Query q) {
            Map<String, int[]> ops = new LinkedHashMap<>(); // operator -> {count, native}
            for (PlanAnalysis.Candidate c : q.candidates()) {
                int[] n = ops.computeIfAbsent(c.operator(), k -> new int[2]);
                n[0]++;
                n[1] += c.isNative() ? 1 : 0;
            }
            for (PlanAnalysis.Other o : q.others()) {
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
