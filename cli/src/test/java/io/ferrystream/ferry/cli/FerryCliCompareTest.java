package io.ferrystream.ferry.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code ferry sql --mode compare --require-native} over the example scripts: every query, run with
 * Flink's operators and with Ferry's on an embedded MiniCluster at parallelism 1, must produce the
 * identical changelog row for row, and every candidate node must have run natively, counted from
 * the native operators each job opened (not from EXPLAIN text).
 */
class FerryCliCompareTest {
    /** Compares a script whose every candidate node must run natively, with this many queries. */
    static Cli.Result compareAllNative(String script, int queries, int candidates) {
        Cli.Result r = Cli.run("sql", Cli.example(script), "--mode", "compare", "--max-rows", "1", "--require-native");
        assertEquals(0, r.code(), r.toString());
        assertTrue(r.out().strip().endsWith("IDENTICAL"), r.toString());
        assertEquals(queries, r.count("IDENTICAL, row for row"), r.toString());
        long[] n = r.nativeCount();
        assertEquals(candidates, n[1], r.toString());
        assertEquals(n[1], n[0], "every candidate node ran natively:\n" + r);
        assertTrue(n[2] >= n[0], r.toString());
        return r;
    }

    @Test
    void everyRowOfTheGroupByTable() {
        compareAllNative("group-by-types.sql", 10, 11);
    }

    @Test
    void groupByShapes() {
        compareAllNative("group-by-shapes.sql", 7, 9);
    }

    @Test
    void nexmarkExample() {
        Cli.Result r = compareAllNative("nexmark-groupby.sql", 2, 3);
        // each query prints its plan with the node's EXPLAIN term, and what opened for it
        assertTrue(r.out().contains("ferry=[native]"), r.toString());
        assertEquals(3, r.count("[1 subtask opened]"), r.toString());
        // times are labelled as single runs, not a comparison
        assertTrue(r.out().contains("not a speed comparison"), r.toString());
    }

    /**
     * The two-phase mini-batch GROUP BY (Flink's default AUTO strategy): both halves of both
     * queries run natively, at parallelism 1 and at 3, where the exchange routes partial rows
     * across subtasks and the global merges them in arrival order.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 3})
    void twoPhaseGroupBy(int parallelism) {
        Cli.Result r = Cli.run("sql", Cli.example("two-phase-groupby.sql"), "--mode", "compare", "--max-rows", "0",
                "--require-native", "--parallelism", Integer.toString(parallelism));
        assertEquals(0, r.code(), r.toString());
        assertTrue(r.out().strip().endsWith("IDENTICAL"), r.toString());
        long[] n = r.nativeCount();
        assertEquals(6, n[1], r.toString());
        assertEquals(6, n[0], r.toString());
        assertEquals(6L * parallelism, n[2], r.toString());
        assertEquals(3, r.count("  native    LocalGroupAggregate("), r.toString());
        assertEquals(3, r.count("  native    GlobalGroupAggregate("), r.toString());
        assertEquals(1, r.count("; native 2 of 2\n"), r.toString());
        assertEquals(1, r.count("; native 4 of 4\n"), r.toString());
    }

    /**
     * COUNT(DISTINCT) under mini-batch (AUTO: two-phase): the value sets cross in the partial
     * rows and both halves of both queries run natively, identical to Flink at parallelism 1 and
     * at 3.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 3})
    void twoPhaseDistinct(int parallelism) {
        Cli.Result r = Cli.run("sql", Cli.example("two-phase-distinct.sql"), "--mode", "compare", "--max-rows", "0",
                "--require-native", "--parallelism", Integer.toString(parallelism));
        assertEquals(0, r.code(), r.toString());
        assertTrue(r.out().strip().endsWith("IDENTICAL"), r.toString());
        long[] n = r.nativeCount();
        assertEquals(6, n[1], r.toString());
        assertEquals(6, n[0], r.toString());
        assertEquals(6L * parallelism, n[2], r.toString());
        assertEquals(3, r.count("  native    LocalGroupAggregate("), r.toString());
        assertEquals(3, r.count("  native    GlobalGroupAggregate("), r.toString());
    }

    /**
     * Split DISTINCT under mini-batch: local, incremental and global aggregates all run natively,
     * over insert-only and over updating input, identical to Flink at parallelism 1 and at 3.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 3})
    void splitDistinct(int parallelism) {
        Cli.Result r = Cli.run("sql", Cli.example("split-distinct.sql"), "--mode", "compare", "--max-rows", "0",
                "--require-native", "--parallelism", Integer.toString(parallelism));
        assertEquals(0, r.code(), r.toString());
        assertTrue(r.out().strip().endsWith("IDENTICAL"), r.toString());
        long[] n = r.nativeCount();
        assertEquals(8, n[1], r.toString());
        assertEquals(8, n[0], r.toString());
        assertEquals(8L * parallelism, n[2], r.toString());
        assertEquals(2, r.count("  native    IncrementalGroupAggregate("), r.toString());
        assertEquals(1, r.count("; native 3 of 3\n"), r.toString());
        assertEquals(1, r.count("; native 5 of 5\n"), r.toString());
    }

    /**
     * STDDEV/VAR, LISTAGG, MIN/MAX over BOOLEAN and TIMESTAMP(6) with a BINARY key, SINGLE_VALUE
     * in two phases, FIRST_VALUE/LAST_VALUE in one: all native, identical.
     */
    @Test
    void moreAggregates() {
        Cli.Result r = Cli.run("sql", Cli.example("more-aggregates.sql"), "--mode", "compare", "--max-rows", "0",
                "--require-native");
        assertEquals(0, r.code(), r.toString());
        assertTrue(r.out().strip().endsWith("IDENTICAL"), r.toString());
        long[] n = r.nativeCount();
        assertEquals(16, n[1], r.toString());
        assertEquals(16, n[0], r.toString());
        assertEquals(3, r.count("; native 2 of 2\n"), r.toString());
        assertEquals(1, r.count("; native 3 of 3\n"), r.toString()); // FIRST_VALUE/LAST_VALUE with retraction
        assertEquals(1, r.count("; native 6 of 6\n"), r.toString());
        assertEquals(1, r.count("  native    LocalGroupAggregate(groupBy=[k0], select=[k0, SINGLE_VALUE_RETRACT(s) AS (value$0, count$1)"),
                r.toString());
    }

