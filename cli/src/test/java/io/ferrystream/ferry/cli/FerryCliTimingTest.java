package io.ferrystream.ferry.cli;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Plans whose changelog depends on timing (examples/compare-timing.sql): a join of two sources,
 * a native GROUP BY over it, an outer join, a processing-time mini-batch with a 20 ms latency
 * over a source throttled to 30,000 rows/s (a one-second job: dozens of bundles close on the wall
 * clock). Compare must pass them, at the level each plan guarantees, and say why.
 */
class FerryCliTimingTest {
    @Test
    void timingDependentPlans() {
        Cli.Result r = Cli.run("sql", Cli.example("compare-timing.sql"), "--mode", "compare", "--max-rows", "0",
                "--require-native");
        assertEquals(0, r.code(), r.toString());
        String out = r.out();
        assertTrue(out.contains("query 1: IDENTICAL (") && out.contains("compared as a multiset and as the final result,"
                + " since its order is not deterministic: Join reads 2 inputs, interleaved by arrival"), r.toString());
        assertTrue(out.contains("query 2: IDENTICAL final result (") && out.contains("GroupAggregate folds its input in"
                + " arrival order"), r.toString());
        assertTrue(out.contains("query 3: IDENTICAL final result (") && out.contains("Join emits updates whose sequence"
                + " depends on how its inputs interleave"), r.toString());
        assertTrue(out.contains("query 4: IDENTICAL final result (") && out.contains("processing-time mini-batch"
                + " (table.exec.mini-batch.allow-latency = 20 ms)"), r.toString());
        long[] n = r.nativeCount();
        assertEquals(2, n[0], r.toString());
        assertEquals(2, n[1], r.toString());
        assertTrue(out.strip().endsWith("IDENTICAL"), r.toString());
    }
}
