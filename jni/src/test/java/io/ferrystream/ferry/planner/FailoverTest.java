package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.groupaggregate.GlobalGroupAggregateSpec;
import io.ferrystream.ferry.kinds.groupaggregate.IncrementalGroupAggregateSpec;
import io.ferrystream.ferry.operators.AbstractNativeOperator;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.api.common.functions.RichMapFunction;
import org.apache.flink.api.common.state.CheckpointListener;
import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.state.ValueState;
import org.apache.flink.api.common.state.ValueStateDescriptor;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.state.FunctionInitializationContext;
import org.apache.flink.runtime.state.FunctionSnapshotContext;
import org.apache.flink.streaming.api.checkpoint.CheckpointedFunction;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.KeyedProcessFunction;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.Collector;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static io.ferrystream.ferry.planner.PlannerTests.physicalPlan;
import static io.ferrystream.ferry.planner.PlannerTests.twoPhaseTerms;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Ferry's group aggregates in real Flink jobs that fail and recover (MiniCluster, two
 * TaskManagers of two slots, checkpoints every 100 ms): after an injected failure the job
 * restores Ferry's raw keyed state from the last checkpoint and replays the source from there;
 * after stop-with-savepoint the job resumes from the savepoint at half the parallelism. In both
 * cases the final table equals a failure-free run with Ferry off.
 *
 * <p>The pipeline: a checkpointed, exactly-once source ({@link DataGeneratorSource}, a
 * checkpointed number sequence, rate-limited so failures and savepoints land mid-stream), a gate
 * that can fail once, two stacked GROUP BYs (the outer one aggregates a retracting changelog:
 * MIN/MAX/SUM/AVG with retraction), then {@code toChangelogStream} into a keyed function that
 * materializes each result key in Flink keyed state and emits the final table when event time
 * ends, which only a finished (not a stopped) job reaches. Results of failed attempts therefore
 * never reach the list; the result is restart-safe.
 *
 * <p>The job is submitted at the DataStream level ({@code executeAsync}, whose {@link JobClient}
 * stops it with a savepoint) because its tail is a DataStream anyway. The DataStream operators
 * carry UIDs; the SQL operators keep Flink's generated IDs, which stay stable across the
 * parallelism change (the topology is unchanged), and unclaimed savepoint state is not allowed, so
 * the resumed job must map every operator's state, Ferry's included.
 */
class FailoverTest {
    @RegisterExtension
    static final MiniClusterExtension CLUSTER = MiniClusters.twoByTwo();

    static final long ROWS = 40_000;

    static final String QUERY =
            "SELECT c % 7 AS g, COUNT(*) AS n, SUM(s) AS s, MIN(m) AS lo, MAX(m) AS hi, AVG(s) AS a,"
                    + " MIN(k) AS kmin, MAX(k) AS kmax"
                    + " FROM (SELECT k, COUNT(*) AS c, SUM(v) AS s, MAX(v) AS m FROM T GROUP BY k)"
                    + " GROUP BY c % 7";

    // Shared with the job's functions: the MiniCluster runs in this JVM.
    static final Queue<String> RESULT = new ConcurrentLinkedQueue<>();
    static final AtomicLong RECORDS = new AtomicLong();
    static final AtomicBoolean FAIL = new AtomicBoolean();
    static final AtomicBoolean FAILED = new AtomicBoolean();
    static final AtomicBoolean RESTORED = new AtomicBoolean();
    static final AtomicInteger MAX_ATTEMPT = new AtomicInteger();
    static final AtomicLong FAILED_AT = new AtomicLong();
    /** Rows the restored checkpoint or savepoint covered: the gates' restored row counts. */
    static final AtomicLong RESTORED_ROWS = new AtomicLong();
    /** Rows that passed the gates in attempts after the first (replayed or new). */
    static final AtomicLong LATER_ATTEMPT_RECORDS = new AtomicLong();

    static void reset(boolean fail) {
        RESULT.clear();
        RECORDS.set(0);
        FAIL.set(fail);
        FAILED.set(false);
        RESTORED.set(false);
        MAX_ATTEMPT.set(0);
        FAILED_AT.set(0);
        RESTORED_ROWS.set(0);
        LATER_ATTEMPT_RECORDS.set(0);
    }