    /**
     * Idle-state TTL next to MapView state (DISTINCT, MIN/MAX with retraction): every GROUP BY
     * runs natively and its changelog equals Flink's row for row (the retention outlasts the run).
     */
    @Test
    void idleStateTtlWithMapViews() {
        Cli.Result r = Cli.run("sql", Cli.example("idle-state-ttl.sql"), "--mode", "compare", "--max-rows", "0",
                "--require-native");
        assertEquals(0, r.code(), r.toString());
        assertTrue(r.out().strip().endsWith("IDENTICAL"), r.toString());
        assertEquals(2, r.count("changelog rows: equal row for row;"), r.toString());
        long[] n = r.nativeCount();
        assertEquals(3, n[1], r.toString());
        assertEquals(3, n[0], r.toString());
    }

    /**
     * Async state on with a 1 ms retention: Ferry's operators replace Flink's async-state GROUP BYs
     * (three nodes) and, as Flink's on the HashMap backend, keep every key: the changelogs equal
     * Flink's row for row.
     */
    @Test
    void asyncState() {
        Cli.Result r = Cli.run("sql", Cli.example("async-state.sql"), "--mode", "compare", "--max-rows", "0",
                "--require-native");
        assertEquals(0, r.code(), r.toString());
        assertTrue(r.out().strip().endsWith("IDENTICAL"), r.toString());
        assertEquals(2, r.count("changelog rows: equal row for row;"), r.toString());
        long[] n = r.nativeCount();
        assertEquals(3, n[1], r.toString());
        assertEquals(3, n[0], r.toString());
    }

