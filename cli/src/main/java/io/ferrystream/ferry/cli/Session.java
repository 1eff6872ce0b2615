package io.ferrystream.ferry.cli;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.planner.Ferry;

import org.apache.calcite.rel.RelNode;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.runtime.executiongraph.AccessExecutionGraph;
import org.apache.flink.runtime.executiongraph.AccessExecutionJobVertex;
import org.apache.flink.runtime.executiongraph.AccessExecutionVertex;
import org.apache.flink.runtime.executiongraph.IOMetrics;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableConfig;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.api.config.ExecutionConfigOptions;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Consumer;
import java.util.function.Function;

/**
 * One side of a run, stock Flink ({@code ferry.enabled = false}) or Ferry ({@code ferry.enabled =
 * true}): the script's settings and catalog as the SQL Client would hold them, and the queries
 * planned or run with them.
 *
 * <p>Settings: the run's {@link Settings} (--conf, -D, --parallelism) are the environment's
 * configuration; each {@code SET} goes into the table configuration on top of them and each
 * {@code RESET} takes it out again, back to the run's value, as in the SQL Client. Running a job
 * copies the table configuration into the execution environment (Flink's executor does), so after
 * each job the side builds a fresh environment from the run's settings, its {@code SET}s and its
 * catalog statements (replayed: {@code CREATE}, {@code USE}, ...); a {@code RESET} can therefore
 * never leave a value behind.
 */
final class Session {
    /** "Ferry" when {@link #ferry}, else "stock Flink". */
    final String name;
    final boolean ferry;
    private final Settings settings;
    private final LocalCluster cluster; // null: plans only
    private final Map<String, String> sets = new LinkedHashMap<>();
    private final List<String> catalog = new ArrayList<>();
    private StreamTableEnvironment tEnv;

    Session(boolean ferry, Settings settings, LocalCluster cluster) {
        this.name = ferry ? "Ferry" : "stock Flink";
        this.ferry = ferry;
        this.settings = settings;
        this.cluster = cluster;
    }

    /** The {@code SET}s in effect, in the order they were made. */
    Map<String, String> sets() {
        return sets;
    }

    void set(String key, String value) {
        sets.remove(key); // keep the latest SET last
        sets.put(key, value);
        if (tEnv != null) {
            tEnv.getConfig().set(key, value);
        }
    }

    /** {@code RESET key}, or every key when {@code key} is null. */
    void reset(String key) {
        if (key == null) {
            sets.clear();
        } else {
            sets.remove(key);
        }
        tEnv = null; // rebuilt without it: the run's value shows through again
    }

    /** Everything in effect: the run's settings with the SETs on top, sorted. */
    Map<String, String> effectiveAll() {
        Map<String, String> all = new TreeMap<>(settings.configuration().toMap());
        all.putAll(sets);
        all.put(FerryOptions.ENABLED.key(), Boolean.toString(ferry));
        return all;
    }

    /** The parallelism jobs run with: {@code table.exec.resource.default-parallelism}, else {@code parallelism.default}. */
    int parallelism() {
        TableConfig config = env().getConfig();
        int table = config.get(ExecutionConfigOptions.TABLE_EXEC_RESOURCE_DEFAULT_PARALLELISM);
        return table > 0 ? table : config.get(CoreOptions.DEFAULT_PARALLELISM);
    }

    /** Executes a statement that is neither a query nor an INSERT (DDL, USE, SHOW, ...). */
    TableResult execute(String sql) throws Exception {
        TableResult result = env().executeSql(sql);
        if (result.getJobClient().isPresent()) {
            result.await();
            tEnv = null;
        } else if (!readOnly(sql)) {
            catalog.add(sql);
        }
        return result;
    }

    private static boolean readOnly(String sql) {
        String s = sql.stripLeading().toUpperCase(Locale.ROOT);
        return s.startsWith("SHOW") || s.startsWith("DESC") || s.startsWith("EXPLAIN");
    }

    /** Plans {@code sql} (a query or an INSERT) without running it. */
    PlanAnalysis plan(String sql) {
        StreamTableEnvironment t = env();
        try (Ferry.PlanCapture capture = Ferry.capturePlans()) {
            t.explainSql(sql);
            return analyse(capture.plans(), t.getConfig(), parallelism());
        }
    }

    /** A finished job of one query or INSERT. */
    static final class Run {
        final PlanAnalysis plan;
        /** The changelog the query returned (empty for an INSERT or when not collected). */
        final List<Row> rows;
        final long rowCount;
        /** Client wall clock from submission to the last row. */
        final double wallSeconds;
        /** The JobMaster's net runtime of the job (submission to end, deployment included). */
        final long netRuntimeMillis;
        /** Native operator subtasks opened during the job, per native node (its description). */
        final Map<String, Long> opened;
        final AccessExecutionGraph graph;

