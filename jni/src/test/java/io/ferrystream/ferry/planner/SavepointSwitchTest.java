package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.kinds.groupaggregate.FlinkAccState;
import io.ferrystream.ferry.operators.AbstractNativeOperator;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateBackendOptions;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.test.junit5.MiniClusterExtension;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

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
 * handed the stock operator's state imports it or refuses to start and names it, and Flink's
 * operator fails on Ferry's raw keyed state. Restoring with the setting the savepoint was taken with gives the
 * results of a run that was never stopped.
 */
class SavepointSwitchTest {
    @RegisterExtension
    static final MiniClusterExtension CLUSTER = MiniClusters.twoByTwo();

    /** Runs the job until a third of the rows went through, then stops it with a savepoint. */
    static String savepointMidStream(String query, Map<String, String> options, boolean ferry, Configuration conf, Path dir)
            throws Exception {
        FailoverTest.Job job = FailoverTest.job(query, options, ferry, 2, 10_000, conf);
        return FailoverTest.savepointMidStream(job, conf, dir, Duration.ofSeconds(30));
    }

    static FailoverTest.Job resume(String query, Map<String, String> options, boolean ferry, Configuration conf, String savepoint) {
        reset(false);
        Configuration c = new Configuration(conf);
        c.set(StateRecoveryOptions.SAVEPOINT_PATH, savepoint);
        return FailoverTest.job(query, options, ferry, 2, 0, c);
    }

    static Configuration backend(String type) {
        Configuration conf = new Configuration();
        conf.set(StateBackendOptions.STATE_BACKEND, type);
        return conf;
    }

    /**
     * A GROUP BY over another one whose accumulators Ferry imports (COUNT, SUM, AVG, MAX on
     * insert-only input; COUNT, SUM, AVG on retracting input, with a COUNT(*) and with the count1
     * Flink inserts).
     */
    static final String IMPORTABLE_QUERY =
            "SELECT c % 7 AS g, COUNT(*) AS n, SUM(s) AS s, AVG(s) AS a, SUM(m) AS sm, COUNT(k) AS nk"
                    + " FROM (SELECT k, COUNT(*) AS c, SUM(v) AS s, MAX(v) AS m, AVG(v) AS av FROM T GROUP BY k)"
                    + " GROUP BY c % 7";

    /** Idle-state TTL long enough that nothing expires: Flink's state holds TtlValues. */
    static final Map<String, String> IDLE_STATE_TTL = Map.of("table.exec.state.ttl", "1 h");

    static final String COUNT1_QUERY =
            "SELECT c % 7 AS g, SUM(s) AS s, AVG(s) AS a, COUNT(k) AS nk"
                    + " FROM (SELECT k, COUNT(*) AS c, SUM(v) AS s FROM T GROUP BY k)"
                    + " GROUP BY c % 7";

    /**
     * Data views over retracting input: DISTINCT (Flink's distinctAcc_<i> MapStates, counts per
     * value) and MIN/MAX with retraction (agg<a>$map, counts per value).
     */
    static final String VIEWS_QUERY =
            "SELECT c % 7 AS g, COUNT(DISTINCT s) AS ds, SUM(DISTINCT c) AS sc, COUNT(DISTINCT k) FILTER (WHERE s > 0) AS dk,"
                    + " MIN(m) AS lo, MAX(s) AS hi"
                    + " FROM (SELECT k, COUNT(*) AS c, SUM(v) AS s, MAX(v) AS m FROM T GROUP BY k)"
                    + " GROUP BY c % 7";

    /**
     * State Ferry does not import: the outer LAST_VALUE with retraction keeps its values in
     * MapViews of lists (its argument equals the group key, so the result does not depend on the
     * order rows arrive in).
     */
    static final String REFUSED_QUERY =
            "SELECT c % 7 AS g, COUNT(*) AS n, LAST_VALUE(c % 7) AS lg"
                    + " FROM (SELECT k, COUNT(*) AS c FROM T GROUP BY k)"
                    + " GROUP BY c % 7";

    /**
     * Ferry off, savepoint, Ferry on: the native operators import Flink's {@code accState}
     * (FlinkAccState) and the job finishes with the results of a run that was never stopped, on
     * the HashMap, RocksDB and ForSt backends, single-phase and two-phase (the global aggregates'
     * state), with and without idle-state TTL, with and without data views (DISTINCT, MIN/MAX with
     * retraction).
     */
    @ParameterizedTest
    @ValueSource(strings = {"hashmap", "rocksdb", "forst"})
    void stockSavepointIntoFerryImportsFlinksState(String backend, @TempDir Path dir) throws Exception {
        Configuration conf = backend(backend);
        for (String query : List.of(IMPORTABLE_QUERY, COUNT1_QUERY, VIEWS_QUERY)) {
            for (Map<String, String> options : List.of(Map.<String, String>of(), FailoverTest.TWO_PHASE, IDLE_STATE_TTL)) {
                List<String> want = FailoverTest.reference(query, options);
                String savepoint = savepointMidStream(query, options, false, conf, dir.resolve(query.length() + "-" + options.size()));
                long imported = FlinkAccState.importedKeys();
                FailoverTest.Job ferry = resume(query, options, true, conf, savepoint);
                FailoverTest.assertFerryPlanned(ferry.plan);
                ferry.env.execute("Ferry on");
                String what = backend + " " + options + ": " + query;
                assertTrue(FlinkAccState.importedKeys() > imported, what + ": Ferry imported Flink's accState");
                assertEquals(want, result(), what);
            }
        }
    }