    /**
     * Interval joins: three row-time joins with residual conditions, two with the EARLY_FIRE hint,
     * one on TIMESTAMP_LTZ row times and one on processing time all run natively and produce what
     * Flink's produce (a join's inputs interleave by arrival, so compare checks the multiset; early
     * fire and processing time, the final result).
     */
    @Test
    void intervalJoins() {
        Cli.Result r = Cli.run("sql", Cli.example("interval-join.sql"), "--mode", "compare", "--max-rows", "0",
                "--require-native");
        assertEquals(0, r.code(), r.toString());
        assertTrue(r.out().strip().endsWith("IDENTICAL"), r.toString());
        assertEquals(4, r.count("): IDENTICAL as a multiset and as the final result"), r.toString());
        assertEquals(1, r.count("): IDENTICAL final result (result not deterministic)"), r.toString());
        // the EARLY_FIRE joins: the stock side runs them without the hint, and their changelogs
        // (pads, then corrections) leave Flink's result
        assertEquals(2, r.count("stock Flink side: without the EARLY_FIRE hint"), r.toString());
        assertEquals(2, r.count("): IDENTICAL final result (intermediate updates not deterministic)"), r.toString());
        assertEquals(2, r.count("earlyFireDelay=["), r.toString());
        long[] n = r.nativeCount();
        assertEquals(7, n[1], r.toString());
        assertEquals(7, n[0], r.toString());
        assertEquals(7, r.count("  native    IntervalJoin("), r.toString());
    }

    /**
     * Regular joins, the preview kind switched on by the script's SET: inner, left with a residual
     * condition, full on an IS NOT DISTINCT FROM key, right over two GROUP BYs, a SEMI (IN) and an
     * ANTI (NOT EXISTS) join, then an inner and a full join under mini-batch, all native; the inner
     * and SEMI joins of insert-only inputs as a multiset, the others as their final result.
     */
    @Test
    void regularJoins() {
        Cli.Result r = Cli.run("sql", Cli.example("regular-join.sql"), "--mode", "compare", "--max-rows", "0",
                "--require-native");
        assertEquals(0, r.code(), r.toString());
        assertTrue(r.out().strip().endsWith("IDENTICAL"), r.toString());
        // the inner join and the SEMI join of insert-only inputs; the rest, mini-batch joins too, by final result
        assertEquals(2, r.count("): IDENTICAL as a multiset and as the final result"), r.toString());
        assertEquals(6, r.count("): IDENTICAL final result (intermediate updates not deterministic)"), r.toString());
        long[] n = r.nativeCount();
        assertEquals(10, n[1], r.toString());
        assertEquals(10, n[0], r.toString());
        assertEquals(8, r.count("  native    Join("), r.toString());
        assertEquals(2, r.count("miniBatch=[true], ferry=[native])"), r.toString());
        assertEquals(1, r.count("  native    Join(joinType=[LeftSemiJoin]"), r.toString());
        assertEquals(1, r.count("  native    Join(joinType=[LeftAntiJoin]"), r.toString());
    }

    /** The stock side's SQL: EARLY_FIRE hints removed, other hints kept. */
    @Test
    void stockSideDropsOnlyEarlyFire() {
        assertEquals("SELECT  a FROM t", SqlRun.withoutEarlyFire("SELECT /*+ EARLY_FIRE('delay'='5s') */ a FROM t"));
        assertEquals("SELECT /*+ STATE_TTL('t'='1d') */ a FROM t",
                SqlRun.withoutEarlyFire("SELECT /*+ early_fire('delay'='5s', 'time-mode'='proctime'), STATE_TTL('t'='1d') */ a FROM t"));
        assertEquals("SELECT /*+ STATE_TTL('t'='1d') */ a FROM t",
                SqlRun.withoutEarlyFire("SELECT /*+ STATE_TTL('t'='1d'), EARLY_FIRE('delay'='5s') */ a FROM t"));
        assertEquals("SELECT a /* EARLY_FIRE('delay'='5s') */ FROM t",
                SqlRun.withoutEarlyFire("SELECT a /* EARLY_FIRE('delay'='5s') */ FROM t"));
    }

    /**
     * Window joins: TUMBLE (inner), HOP (full, residual condition) and CUMULATE (anti) windows all
     * run natively and produce what Flink's produce.
     */
    @Test
    void windowJoins() {
        Cli.Result r = Cli.run("sql", Cli.example("window-join.sql"), "--mode", "compare", "--max-rows", "0",
                "--require-native");
        assertEquals(0, r.code(), r.toString());
        assertTrue(r.out().strip().endsWith("IDENTICAL"), r.toString());
        long[] n = r.nativeCount();
        assertEquals(3, n[1], r.toString());
        assertEquals(3, n[0], r.toString());
        assertEquals(3, r.count("  native    WindowJoin("), r.toString());
    }

