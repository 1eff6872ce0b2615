package io.ferrystream.ferry.suites;

import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.config.Property;
import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.TestSource;
import org.junit.platform.engine.support.descriptor.ClassSource;
import org.junit.platform.engine.support.descriptor.MethodSource;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.TestPlan;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Pattern;

/**
 * Records, for every test Flink's suites run in this JVM, its outcome and what Ferry did during it:
 * nodes planned native ({@code Ferry.nativeNodesPlanned()}), native operators opened ({@code
 * Ferry.nativeOperatorsOpened()}), both in total and per operator kind ({@code
 * Ferry.operatorKinds()}), the reasons of the nodes that stayed Flink's (the planner's DEBUG log)
 * and the nodes that fell back at translation (Ferry's exec node logs them at WARN). It also
 * records whether {@code DefaultPlannerFactory} is the shim's (the proof that Ferry was injected by
 * the class path alone) and how many planners it created.
 *
 * <p>Registered through {@code META-INF/services}; writes into the directory named by the system
 * property {@code ferry.suite.report}: {@code summary.properties} (totals, then per kind {@code
 * native.planned.<kind>} and {@code native.opened.<kind>}), {@code tests.tsv} and {@code
 * fallbacks.tsv}, rewritten after every test class and when the run ends, so a crashed JVM still
 * leaves what it had.
 */
public final class FerrySuiteListener implements TestExecutionListener {
    private static final String FERRY = "io.ferrystream.ferry.planner.Ferry";
    private static final String FACTORY = "org.apache.flink.table.planner.delegation.DefaultPlannerFactory";
    private static final String PROGRAM_LOGGER = "io.ferrystream.ferry.planner.FerryOptimizeProgram";

    private final Path dir;
    private final String label;
    private final Map<String, Counts> running = new LinkedHashMap<>();
    private final List<Result> results = new ArrayList<>();
    private final List<String> containerFailures = new ArrayList<>();
    private final Map<String, Integer> fallbacks = new TreeMap<>();
    /** Reasons logged since the last test started (the planner logs on the test's thread). */
    private final List<String> reasons = new ArrayList<>();
    private final List<String> translationFallbacks = new ArrayList<>();
    private String shimLocation = "";
    private boolean shimLoaded;
    private String plannerLocation = "";
    private TestPlan plan;
    /** Ferry's operator kinds ({@code Ferry.operatorKinds()}), read when the run starts. */
    private List<String> kinds = List.of();