    /** One row per sequence number: k BIGINT (some NULL; ~970 keys of uneven counts), v BIGINT. */
    static Row row(long id) {
        return Row.of(id % 101 == 5 ? null : (id * 7919) % (1 + id % 997), id % 1013 - 500);
    }

    /**
     * Passes rows through; when armed, throws once, after three checkpoints of this subtask
     * completed and 300 more rows arrived, so the restart has Ferry state to restore (from a
     * checkpoint well into the stream) and rows to replay. Its operator state is the count of rows
     * it passed, so a restore tells how many rows the checkpoint covered.
     */
    static final class Gate extends RichMapFunction<Row, Row> implements CheckpointListener, CheckpointedFunction {
        private transient int checkpoints;
        private transient long seen;
        private transient long seenAtThirdCheckpoint;
        private transient boolean laterAttempt;
        private transient ListState<Long> seenState;

        @Override
        public void open(OpenContext ctx) {
            int attempt = getRuntimeContext().getTaskInfo().getAttemptNumber();
            laterAttempt = attempt > 0;
            MAX_ATTEMPT.accumulateAndGet(attempt, Math::max);
        }

        @Override
        public Row map(Row r) throws InterruptedException {
            RECORDS.incrementAndGet();
            if (laterAttempt) {
                LATER_ATTEMPT_RECORDS.incrementAndGet();
            }
            if (FAIL.get() && !FAILED.get() && seen % 4 == 0) {
                Thread.sleep(1); // armed: never let the input end before the failure (slow first checkpoints)
            }
            if (++seen > seenAtThirdCheckpoint + 300 && checkpoints >= 3 && FAIL.get() && FAILED.compareAndSet(false, true)) {
                FAILED_AT.set(RECORDS.get());
                throw new RuntimeException("injected failure (FailoverTest)");
            }
            return r;
        }

        @Override
        public void notifyCheckpointComplete(long checkpointId) {
            if (++checkpoints == 3) {
                seenAtThirdCheckpoint = seen;
            }
        }

        @Override
        public void initializeState(FunctionInitializationContext ctx) throws Exception {
            seenState = ctx.getOperatorStateStore().getListState(new ListStateDescriptor<>("seen", Types.LONG));
            if (ctx.isRestored()) {
                RESTORED.set(true);
                for (Long n : seenState.get()) {
                    RESTORED_ROWS.addAndGet(n);
                }
            }
        }

        @Override
        public void snapshotState(FunctionSnapshotContext ctx) throws Exception {
            seenState.update(List.of(seen));
        }
    }

    /**
     * Materializes the latest row per result key; emits the table when event time ends, at
     * {@code endOfTime}: the last watermark that reaches it (Long.MAX_VALUE, less any watermark
     * delay upstream).
     */
    static final class Materialize extends KeyedProcessFunction<String, Row, String> {
        private final long endOfTime;
        private transient ValueState<String> latest;

        Materialize(long endOfTime) {
            this.endOfTime = endOfTime;
        }

        @Override
        public void open(OpenContext ctx) {
            latest = getRuntimeContext().getState(new ValueStateDescriptor<>("latest", Types.STRING));
        }

        @Override
        public void processElement(Row r, Context ctx, Collector<String> out) throws Exception {
            RowKind kind = r.getKind();
            if (kind == RowKind.INSERT || kind == RowKind.UPDATE_AFTER) {
                Row v = Row.copy(r);
                v.setKind(RowKind.INSERT);
                latest.update(v.toString());
            } else if (kind == RowKind.DELETE) {
                latest.clear();
            }
            ctx.timerService().registerEventTimeTimer(endOfTime);
        }

        @Override
        public void onTimer(long timestamp, OnTimerContext ctx, Collector<String> out) throws Exception {
            if (latest.value() != null) {
                RESULT.add(latest.value());
            }
        }
    }

    static final class Job {
        final StreamExecutionEnvironment env;
        final String plan;

        Job(StreamExecutionEnvironment env, String plan) {
            this.env = env;
            this.plan = plan;
        }
    }