    /**
     * Ferry off, savepoint, Ferry on, with state Ferry does not import ({@link #REFUSED_QUERY}): the
     * native operator refuses to start, naming the state and why; restoring with Ferry off, as that
     * message says, finishes with the right results.
     */
    @ParameterizedTest
    @ValueSource(strings = {"hashmap", "rocksdb", "forst"})
    void stockSavepointIntoFerryFailsNamingTheState(String backend, @TempDir Path dir) throws Exception {
        List<String> want = FailoverTest.reference(REFUSED_QUERY, Map.of());
        Configuration conf = backend(backend);
        String savepoint = savepointMidStream(REFUSED_QUERY, Map.of(), false, conf, dir);

        FailoverTest.Job ferry = resume(REFUSED_QUERY, Map.of(), true, conf, savepoint);
        FailoverTest.assertFerryPlanned(ferry.plan);
        Exception refused = assertThrows(Exception.class, () -> ferry.env.execute("Ferry on"));
        String why = causes(refused);
        assertTrue(why.contains("Ferry's native operator GroupAggregate(") && why.contains("holds managed keyed state of"
                + " Flink's own operator (") && why.contains("accState") && why.contains("ferry.enabled: false")
                && why.contains("Flink keeps a data view of it in a MapState"), why);
        assertEquals(List.of(), result(), "the refused job produced no final table");

        FailoverTest.Job stock = resume(REFUSED_QUERY, Map.of(), false, conf, savepoint);
        stock.env.execute("Ferry off, as the message says");
        assertEquals(want, result());
    }

    /**
     * Ferry on, savepoint, Ferry off: the native operators write Flink's {@code accState} into the
     * savepoint instead of their own state, and Flink's operators finish the job with the results
     * of a run that was never stopped, on the HashMap, RocksDB and ForSt (native savepoints)
     * backends, single-phase and two-phase, with and without idle-state TTL.
     */
    @ParameterizedTest
    @ValueSource(strings = {"hashmap", "rocksdb", "forst"})
    void ferrySavepointIntoStockRestoresFlinksState(String backend, @TempDir Path dir) throws Exception {
        Configuration conf = backend(backend);
        for (String query : List.of(IMPORTABLE_QUERY, COUNT1_QUERY, VIEWS_QUERY)) {
            for (Map<String, String> options : List.of(Map.<String, String>of(), FailoverTest.TWO_PHASE, IDLE_STATE_TTL)) {
                List<String> want = FailoverTest.reference(query, options);
                long opened = AbstractNativeOperator.openedCount();
                String savepoint = savepointMidStream(query, options, true, conf, dir.resolve(query.length() + "-" + options.size()));
                String what = backend + " " + options + ": " + query;
                assertTrue(AbstractNativeOperator.openedCount() > opened, what + ": Ferry's operators ran before the savepoint");
                FailoverTest.Job stock = resume(query, options, false, conf, savepoint);
                assertTrue(stock.plan.contains("ferry=[disabled"), stock.plan);
                stock.env.execute("Ferry off");
                assertEquals(want, result(), what);
            }
        }
    }

    /**
     * Ferry on, savepoint, Ferry off, with state Ferry does not write in Flink's form ({@link
     * #REFUSED_QUERY}): Flink's operator reads raw keyed state as its timers and fails on Ferry's
     * chunks (Flink offers no hook to say more); restoring with Ferry on finishes with the right
     * results.
     */
    @Test
    void ferrySavepointIntoStockFails(@TempDir Path dir) throws Exception {
        List<String> want = FailoverTest.reference(REFUSED_QUERY, Map.of());
        Configuration conf = new Configuration();
        String savepoint = savepointMidStream(REFUSED_QUERY, Map.of(), true, conf, dir);

        FailoverTest.Job stock = resume(REFUSED_QUERY, Map.of(), false, conf, savepoint);
        Exception refused = assertThrows(Exception.class, () -> stock.env.execute("Ferry off"));
        String why = causes(refused);
        assertTrue(why.contains("Exception while creating StreamOperatorStateContext")
                && (why.contains("java.io.UTFDataFormatException: malformed input") || why.contains("java.io.EOFException")),
                why); // which one depends on the chunk's bytes (docs/state.md)
        assertEquals(List.of(), result(), "the refused job produced no final table");

        FailoverTest.Job ferry = resume(REFUSED_QUERY, Map.of(), true, conf, savepoint);
        FailoverTest.assertFerryPlanned(ferry.plan);
        ferry.env.execute("Ferry on");
        assertEquals(want, result());
    }
}
