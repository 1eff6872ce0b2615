package io.ferrystream.ferry.planner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.nativelib.NativeLibrary;
import io.ferrystream.ferry.operators.AbstractNativeOperator;

import org.apache.flink.api.common.JobStatus;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.ExceptionUtils;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.Map;

/**
 * Native operators on Flink's managed-memory budget (docs/state.md#memory), on a MiniCluster whose
 * one slot has 8 MiB of managed memory: the operator's share is reserved while it runs and sets
 * the Go runtime's soft limit, RocksDB's own managed memory halves that share, state that outgrows
 * it runs on with Go's limit lifted (the default) or fails the job with a message naming what to
 * raise ({@code ferry.memory.over-budget: FAIL}), and {@code ferry.memory.weight: 0} runs the
 * operator outside the budget.
 */
class ManagedMemoryTest {
    private static final long SLOT_MANAGED = 8L << 20;
    private static final long GO_BASE = 64L << 20;

    @RegisterExtension
    static final MiniClusterExtension CLUSTER = new MiniClusterExtension(
            new MiniClusterResourceConfiguration.Builder()
                    .setNumberTaskManagers(1)
                    .setNumberSlotsPerTaskManager(1)
                    .setConfiguration(managedMemory())
                    .build());

    private static Configuration managedMemory() {
        Configuration c = new Configuration();
        c.set(TaskManagerOptions.MANAGED_MEMORY_SIZE, MemorySize.parse(SLOT_MANAGED + "b"));
        return c;
    }

    /** Keys 0..keys-1, forever at 2000 rows/s (an unbounded source), or each once ({@code rows} > 0). */
    static StreamTableEnvironment env(Map<String, String> options, long keys, long rows) {
        return env(options, keys, rows, 2000);
    }

