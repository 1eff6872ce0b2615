package io.ferrystream.ferry.planner;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.test.junit5.MiniClusterExtension;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.ferrystream.ferry.planner.FailoverTest.RECORDS;
import static io.ferrystream.ferry.planner.FailoverTest.ROWS;
import static io.ferrystream.ferry.planner.FailoverTest.reset;
import static io.ferrystream.ferry.planner.FailoverTest.result;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A job switches Ferry on or off across a savepoint (FailoverTest's job: two stacked GROUP BYs in
 * plain SQL, whose operators keep Flink's generated IDs with Ferry on and off).
 */
class SavepointSwitchTest {
    @RegisterExtension
    static final MiniClusterExtension CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(2)
                            .setNumberSlotsPerTaskManager(2)
                            .build());

    /** Runs the job with Ferry on or off until a third of the rows went through, then stops it with a savepoint. */
    static String savepointMidStream(boolean ferry, Path dir) throws Exception {
        reset(false);
        FailoverTest.Job job = FailoverTest.job(ferry, 2, 10_000, new Configuration());
        JobClient client = job.env.executeAsync("before savepoint");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (RECORDS.get() < ROWS / 3) {
            assertTrue(System.nanoTime() < deadline, "the job did not get going: " + RECORDS.get() + " rows");
            Thread.sleep(10);
        }
        String savepoint =
                client.stopWithSavepoint(false, dir.toUri().toString(), SavepointFormatType.CANONICAL).get(60, TimeUnit.SECONDS);
        client.getJobExecutionResult().get(60, TimeUnit.SECONDS);
        assertTrue(RECORDS.get() < ROWS, "stopped mid-stream: " + RECORDS.get());
        return savepoint;
    }

    static FailoverTest.Job resume(boolean ferry, String savepoint) {
        reset(false);
        Configuration conf = new Configuration();
        conf.set(StateRecoveryOptions.SAVEPOINT_PATH, savepoint);
        return FailoverTest.job(ferry, 2, 0, conf);
    }

    /**
     * Reproduces the loss: a savepoint taken with Ferry off restores into Ferry's operators, which
     * never read the stock operators' managed keyed state and start empty.
     */
    @Test
    void stockSavepointRestoredIntoFerryLosesTheAggregates(@TempDir Path dir) throws Exception {
        List<String> want = FailoverTest.reference();
        String savepoint = savepointMidStream(false, dir);
        FailoverTest.Job job = resume(true, savepoint);
        FailoverTest.assertFerryPlanned(job.plan);
        job.env.execute("after savepoint");
        List<String> got = result();
        System.out.println("stock savepoint -> Ferry: " + got + "\nreference: " + want);
        assertNotEquals(want, got, "the results lost the aggregates of the rows before the savepoint");
    }
}
