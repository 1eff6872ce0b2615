package io.ferrystream.ferry.planner;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.test.junit5.MiniClusterExtension;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static io.ferrystream.ferry.planner.FailoverTest.RECORDS;
import static io.ferrystream.ferry.planner.FailoverTest.ROWS;
import static io.ferrystream.ferry.planner.FailoverTest.causes;
import static io.ferrystream.ferry.planner.FailoverTest.reset;
import static io.ferrystream.ferry.planner.FailoverTest.result;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A job switches Ferry on or off across a savepoint (FailoverTest's job: two stacked GROUP BYs in
 * plain SQL, whose operators keep Flink's operator IDs with Ferry on and off, docs/state.md
 * "Switching Ferry on or off"). Neither direction may lose state without a word: a native operator
 * handed the stock operator's state refuses to start and names it, and Flink's operator fails on
 * Ferry's raw keyed state. Restoring with the setting the savepoint was taken with gives the
 * results of a run that was never stopped.
 */
class SavepointSwitchTest {
    @RegisterExtension
    static final MiniClusterExtension CLUSTER = MiniClusters.twoByTwo();

    /** Runs the job until a third of the rows went through, then stops it with a savepoint. */
    static String savepointMidStream(boolean ferry, Configuration conf, Path dir) throws Exception {
        reset(false);
        FailoverTest.Job job = FailoverTest.job(ferry, 2, 10_000, conf);
        JobClient client = job.env.executeAsync("before savepoint");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (RECORDS.get() < ROWS / 3) {
            assertTrue(System.nanoTime() < deadline, "the job did not get going: " + RECORDS.get() + " rows");
            Thread.sleep(10);
        }
        String savepoint = FailoverTest.stopWithSavepoint(client, dir, conf, deadline);
        client.getJobExecutionResult().get(60, TimeUnit.SECONDS);
        assertTrue(RECORDS.get() < ROWS, "stopped mid-stream: " + RECORDS.get());
        return savepoint;
    }

    static FailoverTest.Job resume(boolean ferry, Configuration conf, String savepoint) {
        reset(false);
        Configuration c = new Configuration(conf);
        c.set(StateRecoveryOptions.SAVEPOINT_PATH, savepoint);
        return FailoverTest.job(ferry, 2, 0, c);
    }

    static Configuration backend(String type) {
        Configuration conf = new Configuration();
        conf.set(StateBackendOptions.STATE_BACKEND, type);
        return conf;
    }

    /**
     * Ferry off, savepoint, Ferry on: the native operators find Flink's {@code accState} (and the
     * MIN/MAX-with-retraction map views of the outer aggregate) and refuse to start, naming the
     * way out; restoring with Ferry off, as that message says, finishes with the right results.
     */
    @ParameterizedTest
    @ValueSource(strings = {"hashmap", "rocksdb", "forst"})
    void stockSavepointIntoFerryFailsNamingTheState(String backend, @TempDir Path dir) throws Exception {
        List<String> want = FailoverTest.reference();
        Configuration conf = backend(backend);
        String savepoint = savepointMidStream(false, conf, dir);

        FailoverTest.Job ferry = resume(true, conf, savepoint);
        FailoverTest.assertFerryPlanned(ferry.plan);
        Exception refused = assertThrows(Exception.class, () -> ferry.env.execute("Ferry on"));
        String why = causes(refused);
        assertTrue(why.contains("Ferry's native operator GroupAggregate(") && why.contains("holds managed keyed state of"
                + " Flink's own operator (") && why.contains("accState") && why.contains("ferry.enabled: false"), why);
        assertEquals(List.of(), result(), "the refused job produced no final table");

        FailoverTest.Job stock = resume(false, conf, savepoint);
        stock.env.execute("Ferry off, as the message says");
        assertEquals(want, result());
    }

    /**
     * Ferry on, savepoint, Ferry off: Flink's operator reads raw keyed state as its timers and
     * fails on Ferry's chunks (Flink offers no hook to say more); restoring with Ferry on finishes
     * with the right results.
     */
    @Test
    void ferrySavepointIntoStockFails(@TempDir Path dir) throws Exception {
        List<String> want = FailoverTest.reference();
        Configuration conf = new Configuration();
        String savepoint = savepointMidStream(true, conf, dir);

        FailoverTest.Job stock = resume(false, conf, savepoint);
        Exception refused = assertThrows(Exception.class, () -> stock.env.execute("Ferry off"));
        String why = causes(refused);
        assertTrue(why.contains("Exception while creating StreamOperatorStateContext")
                && why.contains("java.io.UTFDataFormatException: malformed input"), why);
        assertEquals(List.of(), result(), "the refused job produced no final table");

        FailoverTest.Job ferry = resume(true, conf, savepoint);
        FailoverTest.assertFerryPlanned(ferry.plan);
        ferry.env.execute("Ferry on");
        assertEquals(want, result());
    }
}
