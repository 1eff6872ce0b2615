package io.ferrystream.ferry.nexmark.runner;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The runner's verdicts, its options and its report's arithmetic, without running jobs. */
class RunnerTest {
    private static final JobStats STATS = new JobStats(1_000, 3_000, 1, 2.0, 3.0, 4_096);

    private static JobRun run(Side side, int round, long events, long checksum, long rows, int nativeRan, String wallClock) {
        return new JobRun("q9", side, round, events, STATS, 1.0, 1.5, checksum, rows, 0, 2, nativeRan, side.ferry ? 2 : 0,
                "Join, Rank", wallClock);
    }

    @Test
    void equalResultsOnEverySidePass() {
        String v = NexmarkRunner.verdict(List.of(run(Side.HEAP, 0, 10, 7, 3, 0, ""), run(Side.FERRY, 0, 10, 7, 3, 1, ""),
                run(Side.HEAP, 1, 20, 9, 4, 0, ""), run(Side.FERRY, 1, 20, 9, 4, 1, "")));
        assertEquals("equal: 0000000000000009, 4 rows", v);
    }

    @Test
    void aDifferentChecksumOrRowCountFails() {
        assertTrue(NexmarkRunner.verdict(List.of(run(Side.HEAP, 1, 20, 9, 4, 0, ""), run(Side.FERRY, 1, 20, 8, 4, 1, "")))
                .startsWith("DIFFERENT: heap round 1: 0000000000000009, 4 rows; ferry round 1: 0000000000000008, 4 rows;"));
        assertTrue(NexmarkRunner.verdict(List.of(run(Side.HEAP, 1, 20, 9, 4, 0, ""), run(Side.ROCKSDB, 1, 20, 9, 5, 0, "")))
                .startsWith("DIFFERENT"));
    }

    @Test
    void aWallClockResultIsComparedOnlyWhenANativeOperatorRan() {
        String flinkOnly = NexmarkRunner.verdict(List.of(run(Side.HEAP, 1, 20, 9, 4, 0, "WindowAggregate on processing time"),
                run(Side.FERRY, 1, 20, 8, 4, 0, "WindowAggregate on processing time")));
        assertTrue(flinkOnly.startsWith("not compared: its result depends on the wall clock (WindowAggregate on"
                + " processing time), and every side ran Flink's own operators"), flinkOnly);
        assertTrue(NexmarkRunner.verdict(List.of(run(Side.HEAP, 1, 20, 9, 4, 0, "WindowAggregate on processing time"),
                run(Side.FERRY, 1, 20, 8, 4, 1, "WindowAggregate on processing time"))).startsWith("DIFFERENT"));
    }

    @Test
    void theSidesTakeTurnsToGoFirst() {
        List<Side> all = List.of(Side.HEAP, Side.ROCKSDB, Side.FERRY);
        assertEquals(List.of(Side.HEAP, Side.ROCKSDB, Side.FERRY), NexmarkRunner.rotated(all, 0));
        assertEquals(List.of(Side.ROCKSDB, Side.FERRY, Side.HEAP), NexmarkRunner.rotated(all, 1));
        assertEquals(List.of(Side.FERRY, Side.HEAP, Side.ROCKSDB), NexmarkRunner.rotated(all, 2));
    }

    @Test
    void optionsParseAndBadOnesSayWhy() {
        RunnerOptions o = RunnerOptions.parse(new String[] {"q17,Q4", "q0", "--events", "2.5M", "-Dfoo=bar", "--sides", "heap,ferry"});
        assertEquals(List.of("q17", "q4", "q0"), o.queries());
        assertEquals(2_500_000, o.events());
        assertEquals(2_500_000, o.warmupEvents());
        assertEquals("bar", o.jobConfiguration().toMap().get("foo"));
        assertEquals(List.of(Side.HEAP, Side.FERRY), o.sides());
        RunnerOptions l = RunnerOptions.parse(new String[] {"--long"});
        assertEquals(23, l.queries().size());
        assertEquals(100_000_000, l.events());
        assertEquals(10_000_000, l.warmupEvents());
        assertEquals(1, l.rounds());
        assertTrue(assertThrows(IllegalArgumentException.class, () -> RunnerOptions.parse(new String[] {"q23"}))
                .getMessage().startsWith("no Nexmark query q23; queries are q0 to q22"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> RunnerOptions.parse(new String[] {"--events", "lots"}))
                .getMessage().startsWith("--events wants a count such as 1000, 10K or 2.5M, got lots"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> RunnerOptions.parse(new String[] {"--sides", "gpu"}))
                .getMessage().startsWith("no side gpu; sides are heap, rocksdb, ferry"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> RunnerOptions.parse(new String[] {"--cluster", "http://x:1"}))
                .getMessage().startsWith("--cluster needs --jar"));
        assertTrue(assertThrows(IllegalArgumentException.class, () -> RunnerOptions.parse(new String[] {"--events"}))
                .getMessage().startsWith("--events needs a value"));
    }

    @Test
    void theReportTakesMediansAndTheirRatios() {
        JobStats slow = new JobStats(0, 4_000, 0, Double.NaN, Double.NaN, -1);
        JobStats fast = new JobStats(0, 1_000, 0, Double.NaN, Double.NaN, -1);
        List<JobRun> runs = List.of(
                new JobRun("q1", Side.HEAP, 1, 1_000, slow, 2.0, 2.0, 1, 1, 0, 0, 0, 0, "none", ""),
                new JobRun("q1", Side.FERRY, 1, 1_000, fast, 1.0, 1.0, 1, 1, 0, 0, 0, 0, "none", ""),
                new JobRun("q2", Side.HEAP, 1, 1_000, fast, 1.0, 1.0, 1, 1, 0, 1, 0, 0, "Join", ""),
                new JobRun("q2", Side.FERRY, 1, 1_000, fast, 4.0, 1.0, 1, 1, 0, 1, 1, 1, "Join (native)", ""));
        Report r = new Report(runs, List.of("q1", "q2"), List.of(Side.HEAP, Side.FERRY), java.util.Map.of());
        assertEquals(4.0, r.ratio("q1", Side.HEAP, JobRun::eventsPerSecond), 1e-9);
        assertEquals(0.25, r.ratio("q2", Side.HEAP, JobRun::eventsPerCore), 1e-9);
        assertEquals(2.0, r.geomean(Side.HEAP, JobRun::eventsPerSecond, false), 1e-9);
        assertEquals(1.0, r.geomean(Side.HEAP, JobRun::eventsPerSecond, true), 1e-9);
        assertEquals("1 of 1", r.nativeShare("q2"));
    }
}