        Run(PlanAnalysis plan, List<Row> rows, long rowCount, double wallSeconds, long netRuntimeMillis,
                Map<String, Long> opened, AccessExecutionGraph graph) {
            this.plan = plan;
            this.rows = rows;
            this.rowCount = rowCount;
            this.wallSeconds = wallSeconds;
            this.netRuntimeMillis = netRuntimeMillis;
            this.opened = opened;
            this.graph = graph;
        }

        /** Subtasks of native node {@code description} that opened during the job. */
        long openedFor(String description) {
            return opened.getOrDefault(description, 0L);
        }

        long openedTotal() {
            return opened.values().stream().mapToLong(Long::longValue).sum();
        }

        /** Rows the job's sources emitted: the records out of the tasks that read no input. */
        long sourceRows() {
            long n = 0;
            for (AccessExecutionJobVertex v : graph.getVerticesTopologically()) {
                long in = 0;
                long out = 0;
                for (AccessExecutionVertex t : v.getTaskVertices()) {
                    IOMetrics m = t.getCurrentExecutionAttempt().getIOMetrics();
                    if (m != null) {
                        in += m.getNumRecordsIn();
                        out += m.getNumRecordsOut();
                    }
                }
                if (in == 0) {
                    n += out;
                }
            }
            return n;
        }
    }

    /**
     * Runs a query (its changelog collected, or, when {@code sink} is not null, only folded by the
     * consumer it makes of the query's plan) or an INSERT, and waits for its job to end.
     */
    Run run(String sql, boolean insert, Function<PlanAnalysis, Consumer<Row>> sink) throws Exception {
        if (cluster == null) {
            throw new IllegalStateException("a planning session runs no jobs");
        }
        StreamTableEnvironment t = env();
        TableConfig config = t.getConfig();
        int parallelism = parallelism();
        cluster.ensureSlots(parallelism);
        Map<String, Long> before = Ferry.nativeOperatorsOpenedPerNode();
        List<Row> rows = new ArrayList<>();
        long count = 0;
        List<RelNode> plans;
        long start = System.nanoTime();
        TableResult result;
        try (Ferry.PlanCapture capture = Ferry.capturePlans()) {
            result = t.executeSql(sql);
            plans = capture.plans();
        } finally {
            tEnv = null; // the job copied the table configuration into the environment
        }
        PlanAnalysis plan = analyse(plans, config, parallelism);
        if (!insert) {
            Consumer<Row> fold = sink == null ? rows::add : sink.apply(plan);
            try (CloseableIterator<Row> it = result.collect()) {
                while (it.hasNext()) {
                    count++;
                    fold.accept(it.next());
                }
            }
        } else {
            result.await();
        }
        double wall = (System.nanoTime() - start) / 1e9;
        JobClient job = result.getJobClient().orElseThrow();
        JobExecutionResult done = job.getJobExecutionResult().get();
        Map<String, Long> opened = new HashMap<>();
        Ferry.nativeOperatorsOpenedPerNode().forEach((node, n) -> {
            long d = n - before.getOrDefault(node, 0L);
            if (d > 0) {
                opened.put(node, d);
            }
        });
        return new Run(plan, rows, count, wall, done.getNetRuntime(), opened, cluster.executionGraph(job.getJobID()));
    }

    private static PlanAnalysis analyse(List<RelNode> plans, ReadableConfig config, int parallelism) {
        if (plans.isEmpty()) {
            throw new IllegalStateException("Ferry's optimizer program saw no plan: is Ferry installed?");
        }
        return PlanAnalysis.of(plans, config, parallelism);
    }

    /** The table environment of the current settings and catalog, built when needed. */
    StreamTableEnvironment env() {
        if (tEnv == null) {
            tEnv = build();
        }
        return tEnv;
    }

    private StreamTableEnvironment build() {
        Configuration conf = settings.configuration();
        StreamExecutionEnvironment env;
        try {
            env = cluster == null
                    ? new StreamExecutionEnvironment(conf)
                    : cluster.environment(conf, settings.parallelism());
        } catch (Exception e) {
            throw new IllegalStateException("cannot start the embedded MiniCluster: " + e, e);
        }
        StreamTableEnvironment t = StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
        t.getConfig().set(FerryOptions.ENABLED, ferry);
        Ferry.install(t);
        sets.forEach((k, v) -> t.getConfig().set(k, v));
        for (String sql : catalog) {
            t.executeSql(sql);
        }
        return t;
    }
}