    /**
     * Deduplications, every form Flink runs as StreamExecDeduplicate (row and processing time,
     * first and last row, no key, mini-batch with and without compaction): all native, identical
     * to Flink's row for row at parallelism 1 (the processing-time mini-batches as the final
     * result, which the plan guarantees), and as the final result at 4, where each key's rows
     * still come from one source subtask.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 4})
    void deduplication(int parallelism) {
        Cli.Result r = Cli.run("sql", Cli.example("deduplicate.sql"), "--mode", "compare", "--max-rows", "0",
                "--require-native", "--parallelism", Integer.toString(parallelism));
        assertEquals(0, r.code(), r.toString());
        assertTrue(r.out().strip().endsWith("IDENTICAL"), r.toString());
        long[] n = r.nativeCount();
        assertEquals(10, n[1], r.toString());
        assertEquals(10, n[0], r.toString());
        assertEquals(parallelism == 1 ? 10 : 9 * 4 + 1, n[2], r.toString()); // no key: one subtask
        assertEquals(10, r.count("  native    Deduplicate(keep=["), r.toString());
        if (parallelism == 1) {
            assertEquals(8, r.count("changelog rows, equal row for row (the plan is deterministic)"), r.toString());
        }
    }

    /**
     * Top-N, every function Flink's StreamExecRank runs (the top N with and without the rank
     * number, offsets, several sort keys with NULLs, the top 1 over an insert-only and over an
     * upsert input, the updatable and the retracting Top-N, the first N by processing time, no
     * key): all native, identical to Flink's row for row at parallelism 1, and as the final result
     * at 4.
     */
    @ParameterizedTest
    @ValueSource(ints = {1, 4})
    void topN(int parallelism) {
        Cli.Result r = Cli.run("sql", Cli.example("top-n.sql"), "--mode", "compare", "--max-rows", "0",
                "--require-native", "--parallelism", Integer.toString(parallelism));
        assertEquals(0, r.code(), r.toString());
        assertTrue(r.out().strip().endsWith("IDENTICAL"), r.toString());
        long[] n = r.nativeCount();
        assertEquals(14, n[1], r.toString()); // 11 ranks and the GROUP BYs under three
        assertEquals(14, n[0], r.toString());
        assertEquals(parallelism == 1 ? 14 : 13 * 4 + 1, n[2], r.toString()); // no key: one subtask
        assertEquals(11, r.count("  native    Rank(strategy=["), r.toString());
        if (parallelism == 1) {
            assertEquals(11, r.count("changelog rows, equal row for row (the plan is deterministic)"), r.toString());
        }
    }

    /**
     * {@code SET 'state.backend.type'} in a script picks RocksDB and ForSt as in Flink's SQL client
     * (the command's class path carries both backends): Ferry's GROUP BY, Top-N and deduplication
     * run natively on them and produce what Flink's produce there.
     */
    @Test
    void stateBackends() {
        Cli.Result r = Cli.run("sql", Cli.example("state-backends.sql"), "--mode", "compare", "--max-rows", "0",
                "--require-native");
        assertEquals(0, r.code(), r.toString());
        assertTrue(r.out().strip().endsWith("IDENTICAL"), r.toString());
        assertEquals(4, r.count("changelog rows, equal row for row (the plan is deterministic)"), r.toString());
        long[] n = r.nativeCount();
        assertEquals(4, n[1], r.toString());
        assertEquals(4, n[0], r.toString());
    }

    /**
     * A GROUP BY Ferry leaves to Flink (COLLECT and others) still compares identical, but
     * --require-native fails the run with exit code 3 and says which node fell back and why.
     */
    @Test
    void requireNativeFailsOnAFallback() {
        Cli.Result r = Cli.run("sql", Cli.example("group-by-fallbacks.sql"), "--mode", "compare", "--max-rows", "0",
                "--require-native");
        assertEquals(FerryCli.NOT_NATIVE, r.code(), r.toString());
        assertTrue(r.out().strip().endsWith("IDENTICAL"), r.toString());
        long[] n = r.nativeCount();
        assertEquals(2, n[0], r.toString());
        assertEquals(5, n[1], r.toString());
        assertTrue(r.out().contains("NOT NATIVE (--require-native):"), r.toString());
        assertTrue(r.out().contains("GroupAggregate: aggs[0]: aggregate function COLLECT: not native yet"), r.toString());
    }
}
