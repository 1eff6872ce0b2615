package io.ferrystream.ferry.planner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrystream.ferry.nativelib.NativeLibrary;
import io.ferrystream.ferry.operators.AbstractNativeOperator;
import io.ferrystream.ferry.operators.NativeSpec;

import org.apache.flink.api.common.JobID;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.scheduler.exceptionhistory.RootExceptionHistoryEntry;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.Map;
import java.util.TreeMap;

/**
 * A Go panic inside a native operator of a running job (the test library's hook, once per JVM, in
 * the GROUP BY's first batch) fails that task and poisons that operator only: Flink's restart
 * strategy restarts the job in the same JVM, the new operator runs, and the result is the
 * crash-free one (docs/architecture.md#errors-and-poisoning).
 */
@Tag("test-library")
class PanicFailoverTest {
    @RegisterExtension
    static final MiniClusterExtension CLUSTER = new MiniClusterExtension(
            new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(1).setNumberSlotsPerTaskManager(1).build());

    private static final long ROWS = 10_000;

    @Test
    void aPanicFailsTheTaskAndTheJobRecovers(@InjectMiniCluster MiniCluster cluster) throws Exception {
        NativeLibrary lib = NativeLibrary.load();
        NativeLibrary.Options before = lib.options();
        lib.reconfigure(before.withTestHooks(true));
        System.setProperty(NativeSpec.TEST_HOOKS_SPEC_PROPERTY, "{\"panic\":\"process\",\"once\":true}");
        try {
            StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
            env.setParallelism(1);
            StreamTableEnvironment tEnv = StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
            Ferry.install(tEnv);
            tEnv.getConfig().set("restart-strategy.type", "fixed-delay");
            tEnv.getConfig().set("restart-strategy.fixed-delay.attempts", "2");
            tEnv.getConfig().set("restart-strategy.fixed-delay.delay", "100 ms");
            // the collect sink follows a restart only with checkpointing
            tEnv.getConfig().set("execution.checkpointing.interval", "100 ms");
            tEnv.executeSql("CREATE TEMPORARY TABLE src (id BIGINT) WITH ('connector' = 'datagen',"
                    + " 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '" + (ROWS - 1) + "')");
            long opened = AbstractNativeOperator.openedCount();
            TableResult result = tEnv.executeSql("SELECT id % 10 AS k, COUNT(*) AS n, SUM(id) AS s FROM src GROUP BY id % 10");
            JobID job = result.getJobClient().orElseThrow().getJobID();
            Map<Long, String> table = new TreeMap<>();
            try (CloseableIterator<Row> rows = result.collect()) {
                rows.forEachRemaining(r -> table.put(((Number) r.getField(0)).longValue(), r.getField(1) + "," + r.getField(2)));
            }

            Map<Long, String> want = new TreeMap<>();
            for (long k = 0; k < 10; k++) {
                long sum = 0;
                for (long id = k; id < ROWS; id += 10) {
                    sum += id;
                }
                want.put(k, ROWS / 10 + "," + sum);
            }
            assertEquals(want, table, "the result after the restart");
            assertTrue(AbstractNativeOperator.openedCount() - opened >= 2,
                    "the native GROUP BY opened once, panicked, and opened again after the restart");
            StringBuilder failures = new StringBuilder();
            for (RootExceptionHistoryEntry e : cluster.getExecutionGraphInfo(job).get().getExceptionHistory()) {
                failures.append(e.getException().getFullStringifiedStackTrace());
            }
            String why = failures.toString();
            assertTrue(why.contains("FerryException [EINTERNAL]") && why.contains("internal error (Go panic)")
                    && why.contains("the operator is poisoned"), why);
            assertTrue(!why.contains("EPOISONED"), "the restarted task found the library healthy: " + why);
        } finally {
            System.clearProperty(NativeSpec.TEST_HOOKS_SPEC_PROPERTY);
            lib.reconfigure(before);
        }
    }
}