    static Job job(boolean ferry, int parallelism, double rowsPerSecond, Configuration extra) {
        return job(QUERY, Map.of(), ferry, parallelism, rowsPerSecond, extra);
    }

    /** The job of {@code query}, with {@code tableOptions} set on its table configuration. */
    static Job job(String query, Map<String, String> tableOptions, boolean ferry, int parallelism, double rowsPerSecond,
            Configuration extra) {
        Configuration conf = new Configuration();
        conf.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofMillis(100));
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "fixed-delay");
        conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_ATTEMPTS, 3);
        conf.set(RestartStrategyOptions.RESTART_STRATEGY_FIXED_DELAY_DELAY, Duration.ofMillis(100));
        conf.addAll(extra);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(parallelism);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
        tEnv.getConfig().set("table.exec.resource.default-parallelism", String.valueOf(parallelism));
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        tEnv.getConfig().set(FerryOptions.BATCH_SIZE, 100);
        tableOptions.forEach((k, v) -> tEnv.getConfig().set(k, v));
        Ferry.install(tEnv);
        DataGeneratorSource<Row> source =
                new DataGeneratorSource<>(
                        FailoverTest::row,
                        ROWS,
                        rowsPerSecond > 0 ? RateLimiterStrategy.perSecond(rowsPerSecond) : RateLimiterStrategy.noOp(),
                        Types.ROW_NAMED(new String[] {"k", "v"}, Types.LONG, Types.LONG));
        DataStream<Row> rows =
                env.fromSource(source, WatermarkStrategy.noWatermarks(), "sequence").uid("sequence")
                        .map(new Gate()).uid("gate")
                        .returns(Types.ROW_NAMED(new String[] {"k", "v"}, Types.LONG, Types.LONG));
        tEnv.createTemporaryView("T", tEnv.fromDataStream(rows));
        Table result = tEnv.sqlQuery(query);
        String plan = result.explain();
        tEnv.toChangelogStream(result)
                .keyBy(r -> String.valueOf(r.getField(0)))
                .process(new Materialize(Long.MAX_VALUE)).uid("materialize")
                .sinkTo(new DiscardingSink<>()).uid("discard");
        return new Job(env, plan);
    }

    static List<String> result() {
        List<String> rows = new ArrayList<>(RESULT);
        rows.sort(null);
        return rows;
    }

    private static final Map<String, List<String>> REFERENCES = new HashMap<>();

    /** The failure-free result with Ferry off (computed once). */
    /** The failure-free result of {@link #QUERY} with Ferry off (computed once). */
    static List<String> reference() throws Exception {
        return reference(QUERY, Map.of());
    }

    /** The failure-free result of {@code query} with Ferry off (computed once per query and options). */
    static synchronized List<String> reference(String query, Map<String, String> tableOptions) throws Exception {
        String id = query + tableOptions;
        if (REFERENCES.containsKey(id)) {
            return REFERENCES.get(id);
        }
        reset(false);
        Job j = job(query, tableOptions, false, 4, 0, new Configuration());
        assertTrue(j.plan.contains("ferry=[disabled"), j.plan);
        j.env.execute("reference");
        List<String> rows = result();
        assertEquals(7, rows.size(), "one row per c % 7: " + rows);
        assertEquals(ROWS, RECORDS.get());
        REFERENCES.put(id, rows);
        return rows;
    }

    static void assertFerryPlanned(String plan) {
        int at = -1;
        int n = 0;
        while ((at = plan.indexOf("ferry=[native]", at + 1)) >= 0) {
            n++;
        }
        // Each GROUP BY appears in the optimized plan and again in the physical plan section.
        assertTrue(n >= 2, "both group aggregates run natively:\n" + plan);
    }

    @Test
    void recoversFromAFailureWithExactlyOnceResults() throws Exception {
        assertRecovers(QUERY, Map.of(), new Configuration());
    }

    /** Injects one failure into a Ferry job of {@code query}; its final table must equal Flink's. */
    static void assertRecovers(String query, Map<String, String> tableOptions, Configuration extra) throws Exception {
        List<String> want = reference(query, tableOptions);

        reset(true);
        Job j = job(query, tableOptions, true, 4, 12_000, extra);
        assertFerryPlanned(j.plan);
        j.env.execute("failover");
        assertTrue(FAILED.get(), "the failure was injected");
        assertTrue(MAX_ATTEMPT.get() >= 1, "the job restarted (max attempt " + MAX_ATTEMPT.get() + ")");
        assertTrue(RESTORED.get(), "the restart restored a completed checkpoint");
        assertTrue(RESTORED_ROWS.get() > 0, "the restored checkpoint covered rows (Ferry restored their state)");
        assertTrue(RECORDS.get() > ROWS, "rows after the checkpoint were replayed: " + RECORDS.get());
        // Exactly once: the restarted sources emitted exactly the rows the checkpoint did not cover.
        assertEquals(ROWS - RESTORED_ROWS.get(), LATER_ATTEMPT_RECORDS.get(),
                "rows after the restart (restored checkpoint covered " + RESTORED_ROWS.get() + ", failure after "
                        + FAILED_AT.get() + " rows)");
        assertEquals(want, result());
    }

    /**
     * Async state on ({@code table.exec.async-state.enabled}): Ferry's operators replace Flink's
     * async-state GROUP BY (the inner one; the outer one keeps DataViews, so Flink's would be
     * synchronous anyway). Being synchronous, they get the backend's synchronous keyed state, on
     * ForSt too (Flink creates the asynchronous one only for async-state operators). On ForSt, RocksDB
     * and the heap backend a job recovers from a failure, and resumes from a savepoint at another
     * parallelism, with Flink's final table.
     */
    @ParameterizedTest
    @ValueSource(strings = {"forst", "hashmap", "rocksdb"})
    void asyncStateRecoversAndRescales(String backend, @TempDir Path dir) throws Exception {
        Map<String, String> async = Map.of("table.exec.async-state.enabled", "true");
        Configuration conf = new Configuration();
        conf.setString("state.backend.type", backend);
        assertRecovers(QUERY, async, conf);
        assertResumes(QUERY, async, conf, dir, 4, 3);
    }

    @Test
    void resumesFromASavepointAtHalfTheParallelism(@TempDir Path dir) throws Exception {
        String savepoint = assertResumes(QUERY, Map.of(), new Configuration(), dir, 4, 2);

        // Flink itself refuses to restore the savepoint into a different max parallelism.
        reset(false);
        Configuration otherMax = new Configuration();
        otherMax.set(StateRecoveryOptions.SAVEPOINT_PATH, savepoint);
        otherMax.set(PipelineOptions.MAX_PARALLELISM, 256);
        Job wrong = job(true, 2, 0, otherMax);
        Exception refused = assertThrows(Exception.class, () -> wrong.env.execute("other max parallelism"));
        assertTrue(causes(refused).contains("Cannot map operator") && causes(refused).contains("with max parallelism 128 to new program with max parallelism 256"),
                causes(refused));
    }

    /**
     * Runs a Ferry job of {@code query} at parallelism {@code from}, stops it with a savepoint a
     * third of the way, resumes at {@code to}; the final table must equal Flink's.
     *
     * @return the savepoint's path
     */
    static String assertResumes(String query, Map<String, String> tableOptions, Configuration extra, Path dir, int from, int to)
            throws Exception {
        List<String> want = reference(query, tableOptions);

        Job first = job(query, tableOptions, true, from, 10_000, extra);
        assertFerryPlanned(first.plan);
        String savepoint = savepointMidStream(first, extra, dir, Duration.ofSeconds(30));
        long before = RECORDS.get();
        assertEquals(List.of(), result(), "a stopped job does not end event time");

        // Resume at the other parallelism from the savepoint; the source continues where it stopped.
        reset(false);
        Configuration resume = new Configuration(extra);
        resume.set(StateRecoveryOptions.SAVEPOINT_PATH, savepoint);
        Job second = job(query, tableOptions, true, to, 0, resume);
        assertFerryPlanned(second.plan);
        second.env.execute("after savepoint");
        assertTrue(RESTORED.get(), "the second run restored the savepoint");
        assertEquals(before, RESTORED_ROWS.get(), "the savepoint covered every row of the first run");
        assertEquals(ROWS, before + RECORDS.get(), "each row went through exactly once across both runs");
        assertEquals(want, result());
        return savepoint;
    }

    /**
     * The outer GROUP BY of {@link #QUERY} with DISTINCT calls (their value counts) and MIN/MAX
     * with retraction (value→count maps) in the global's state, as under two-phase mini-batch
     * both halves of both aggregates run natively.
     */
    static final String TWO_PHASE_QUERY =
            "SELECT c % 7 AS g, COUNT(*) AS n, SUM(s) AS s, AVG(s) AS a, SUM(m) AS sm, COUNT(k) AS nk,"
                    + " COUNT(DISTINCT m) AS dm, SUM(DISTINCT c) FILTER (WHERE m > 0) AS dc, MIN(m) AS lo, MAX(s) AS hi"
                    + " FROM (SELECT k, COUNT(*) AS c, SUM(v) AS s, MAX(v) AS m FROM T GROUP BY k)"
                    + " GROUP BY c % 7";

    static final Map<String, String> TWO_PHASE =
            Map.of(
                    "table.exec.mini-batch.enabled", "true",
                    "table.exec.mini-batch.allow-latency", "20 ms",
                    "table.exec.mini-batch.size", "200",
                    "table.optimizer.agg-phase-strategy", "TWO_PHASE");

    /**
     * {@link #TWO_PHASE} with split DISTINCT: the outer GROUP BY becomes Local → Incremental →
     * Global, with columnar exchanges into and out of the incremental aggregate, whose DISTINCT
     * maps are keyed state too.
     */
    static final Map<String, String> SPLIT = splitOptions();

    private static Map<String, String> splitOptions() {
        Map<String, String> m = new HashMap<>(TWO_PHASE);
        m.put("table.optimizer.distinct-agg.split.enabled", "true");
        return Map.copyOf(m);
    }

    /**
     * Two-phase mini-batch with the columnar exchanges between the halves (and, split, into and out
     * of the incremental aggregate): a failure mid-stream, a restart from the last checkpoint
     * (frames in flight are dropped with the failed attempt, the producers having flushed their
     * bundles before the checkpoint's barrier), exactly-once results equal to Flink's.
     */
    @ParameterizedTest(name = "split DISTINCT {0}")
    @ValueSource(booleans = {false, true})
    void twoPhaseRecoversFromAFailure(boolean split) throws Exception {
        long frames = AbstractNativeOperator.framesRead();
        long incrementalFrames = AbstractNativeOperator.framesRead(IncrementalGroupAggregateSpec.KIND);
        assertRecovers(TWO_PHASE_QUERY, split ? SPLIT : TWO_PHASE, new Configuration());
        assertTrue(AbstractNativeOperator.framesRead() > frames, "frames crossed the columnar exchanges");
        assertEquals(split, AbstractNativeOperator.framesRead(IncrementalGroupAggregateSpec.KIND) > incrementalFrames,
                "frames the incremental aggregates read");
    }

    /**
     * Two-phase mini-batch: the global aggregates' state (raw keyed state, per key group) goes
     * through a savepoint taken at parallelism 4 and is cut for 3 subtasks; the local aggregates,
     * which keep nothing, flush their bundles before the savepoint's barrier. Split, the
     * incremental aggregate's maps go the same way, and after the rescale it routes its frames
     * for the global's 3 subtasks. The final table equals Flink's.
     */
    @ParameterizedTest(name = "split DISTINCT {0}")
    @ValueSource(booleans = {false, true})
    void twoPhaseResumesFromASavepointAtAnotherParallelism(boolean split, @TempDir Path dir) throws Exception {
        Map<String, String> options = split ? SPLIT : TWO_PHASE;
        List<String> want = reference(TWO_PHASE_QUERY, options);

        reset(false);
        Job first = job(TWO_PHASE_QUERY, options, true, 4, 10_000, new Configuration());
        List<String> terms = twoPhaseTerms(physicalPlan(first.plan));
        assertEquals(split
                ? List.of("Global: native", "Incremental: native", "Local: native", "Global: native", "Local: native")
                : List.of("Global: native", "Local: native", "Global: native", "Local: native"), terms, first.plan);
        assertEquals(split ? List.of("columnar", "columnar", "columnar") : List.of("columnar", "columnar"),
                PlannerTests.exchangeTerms(physicalPlan(first.plan)), first.plan);
        long globals = Ferry.nativeOperatorsOpened(GlobalGroupAggregateSpec.KIND);
        long frames = AbstractNativeOperator.framesRead();
        JobClient client = first.env.executeAsync("two-phase before savepoint");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (RECORDS.get() < ROWS / 3) {
            assertTrue(System.nanoTime() < deadline, "the job did not get going: " + RECORDS.get() + " rows");
            Thread.sleep(10);
        }
        String savepoint =
                client.stopWithSavepoint(false, dir.toUri().toString(), SavepointFormatType.CANONICAL).get(60, TimeUnit.SECONDS);
        client.getJobExecutionResult().get(60, TimeUnit.SECONDS);
        long before = RECORDS.get();
        assertTrue(before < ROWS, "stopped mid-stream: " + before);
        assertTrue(Ferry.nativeOperatorsOpened(GlobalGroupAggregateSpec.KIND) - globals >= 8, "native global aggregates ran");
        assertTrue(AbstractNativeOperator.framesRead() > frames, "frames crossed the columnar exchanges");

        reset(false);
        Configuration resume = new Configuration();
        resume.set(StateRecoveryOptions.SAVEPOINT_PATH, savepoint);
        Job second = job(TWO_PHASE_QUERY, options, true, 3, 0, resume);
        assertEquals(terms, twoPhaseTerms(physicalPlan(second.plan)), second.plan);
        second.env.execute("two-phase after savepoint");
        assertTrue(RESTORED.get(), "the second run restored the savepoint");
        assertEquals(before, RESTORED_ROWS.get(), "the savepoint covered every row of the first run");
        assertEquals(ROWS, before + RECORDS.get(), "each row went through exactly once across both runs");
        assertEquals(want, result());
    }

    /**
     * Runs {@code job} until a third of the rows went through, then stops it with a savepoint in
     * {@code dir} ({@link #stopWithSavepoint}); {@code timeout} bounds the wait for those rows and
     * the savepoint's retries.
     *
     * @return the savepoint's path
     */
    static String savepointMidStream(Job job, Configuration conf, Path dir, Duration timeout) throws Exception {
        reset(false);
        JobClient client = job.env.executeAsync("before savepoint");
        long deadline = System.nanoTime() + timeout.toNanos();
        while (RECORDS.get() < ROWS / 3) {
            assertTrue(System.nanoTime() < deadline, "the job did not get going: " + RECORDS.get() + " rows");
            Thread.sleep(10);
        }
        String savepoint = stopWithSavepoint(client, dir, conf, deadline);
        client.getJobExecutionResult().get(60, TimeUnit.SECONDS);
        assertTrue(RECORDS.get() < ROWS, "stopped mid-stream: " + RECORDS.get());
        return savepoint;
    }

    /**
     * Stops the job with a savepoint in the canonical format (ForSt writes only its native one),
     * retrying while downstream tasks are still starting.
     */
    static String stopWithSavepoint(JobClient client, Path dir, Configuration conf, long deadline) throws Exception {
        SavepointFormatType format =
                conf.toMap().getOrDefault("state.backend.type", "").equals("forst")
                        ? SavepointFormatType.NATIVE
                        : SavepointFormatType.CANONICAL;
        while (true) {
            try {
                return client.stopWithSavepoint(false, dir.toUri().toString(), format).get(60, TimeUnit.SECONDS);
            } catch (ExecutionException e) {
                // downstream tasks may still be starting (RocksDB, ForSt) while the source already runs
                assertTrue(causes(e).contains("Not all required tasks are currently running"), causes(e));
                assertTrue(System.nanoTime() < deadline, "no savepoint: " + causes(e));
                Thread.sleep(100);
            }
        }
    }

    static String causes(Throwable t) {
        StringBuilder b = new StringBuilder();
        TreeSet<Integer> seen = new TreeSet<>();
        for (; t != null && seen.add(System.identityHashCode(t)); t = t.getCause()) {
            b.append(t).append('\n');
        }
        return b.toString();
    }
}