    public FerrySuiteListener() {
        String report = System.getProperty("ferry.suite.report");
        this.dir = report == null ? null : Paths.get(report);
        this.label = System.getProperty("ferry.suite.label", "suite");
        try {
            // flink-suites/pom.xml points java.io.tmpdir into target/; the launcher creates this
            // listener before any test runs
            Files.createDirectories(Paths.get(System.getProperty("java.io.tmpdir")));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Ferry's counters at one moment: totals, and per kind. */
    private static final class Counts {
        final long planned;
        final long opened;
        final Map<String, Long> plannedByKind = new LinkedHashMap<>();
        final Map<String, Long> openedByKind = new LinkedHashMap<>();

        Counts(long planned, long opened) {
            this.planned = planned;
            this.opened = opened;
        }

        static final Counts NONE = new Counts(0, 0);

        static Counts now(List<String> kinds) {
            Counts c = new Counts(counter(FERRY, "nativeNodesPlanned"), counter(FERRY, "nativeOperatorsOpened"));
            for (String kind : kinds) {
                c.plannedByKind.put(kind, counter(FERRY, "nativeNodesPlanned", kind));
                c.openedByKind.put(kind, counter(FERRY, "nativeOperatorsOpened", kind));
            }
            return c;
        }

        /** What was counted since {@code start}. */
        Counts since(Counts start) {
            Counts d = new Counts(planned - start.planned, opened - start.opened);
            plannedByKind.forEach((k, v) -> d.plannedByKind.put(k, v - start.plannedByKind.getOrDefault(k, 0L)));
            openedByKind.forEach((k, v) -> d.openedByKind.put(k, v - start.openedByKind.getOrDefault(k, 0L)));
            return d;
        }
    }

    private static final class Result {
        final String name;
        final String status;
        final long planned;
        final long opened;
        final Counts counts;
        final List<String> reasons;
        final List<String> translationFallbacks;
        final String failure;

        Result(String name, String status, Counts counts, List<String> reasons,
                List<String> translationFallbacks, String failure) {
            this.name = name;
            this.status = status;
            this.planned = counts.planned;
            this.opened = counts.opened;
            this.counts = counts;
            this.reasons = reasons;
            this.translationFallbacks = translationFallbacks;
            this.failure = failure;
        }
    }

    // ---------------------------------------------------------------------------------------------

    @Override
    public void testPlanExecutionStarted(TestPlan testPlan) {
        if (dir == null) {
            return;
        }
        plan = testPlan;
        try {
            Class<?> factory = Class.forName(FACTORY);
            shimLoaded = hasMethod(factory, "ferryPlannersCreated");
            shimLocation = location(factory);
            plannerLocation = location(Class.forName("org.apache.flink.table.planner.delegation.StreamPlanner"));
        } catch (ClassNotFoundException e) {
            shimLocation = "not found: " + e;
        }
        kinds = operatorKinds();
        captureFerryLogs();
    }

    @Override
    public synchronized void executionStarted(TestIdentifier id) {
        if (dir == null || !id.isTest()) {
            return;
        }
        reasons.clear();
        translationFallbacks.clear();
        running.put(id.getUniqueId(), Counts.now(kinds));
    }

    @Override
    public synchronized void executionSkipped(TestIdentifier id, String reason) {
        if (dir == null) {
            return;
        }
        if (id.isTest()) {
            results.add(new Result(name(id), "SKIPPED", Counts.NONE, List.of(), List.of(), reason));
        } else if (plan != null) {
            // a disabled class or template: every test under it is skipped
            for (TestIdentifier t : plan.getDescendants(id)) {
                if (t.isTest()) {
                    results.add(new Result(name(t), "SKIPPED", Counts.NONE, List.of(), List.of(), reason));
                }
            }
        }
    }

    @Override
    public synchronized void executionFinished(TestIdentifier id, TestExecutionResult result) {
        if (dir == null) {
            return;
        }
        String failure = result.getThrowable().map(t -> firstLine(t.toString())).orElse("");
        if (id.isTest()) {
            Counts s = running.remove(id.getUniqueId());
            Counts counts = s == null ? Counts.NONE : Counts.now(kinds).since(s);
            String status;
            switch (result.getStatus()) {
                case SUCCESSFUL: status = "PASSED"; break;
                case ABORTED: status = "SKIPPED"; break; // an assumption did not hold
                default: status = "FAILED";
            }
            List<String> rs = new ArrayList<>(reasons);
            for (String r : rs) {
                fallbacks.merge(normalize(r), 1, Integer::sum);
            }
            results.add(new Result(name(id), status, counts, rs, new ArrayList<>(translationFallbacks), failure));
            reasons.clear();
            translationFallbacks.clear();
        } else {
            if (result.getStatus() == TestExecutionResult.Status.FAILED) {
                containerFailures.add(name(id) + "\t" + failure);
            }
            if (id.getSource().filter(ClassSource.class::isInstance).isPresent()) {
                write();
            }
        }
    }

    @Override
    public void testPlanExecutionFinished(TestPlan testPlan) {
        if (dir != null) {
            write();
        }
    }

    // ---------------------------------------------------------------------------------------------

    private synchronized void write() {
        long passed = results.stream().filter(r -> r.status.equals("PASSED")).count();
        long failed = results.stream().filter(r -> r.status.equals("FAILED")).count();
        long skipped = results.stream().filter(r -> r.status.equals("SKIPPED")).count();
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("label", label);
        s.put("shim.loaded", shimLoaded);
        s.put("shim.location", shimLocation);
        s.put("planner.location", plannerLocation);
        s.put("shim.planners", counter(FACTORY, "ferryPlannersCreated"));
        s.put("ferry.defaults", System.getProperty("ferry.defaults", ""));
        s.put("tests.run", results.size());
        s.put("tests.passed", passed);
        s.put("tests.failed", failed);
        s.put("tests.skipped", skipped);
        s.put("containers.failed", containerFailures.size());
        s.put("native.planned", results.stream().mapToLong(r -> r.planned).sum());
        s.put("native.opened", results.stream().mapToLong(r -> r.opened).sum());
        s.put("tests.native.planned", results.stream().filter(r -> r.planned > 0).count());
        s.put("tests.native.opened", results.stream().filter(r -> r.opened > 0).count());
        s.put("tests.passed.native.opened",
                results.stream().filter(r -> r.opened > 0 && r.status.equals("PASSED")).count());
        s.put("tests.translation.fallbacks", results.stream().filter(r -> !r.translationFallbacks.isEmpty()).count());
        s.put("fallback.nodes", fallbacks.values().stream().mapToInt(Integer::intValue).sum());
        for (String kind : kinds) {
            s.put("native.planned." + kind, results.stream().mapToLong(r -> r.counts.plannedByKind.getOrDefault(kind, 0L)).sum());
            s.put("native.opened." + kind, results.stream().mapToLong(r -> r.counts.openedByKind.getOrDefault(kind, 0L)).sum());
        }

        StringBuilder summary = new StringBuilder();
        s.forEach((k, v) -> summary.append(k).append('=').append(String.valueOf(v).replace("\\", "\\\\")).append('\n'));

        StringBuilder tests = new StringBuilder("status\tnative_planned\tnative_opened\ttest\tfallback_reasons\tfailure\n");
        for (Result r : results) {
            tests.append(r.status).append('\t').append(r.planned).append('\t').append(r.opened).append('\t')
                    .append(r.name.replace('\t', ' ')).append('\t')
                    .append(orDash(String.join(" | ", r.reasons)
                            + (r.translationFallbacks.isEmpty() ? "" : " | translation: " + String.join(" | ", r.translationFallbacks))))
                    .append('\t').append(orDash(r.failure)).append('\n');
        }
        for (String c : containerFailures) {
            tests.append("CONTAINER_FAILED\t0\t0\t").append(c.replaceFirst("\t", "\t-\t")).append('\n');
        }
        StringBuilder fb = new StringBuilder("nodes\treason\n");
        fallbacks.entrySet().stream()
                .sorted(Map.Entry.<String, Integer>comparingByValue(Comparator.reverseOrder()))
                .forEach(e -> fb.append(e.getValue()).append('\t').append(e.getKey()).append('\n'));
        try {
            Files.createDirectories(dir);
            Files.writeString(dir.resolve("summary.properties"), summary, StandardCharsets.UTF_8);
            Files.writeString(dir.resolve("tests.tsv"), tests, StandardCharsets.UTF_8);
            Files.writeString(dir.resolve("fallbacks.tsv"), fb, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Class#method[invocation] of a test. */
    private String name(TestIdentifier id) {
        Optional<TestSource> source = id.getSource();
        String display = id.getDisplayName().replace('\t', ' ').replace('\n', ' ');
        if (source.isPresent() && source.get() instanceof MethodSource) {
            MethodSource m = (MethodSource) source.get();
            String base = shortClassName(m.getClassName()) + "#" + m.getMethodName();
            return display.startsWith(m.getMethodName()) ? base : base + " " + display;
        }
        if (source.isPresent() && source.get() instanceof ClassSource) {
            return shortClassName(((ClassSource) source.get()).getClassName());
        }
        return display;
    }

    private static final String RUNTIME_TESTS = "org.apache.flink.table.planner.runtime.";

    /**
     * A test class's name below Flink's runtime test package, e.g. {@code stream.sql.AggregateITCase}
     * (the SQL and Table API suites share simple names).
     */
    private static String shortClassName(String className) {
        return className.startsWith(RUNTIME_TESTS) ? className.substring(RUNTIME_TESTS.length()) : className;
    }

    /** Fields are tab separated and never empty (shell readers collapse empty fields). */
    private static String orDash(String s) {
        return s == null || s.isEmpty() ? "-" : s;
    }

    private static String firstLine(String s) {
        String line = s.replace('\t', ' ');
        int nl = line.indexOf('\n');
        line = nl < 0 ? line : line.substring(0, nl);
        return line.length() > 400 ? line.substring(0, 400) + "..." : line;
    }

    private static final Pattern AGG_INDEX = Pattern.compile("^aggs\\[\\d+\\]: ");
    private static final Pattern TTL_DETAIL = Pattern.compile("\\(\\d+ ms from (.*)\\)$");
    private static final Pattern FIELD = Pattern.compile("^(key|argument|output field) \\S+ of type ");

    /** A fallback reason without the details that vary per query (field names, indexes, TTL). */
    static String normalize(String reason) {
        String r = AGG_INDEX.matcher(reason).replaceFirst("");
        r = TTL_DETAIL.matcher(r).replaceFirst("(from $1)");
        r = FIELD.matcher(r).replaceFirst("$1 of type ");
        return r;
    }

    private static boolean hasMethod(Class<?> c, String name) {
        try {
            c.getMethod(name);
            return true;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }

    private static String location(Class<?> c) {
        CodeSource cs = c.getProtectionDomain().getCodeSource();
        return cs == null || cs.getLocation() == null ? "?" : cs.getLocation().toString();
    }

    /** A static long counter read reflectively (Ferry and the shim are not compile dependencies). */
    private static long counter(String className, String method) {
        try {
            Method m = Class.forName(className).getMethod(method);
            return ((Number) m.invoke(null)).longValue();
        } catch (ReflectiveOperationException | LinkageError e) {
            return -1;
        }
    }

    /** A static long counter of one operator kind, read reflectively. */
    private static long counter(String className, String method, String kind) {
        try {
            Method m = Class.forName(className).getMethod(method, String.class);
            return ((Number) m.invoke(null, kind)).longValue();
        } catch (ReflectiveOperationException | LinkageError e) {
            return -1;
        }
    }

    /** Ferry's operator kinds, or none when Ferry is not on the class path. */
    private static List<String> operatorKinds() {
        try {
            Object kinds = Class.forName(FERRY).getMethod("operatorKinds").invoke(null);
            List<String> names = new ArrayList<>();
            for (Object k : (List<?>) kinds) {
                names.add(String.valueOf(k));
            }
            return names;
        } catch (ReflectiveOperationException | LinkageError e) {
            return List.of();
        }
    }

    /** The loggers of the kinds' exec node (it logs translation fallbacks at WARN), each once. */
    private List<String> execNodeLoggers() {
        List<String> loggers = new ArrayList<>();
        for (String kind : kinds) {
            try {
                String logger = (String) Class.forName(FERRY).getMethod("execNodeClassName", String.class).invoke(null, kind);
                if (!loggers.contains(logger)) {
                    loggers.add(logger);
                }
            } catch (ReflectiveOperationException | LinkageError e) {
                // a kind without an exec node class: nothing to listen to
            }
        }
        return loggers;
    }

    /** Captures the planner's fallback reasons (DEBUG) and translation fallbacks (WARN). */
    private void captureFerryLogs() {
        LoggerContext ctx = (LoggerContext) LogManager.getContext(false);
        Configuration config = ctx.getConfiguration();
        AbstractAppender appender =
                new AbstractAppender("ferry-suite-capture", null, null, true, Property.EMPTY_ARRAY) {
                    @Override
                    public void append(LogEvent event) {
                        Object[] params = event.getMessage().getParameters();
                        synchronized (FerrySuiteListener.this) {
                            if (event.getLoggerName().equals(PROGRAM_LOGGER)) {
                                if (event.getLevel() == Level.DEBUG && params != null && params.length >= 2) {
                                    reasons.add(firstLine(String.valueOf(params[1])));
                                } else if (event.getLevel().isMoreSpecificThan(Level.WARN)) {
                                    reasons.add(firstLine("planner error: " + event.getMessage().getFormattedMessage()));
                                }
                            } else if (event.getLevel().isMoreSpecificThan(Level.WARN)) {
                                translationFallbacks.add(firstLine(event.getMessage().getFormattedMessage()));
                            }
                        }
                    }
                };
        appender.start();
        config.addAppender(appender);
        List<String> loggers = new ArrayList<>();
        loggers.add(PROGRAM_LOGGER);
        loggers.addAll(execNodeLoggers());
        for (String logger : loggers) {
            LoggerConfig lc = new LoggerConfig(logger, Level.DEBUG, false);
            lc.addAppender(appender, Level.DEBUG, null);
            config.addLogger(logger, lc);
        }
        ctx.updateLoggers();
    }
}
