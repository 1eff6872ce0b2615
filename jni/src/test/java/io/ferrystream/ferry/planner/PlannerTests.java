package io.ferrystream.ferry.planner;

import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Shared helpers of the planner tests. */
final class PlannerTests {
    private PlannerTests() {}

    /** Matches the term Ferry adds to a node's EXPLAIN line, with its leading separator. */
    static final Pattern FERRY_TERM = Pattern.compile(", ferry=\\[(.*?)\\](?=[,)]|$)");

    /** Source table of the EXPLAIN tests: every type a GROUP BY test needs, never read. */
    static final String SOURCE_DDL =
            "CREATE TEMPORARY TABLE T ("
                    + " k STRING, k2 INT, t TINYINT, s SMALLINT, i INT, b BIGINT, f FLOAT, d DOUBLE,"
                    + " m DECIMAL(10, 2), ts TIMESTAMP(3), ltz TIMESTAMP_LTZ(3), arr ARRAY<INT>"
                    + ") WITH ('connector' = 'datagen')";

    /** A streaming table environment with the test source, parallelism 1, Ferry installed or not. */
    static TableEnvironment newTableEnv(boolean installFerry) {
        TableEnvironment tEnv = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
        tEnv.getConfig().set("table.exec.resource.default-parallelism", "1");
        if (installFerry) {
            Ferry.install(tEnv);
        }
        tEnv.executeSql(SOURCE_DDL);
        return tEnv;
    }

    /** The "Optimized Physical Plan" section of an explanation. */
    static String physicalPlan(String explain) {
        int start = explain.indexOf("== Optimized Physical Plan ==");
        int end = explain.indexOf("== Optimized Execution Plan ==", start);
        if (start < 0 || end < 0) {
            throw new AssertionError("no physical plan in:\n" + explain);
        }
        return explain.substring(start, end).strip();
    }

    /** Each plan line that is a GroupAggregate, in plan order. */
    static List<String> groupAggregateLines(String plan) {
        List<String> lines = new ArrayList<>();
        for (String line : plan.split("\n")) {
            String l = line.replaceFirst("^[ +\\-:|]*", "");
            if (l.startsWith("GroupAggregate(")) {
                lines.add(l);
            }
        }
        return lines;
    }

    /** The ferry=[...] value of each plan line that has one, in plan order. */
    static List<String> ferryTerms(String plan) {
        List<String> terms = new ArrayList<>();
        for (String line : plan.split("\n")) {
            Matcher m = FERRY_TERM.matcher(line);
            if (m.find()) {
                terms.add(m.group(1));
            }
        }
        return terms;
    }

    /**
     * The ferry term of each LocalGroupAggregate, IncrementalGroupAggregate and
     * GlobalGroupAggregate line of a plan, in plan order (top-down), as "Local: …", "Incremental:
     * …" or "Global: …"; "Local: -" for a line without one.
     */
    static List<String> twoPhaseTerms(String plan) {
        List<String> terms = new ArrayList<>();
        for (String line : plan.split("\n")) {
            String l = line.replaceFirst("^[ +\\-:|]*", "");
            String half = l.startsWith("LocalGroupAggregate(") ? "Local"
                    : l.startsWith("GlobalGroupAggregate(") ? "Global"
                    : l.startsWith("IncrementalGroupAggregate(") ? "Incremental" : null;
            if (half != null) {
                Matcher m = FERRY_TERM.matcher(l);
                terms.add(half + ": " + (m.find() ? m.group(1) : "-"));
            }
        }
        return terms;
    }

    /** Ferry's term of each exchange that has one (the columnar exchange's), top to bottom. */
    static List<String> exchangeTerms(String plan) {
        List<String> terms = new ArrayList<>();
        for (String line : plan.split("\n")) {
            String l = line.replaceFirst("^[ +\\-:|]*", "");
            Matcher m = FERRY_TERM.matcher(l);
            if (l.startsWith("Exchange(") && m.find()) {
                terms.add(m.group(1));
            }
        }
        return terms;
    }

    /** The explanation without Ferry's terms: what Flink alone prints. */
    static String withoutFerryTerms(String explain) {
        StringBuilder b = new StringBuilder();
        for (String line : explain.split("\n", -1)) {
            b.append(FERRY_TERM.matcher(line).replaceAll("")).append('\n');
        }
        return b.toString();
    }
}