    /** Keys 0..keys-1, forever at {@code rowsPerSecond}, or each once ({@code rows} > 0). */
    static StreamTableEnvironment env(Map<String, String> options, long keys, long rows, long rowsPerSecond) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(Configuration.fromMap(options));
        env.setParallelism(1);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
        Ferry.install(tEnv);
        options.forEach((k, v) -> tEnv.getConfig().set(k, v));
        String bound = rows > 0 ? ", 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '" + (rows - 1) + "'"
                : ", 'rows-per-second' = '" + rowsPerSecond + "', 'fields.id.min' = '0', 'fields.id.max' = '1000000'";
        tEnv.executeSql("CREATE TEMPORARY TABLE src (id BIGINT) WITH ('connector' = 'datagen'" + bound + ")");
        tEnv.executeSql("CREATE TEMPORARY VIEW T AS SELECT MOD(id, " + keys + ") AS k, id AS v FROM src");
        tEnv.executeSql("CREATE TEMPORARY TABLE out_ (k BIGINT, c BIGINT, s BIGINT) WITH ('connector' = 'blackhole')");
        return tEnv;
    }

    static final String QUERY = "SELECT k, COUNT(*), SUM(v) FROM T GROUP BY k";

    @AfterEach
    void noneLeftOpen() throws InterruptedException {
        assertEquals(Long.MAX_VALUE, settledGoLimit(Long.MAX_VALUE),
                "with no native operator open, Go has no soft limit");
    }

    /** The Go soft limit once it equals {@code want}, or what it is after 30 s of waiting. */
    static long settledGoLimit(long want) throws InterruptedException {
        long deadline = System.nanoTime() + 30_000_000_000L;
        long limit = NativeLibrary.runtimeMemory()[2];
        while (limit != want && System.nanoTime() < deadline) {
            Thread.sleep(20);
            limit = NativeLibrary.runtimeMemory()[2];
        }
        return limit;
    }

    /** Runs the unbounded query until its first row, then reads the Go soft limit; cancels it. */
    private static long goLimitWhileRunning(Map<String, String> options, long want) throws Exception {
        long opened = AbstractNativeOperator.openedCount();
        TableResult result = env(options, 100, 0).executeSql(QUERY);
        try (CloseableIterator<Row> rows = result.collect()) {
            assertTrue(rows.hasNext());
            assertTrue(AbstractNativeOperator.openedCount() > opened, "the GROUP BY ran natively");
            return settledGoLimit(want);
        }
    }

    @Test
    void theOperatorsShareIsReservedAndBoundsGo() throws Exception {
        // the slot's one OPERATOR consumer: all of its managed memory
        assertEquals(SLOT_MANAGED + GO_BASE, goLimitWhileRunning(Map.of(), SLOT_MANAGED + GO_BASE));
    }

    @Test
    void rocksDbTakesHalfOfTheSlot() throws Exception {
        // OPERATOR and STATE_BACKEND weigh 70 each (taskmanager.memory.managed.consumer-weights)
        Map<String, String> rocks = Map.of("state.backend.type", "rocksdb");
        assertEquals(SLOT_MANAGED / 2 + GO_BASE, goLimitWhileRunning(rocks, SLOT_MANAGED / 2 + GO_BASE));
    }

    @Test
    void weightZeroRunsOutsideTheBudget() throws Exception {
        Map<String, String> unbudgeted = Map.of(FerryOptions.MEMORY_WEIGHT.key(), "0");
        assertEquals(Long.MAX_VALUE, goLimitWhileRunning(unbudgeted, Long.MAX_VALUE));
        // and state far beyond the slot's 8 MiB
        long opened = AbstractNativeOperator.openedCount();
        env(unbudgeted, 200_000, 200_000).executeSql("INSERT INTO out_ " + QUERY).await();
        assertTrue(AbstractNativeOperator.openedCount() > opened, "the GROUP BY ran natively");
    }

    @Test
    void stateOverTheBudgetRunsOnAndLiftsGosLimitByDefault() throws Exception {
        // ~100 bytes a key: 200 K keys > 8 MiB, and a job that stock Flink's heap backend runs
        long opened = AbstractNativeOperator.openedCount();
        TableResult result = env(Map.of(), 200_000, 200_000).executeSql(QUERY);
        long rows = 0;
        try (CloseableIterator<Row> it = result.collect()) {
            for (; it.hasNext(); rows++) {
                it.next();
            }
        }
        assertTrue(AbstractNativeOperator.openedCount() > opened, "the GROUP BY ran natively");
        assertEquals(200_000, rows, "one insert per key");
        // while the operator runs over its budget, Go has no soft limit
        opened = AbstractNativeOperator.openedCount();
        JobClient job = env(Map.of(), 200_000, 0, 50_000).executeSql("INSERT INTO out_ " + QUERY).getJobClient().get();
        try {
            while (AbstractNativeOperator.openedCount() == opened) {
                Thread.sleep(20);
            }
            // a budgeted operator within its budget would set SLOT_MANAGED + GO_BASE
            assertEquals(Long.MAX_VALUE, settledGoLimit(Long.MAX_VALUE), "over its budget, Go has no limit");
            assertEquals(JobStatus.RUNNING, job.getJobStatus().get());
        } finally {
            job.cancel().get();
        }
    }

    @Test
    void stateOverTheBudgetFailsTheJobSayingWhatToRaiseUnderFail() {
        Map<String, String> failing = Map.of(FerryOptions.MEMORY_OVER_BUDGET.key(), "FAIL");
        StreamTableEnvironment tEnv = env(failing, 200_000, 200_000); // ~100 bytes a key: > 8 MiB
        Exception e = assertThrows(Exception.class, () -> tEnv.executeSql("INSERT INTO out_ " + QUERY).await());
        String why = ExceptionUtils.stringifyException(e);
        assertTrue(why.contains("Ferry's native operator GroupAggregate(")
                && why.contains("(subtask 1 of 1) needs more memory than its share of the slot's managed memory: ")
                && why.contains(" exceed its 8.0 MiB (100.0 % of the slot's 8.0 MiB). Raise taskmanager.memory.managed.size")
                && why.contains("ferry.memory.weight"), why);
    }
}
