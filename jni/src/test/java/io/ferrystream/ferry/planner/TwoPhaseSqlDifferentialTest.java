package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.groupaggregate.GlobalGroupAggregateSpec;
import io.ferrystream.ferry.kinds.groupaggregate.IncrementalGroupAggregateSpec;
import io.ferrystream.ferry.kinds.groupaggregate.LocalGroupAggregateSpec;
import io.ferrystream.ferry.operators.AbstractNativeOperator;

import static io.ferrystream.ferry.planner.ParallelSqlDifferentialTest.materialize;
import static io.ferrystream.ferry.planner.PlannerTests.twoPhaseTerms;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableRuntimeException;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.CloseableIterator;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.math.BigDecimal;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Two-phase GROUP BY (mini-batch on, {@code table.optimizer.agg-phase-strategy} AUTO or
 * TWO_PHASE) on a MiniCluster, Ferry off against Ferry on: EXPLAIN marks both halves native, the
 * job opens Ferry's local and global operators, and the results equal Flink's. At parallelism 1
 * the whole changelog must be identical row for row: one local subtask, one channel, bundles cut
 * only by {@code table.exec.mini-batch.size} (the mini-batch interval is an hour) and the end of
 * input, keys emitted in Flink's HashMap order. At parallelism 3 the rows are dealt round-robin
 * to three local subtasks whose partial rows interleave at the global aggregate in no fixed
 * order, which changes where the global's bundles end and so its intermediate updates, in Flink
 * as in Ferry: the final results must be equal.
 */
class TwoPhaseSqlDifferentialTest {
    @RegisterExtension
    static final MiniClusterExtension CLUSTER = MiniClusters.twoByTwo();

    static final int ROWS = 10000;

    static final String[] NAMES = {"k", "i", "b", "d", "f", "s", "m", "dt", "ts"};

    static final TypeInformation<?>[] TYPES = {
        Types.LONG, Types.INT, Types.LONG, Types.DOUBLE, Types.FLOAT, Types.STRING, Types.BIG_DEC, Types.LOCAL_DATE,
        Types.LOCAL_DATE_TIME
    };

    /**
     * Deterministic rows; k, b, s and m have NULLs. DOUBLE and FLOAT values are multiples of 0.25
     * whose sums stay exact, so the final results do not depend on the order in which the global
     * aggregate merges partial sums (it does not at parallelism 1, where the changelog of a sum
     * with rounding is compared row for row).
     */
    static List<Row> rows() {
        List<Row> rows = new ArrayList<>();
        for (long id = 0; id < ROWS; id++) {
            rows.add(Row.of(
                    id % 29 == 3 ? null : (id * 7919) % 61,
                    (int) ((id * 31) % 20011) - 10000,
                    id % 7 == 1 ? null : id * 1000003,
                    ((id * 17) % 10007) / 4.0,
                    (float) ((id * 13) % 1001) / 4,
                    id % 11 == 5 ? null : (id % 3 == 0 ? "short" : "a longer string " + (id * 37) % 101),
                    id % 13 == 2 ? null : BigDecimal.valueOf((id * 7) % 200001 - 100000, 2),
                    LocalDate.ofEpochDay((id * 53) % 40000 - 20000),
                    LocalDateTime.of(2000, 1, 1, 0, 0).plusSeconds((id * 104729) % 900_000_000)));
        }
        return rows;
    }

    /** The view the queries read: DECIMAL(10, 2) and TIMESTAMP(3) as SQL declares them. */
    static final String VIEW =
            "CREATE TEMPORARY VIEW V AS SELECT k, i, b, d, f, s, CAST(m AS DECIMAL(10, 2)) AS m, dt,"
                    + " CAST(ts AS TIMESTAMP(3)) AS ts FROM T";

    /** Every native function over several types, FILTER on two, insert-only input. */
    static final String INSERT_ONLY =
            "SELECT k, COUNT(*), COUNT(b), SUM(i), SUM(b), MIN(b), MAX(d), AVG(i), AVG(d), SUM(f), MIN(f), SUM(m), AVG(m),"
                    + " MAX(m), MIN(s), MAX(s), COUNT(s), MIN(dt), MAX(ts), COUNT(*) FILTER (WHERE i > 0),"
                    + " SUM(d) FILTER (WHERE i < 0) FROM V GROUP BY k";

    /** The inner GROUP BY's updates are the outer one's retracting input (Flink inserts count1). */
    static final String INNER = "SELECT k, MAX(i) AS top, SUM(b) AS sb, SUM(m) AS sm, COUNT(*) / 40 AS c FROM V GROUP BY k";

    static final String RETRACTING =
            "SELECT c, SUM(top), AVG(top), COUNT(sb), SUM(sb), SUM(sm), AVG(sm) FROM (" + INNER + ") GROUP BY c";

    /**
     * Small bundles for the two levels of RETRACTING: each level folds a bundle into at most one
     * row per key, so with large ones the outer aggregate would see few changes.
     */
    static final Map<String, String> SMALL_BUNDLES = Map.of("table.exec.mini-batch.size", "10");

    /** The outer MIN/MAX take retraction: a nested row holding a MapView in the partial row. */
    static final String RETRACTING_MIN_MAX = "SELECT c, MIN(top), MAX(sb), SUM(top) FROM (" + INNER + ") GROUP BY c";

    /**
     * DISTINCT calls on insert-only input: maps shared by several calls (a bitmask per value),
     * FILTER, NULL values, every key type of the view that an order-free call reads.
     */
    static final String DISTINCT =
            "SELECT k, COUNT(DISTINCT i), SUM(DISTINCT i) FILTER (WHERE b > 0), SUM(DISTINCT b), COUNT(DISTINCT s),"
                    + " COUNT(DISTINCT s) FILTER (WHERE i > 0), MAX(DISTINCT s), COUNT(DISTINCT d), COUNT(DISTINCT f),"
                    + " MIN(DISTINCT m), COUNT(DISTINCT dt), MAX(DISTINCT ts), SUM(b), MAX(d) FROM V GROUP BY k";

    /** DISTINCT calls over an updating input: counts per value, one call per map and two. */
    static final String RETRACTING_DISTINCT =
            "SELECT c, COUNT(DISTINCT top), SUM(DISTINCT top) FILTER (WHERE sb > 0), COUNT(DISTINCT sb), SUM(sb) FROM ("
                    + INNER + ") GROUP BY c";

    /** One query's run: its EXPLAIN terms, the native operators it opened, its changelog. */
    record Run(List<String> terms, List<String> exchanges, long localsOpened, long globalsOpened, long framesRead, List<Row> changelog) {}

    static Run run(boolean ferry, String query, String strategy, int parallelism, Map<String, String> extra) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(parallelism);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
        tEnv.getConfig().set("table.exec.resource.default-parallelism", Integer.toString(parallelism));
        tEnv.getConfig().set("table.exec.mini-batch.enabled", "true");
        tEnv.getConfig().set("table.exec.mini-batch.allow-latency", "1 h");
        tEnv.getConfig().set("table.exec.mini-batch.size", "100");
        tEnv.getConfig().set("table.optimizer.agg-phase-strategy", strategy);
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        extra.forEach((k, v) -> tEnv.getConfig().set(k, v));
        Ferry.install(tEnv);
        DataStream<Row> source = env.fromData(rows(), Types.ROW_NAMED(NAMES, TYPES));
        if (parallelism > 1) {
            // rows dealt round-robin to `parallelism` local aggregates
            source = source.rebalance().map(r -> r).returns(Types.ROW_NAMED(NAMES, TYPES)).setParallelism(parallelism);
        }
        tEnv.createTemporaryView("T", tEnv.fromDataStream(source));
        tEnv.executeSql(VIEW);
        String plan = PlannerTests.physicalPlan(tEnv.explainSql(query));
        List<String> terms = twoPhaseTerms(plan);
        long locals = Ferry.nativeOperatorsOpened(LocalGroupAggregateSpec.KIND);
        long globals = Ferry.nativeOperatorsOpened(GlobalGroupAggregateSpec.KIND);
        long frames = AbstractNativeOperator.framesRead();
        List<Row> rows = new ArrayList<>();
        try (CloseableIterator<Row> it = tEnv.executeSql(query).collect()) {
            it.forEachRemaining(rows::add);
        }
        return new Run(
                terms,
                PlannerTests.exchangeTerms(plan),
                Ferry.nativeOperatorsOpened(LocalGroupAggregateSpec.KIND) - locals,
                Ferry.nativeOperatorsOpened(GlobalGroupAggregateSpec.KIND) - globals,
                AbstractNativeOperator.framesRead() - frames,
                rows);
    }

    static Run run(boolean ferry, String query, String strategy, int parallelism) throws Exception {
        return run(ferry, query, strategy, parallelism, Map.of());
    }

    /**
     * Ferry's run against Flink's: at parallelism 1 the changelogs are identical row for row, at
     * any parallelism the results they materialize to; Flink's changelog must hold updates.
     */
    static void assertSameResults(Run stock, Run ferry, int parallelism, String what) {
        Map<RowKind, Integer> kinds = new java.util.TreeMap<>();
        stock.changelog().forEach(r -> kinds.merge(r.getKind(), 1, Integer::sum));
        assertTrue(kinds.containsKey(RowKind.UPDATE_AFTER), what + ": Flink's changelog has no updates: " + kinds);
        assertSameRows(stock, ferry, parallelism, what);
    }

    /** {@link #assertSameResults} for a changelog that need not update (a GROUP BY without calls). */
    static void assertSameRows(Run stock, Run ferry, int parallelism, String what) {
        if (parallelism == 1) {
            List<Row> want = stock.changelog();
            List<Row> got = ferry.changelog();
            for (int i = 0; i < Math.min(want.size(), got.size()); i++) {
                assertEquals(want.get(i).toString(), got.get(i).toString(), what + ": changelog row " + i);
            }
            assertEquals(want.size(), got.size(), what + ": changelog length");
        }
        Map<String, Integer> table = materialize(stock.changelog());
        assertFalse(table.isEmpty(), what + ": empty result");
        assertEquals(table, materialize(ferry.changelog()), what + ": final result");
    }

    @ParameterizedTest(name = "{0}, parallelism {1}")
    @CsvSource({"AUTO, 1", "TWO_PHASE, 1", "AUTO, 3", "TWO_PHASE, 3"})
    void insertOnly(String strategy, int parallelism) throws Exception {
        Run stock = run(false, INSERT_ONLY, strategy, parallelism);
        Run ferry = run(true, INSERT_ONLY, strategy, parallelism);
        assertEquals(List.of("Global: native", "Local: native"), ferry.terms());
        assertEquals(List.of("columnar"), ferry.exchanges());
        assertEquals(parallelism, ferry.localsOpened(), "native local aggregates opened");
        assertEquals(parallelism, ferry.globalsOpened(), "native global aggregates opened");
        assertTrue(ferry.framesRead() >= parallelism * 10, "frames read: " + ferry.framesRead());
        assertEquals(0, stock.localsOpened() + stock.globalsOpened() + stock.framesRead());
        assertSameResults(stock, ferry, parallelism, INSERT_ONLY);
    }

    /**
     * The columnar exchange switched off, or impossible under unaligned checkpoints: Flink's row
     * exchange between the native halves, EXPLAIN saying why, the same results.
     */
    @ParameterizedTest(name = "{0}, parallelism {1}")
    @CsvSource({"ferry.exchange.columnar.enabled, false, 3", "execution.checkpointing.unaligned.enabled, true, 1"})
    void rowExchange(String option, String value, int parallelism) throws Exception {
        Run stock = run(false, INSERT_ONLY, "TWO_PHASE", parallelism);
        Run ferry = run(true, INSERT_ONLY, "TWO_PHASE", parallelism, Map.of(option, value));
        assertEquals(List.of("rows: " + (option.startsWith("ferry") ? "disabled by ferry.exchange.columnar.enabled=false"
                : "unaligned checkpoints (a frame holds many key groups, which recovering in-flight data cannot split)")),
                ferry.exchanges());
        assertEquals(parallelism, ferry.globalsOpened(), "native global aggregates opened");
        assertEquals(0, ferry.framesRead());
        assertSameResults(stock, ferry, parallelism, INSERT_ONLY);
    }

    @ParameterizedTest(name = "{0}, parallelism {1}")
    @CsvSource({"AUTO, 1", "TWO_PHASE, 1", "AUTO, 3", "TWO_PHASE, 3"})
    void retractingInput(String strategy, int parallelism) throws Exception {
        Run stock = run(false, RETRACTING, strategy, parallelism, SMALL_BUNDLES);
        Run ferry = run(true, RETRACTING, strategy, parallelism, SMALL_BUNDLES);
        assertEquals(List.of("Global: native", "Local: native", "Global: native", "Local: native"), ferry.terms());
        assertEquals(List.of("columnar", "columnar"), ferry.exchanges());
        assertTrue(ferry.framesRead() > 0, "frames read: " + ferry.framesRead());
        assertEquals(2 * parallelism, ferry.localsOpened(), "native local aggregates opened");
        assertEquals(2 * parallelism, ferry.globalsOpened(), "native global aggregates opened");
        assertSameResults(stock, ferry, parallelism, RETRACTING);
    }

    /**
     * A GROUP BY without aggregate calls (and SELECT DISTINCT, which Flink plans as one): the
     * partial rows are the keys alone, and the global aggregate has no calls.
     */
    @ParameterizedTest(name = "parallelism {0}")
    @CsvSource({"1", "3"})
    void noAggregateCalls(int parallelism) throws Exception {
        for (String query : List.of("SELECT k, s FROM V GROUP BY k, s", "SELECT DISTINCT b % 1000, dt FROM V")) {
            Run stock = run(false, query, "TWO_PHASE", parallelism);
            Run ferry = run(true, query, "TWO_PHASE", parallelism);
            assertEquals(List.of("Global: native", "Local: native"), ferry.terms(), query);
            assertEquals(parallelism, ferry.globalsOpened(), query);
            assertTrue(stock.changelog().size() > 100, query + ": " + stock.changelog().size() + " rows");
            assertSameRows(stock, ferry, parallelism, query);
        }
    }

    /**
     * A global aggregation (no grouping fields): every local aggregate emits one partial row per
     * bundle with an empty key, and the single global subtask Flink plans merges them.
     */
    @ParameterizedTest(name = "parallelism {0}")
    @CsvSource({"1", "3"})
    void noGroupingFields(int parallelism) throws Exception {
        String query = "SELECT COUNT(*), COUNT(b), SUM(i), MIN(s), MAX(d), AVG(m), SUM(f) FILTER (WHERE i > 0) FROM V";
        Run stock = run(false, query, "TWO_PHASE", parallelism, SMALL_BUNDLES);
        Run ferry = run(true, query, "TWO_PHASE", parallelism, SMALL_BUNDLES);
        assertEquals(List.of("Global: native", "Local: native"), ferry.terms());
        assertEquals(parallelism, ferry.localsOpened());
        assertEquals(1, ferry.globalsOpened());
        assertSameResults(stock, ferry, parallelism, query);
    }

    /**
     * STDDEV/VAR's $WELFORD_M2 accumulator (n, mean, m2) crosses between the halves and the global
     * merges it with Flink's floating-point steps, on insert-only and retracting input. At
     * parallelism 1 only: the merge order of several locals' partials changes the last bits.
     */
    @Test
    void varianceFamily() throws Exception {
        String inner = "SELECT k, MAX(i) AS top, SUM(b) AS sb, COUNT(*) / 40 AS c FROM V GROUP BY k";
        for (String query : List.of(
                "SELECT k, STDDEV_POP(i), STDDEV_SAMP(f), VAR_POP(b), VAR_SAMP(d), COUNT(*) FROM V GROUP BY k",
                "SELECT c, STDDEV_SAMP(top), VAR_POP(sb) FROM (" + inner + ") GROUP BY c")) {
            Run stock = run(false, query, "TWO_PHASE", 1, SMALL_BUNDLES);
            Run ferry = run(true, query, "TWO_PHASE", 1, SMALL_BUNDLES);
            assertTrue(ferry.terms().stream().allMatch(t -> t.endsWith(": native")), query + ": " + ferry.terms());
            assertTrue(ferry.globalsOpened() >= 1, query);
            assertSameResults(stock, ferry, 1, query);
        }
    }

    /**
     * LISTAGG's partial state (accDelimiter, acc) crosses between the halves: the global joins a
     * partial with the partial's own delimiter; LISTAGG(DISTINCT) stays
     * Flink's (its global concatenates in a HashMap's order). At parallelism 1 only: the
     * concatenation follows the arrival order, which several local subtasks make nondeterministic.
     */
    @Test
    void listAgg() throws Exception {
        int parallelism = 1;
        String query = "SELECT k, LISTAGG(s), LISTAGG(CAST(i AS STRING), '-'), LISTAGG(s, '') FILTER (WHERE i > 0), COUNT(*)"
                + " FROM V GROUP BY k";
        Run stock = run(false, query, "TWO_PHASE", parallelism, SMALL_BUNDLES);
        Run ferry = run(true, query, "TWO_PHASE", parallelism, SMALL_BUNDLES);
        assertEquals(List.of("Global: native", "Local: native"), ferry.terms());
        assertEquals(parallelism, ferry.globalsOpened());
        assertSameResults(stock, ferry, parallelism, query);
        String distinct = "SELECT k, LISTAGG(DISTINCT s) FROM V GROUP BY k";
        String reason = "aggs[0]: LISTAGG(DISTINCT): the global aggregate concatenates the values in a java.util.HashMap's"
                + " order: not native yet";
        assertEquals(List.of("Global: " + reason, "Local: " + reason), run(true, distinct, "TWO_PHASE", 1).terms());
    }

    /**
     * TIMESTAMP_LTZ crosses as TIMESTAMP in partial rows too: as a key, a MIN/MAX argument, a
     * DISTINCT map's key, and under retraction (the accumulator's multiset), in a session time
     * zone far from UTC.
     */
    @ParameterizedTest(name = "parallelism {0}")
    @CsvSource({"1", "3"})
    void timestampLtz(int parallelism) throws Exception {
        String ltz = "(SELECT k, i, CAST(ts AS TIMESTAMP_LTZ(3)) AS lt FROM V)";
        String inner = "SELECT k, MAX(lt) AS top, COUNT(*) / 40 AS c FROM " + ltz + " GROUP BY k";
        Map<String, String> zone = new java.util.HashMap<>(SMALL_BUNDLES);
        zone.put("table.local-time-zone", "America/St_Johns");
        for (String query : List.of(
                "SELECT k, MIN(lt), MAX(lt), COUNT(DISTINCT lt), COUNT(lt) FROM " + ltz + " GROUP BY k",
                "SELECT c, MIN(top), MAX(top), COUNT(DISTINCT top) FROM (" + inner + ") GROUP BY c")) {
            Run stock = run(false, query, "TWO_PHASE", parallelism, zone);
            Run ferry = run(true, query, "TWO_PHASE", parallelism, zone);
            assertTrue(ferry.terms().stream().allMatch(t -> t.endsWith(": native")), query + ": " + ferry.terms());
            assertTrue(ferry.globalsOpened() >= parallelism, query);
            assertSameResults(stock, ferry, parallelism, query);
        }
    }

    /**
     * MIN/MAX with retraction: their accumulators (extreme, mapSize, value counts) cross in the
     * partial rows, both halves of both levels native.
     */
    @ParameterizedTest(name = "{0}, parallelism {1}")
    @CsvSource({"AUTO, 1", "TWO_PHASE, 1", "AUTO, 3", "TWO_PHASE, 3"})
    void retractingMinMax(String strategy, int parallelism) throws Exception {
        Run stock = run(false, RETRACTING_MIN_MAX, strategy, parallelism, SMALL_BUNDLES);
        Run ferry = run(true, RETRACTING_MIN_MAX, strategy, parallelism, SMALL_BUNDLES);
        assertEquals(List.of("Global: native", "Local: native", "Global: native", "Local: native"), ferry.terms());
        assertEquals(List.of("columnar", "columnar"), ferry.exchanges());
        assertTrue(ferry.framesRead() > 0, "frames read: " + ferry.framesRead());
        assertEquals(2 * parallelism, ferry.localsOpened());
        assertEquals(2 * parallelism, ferry.globalsOpened());
        assertSameResults(stock, ferry, parallelism, RETRACTING_MIN_MAX);
    }

    /**
     * A DISTINCT call whose global result depends on a HashMap's order keeps both halves Flink's,
     * with the reason in EXPLAIN; with idle-state TTL both halves are native (the global's
     * MapViews expire per entry, as its value sets do).
     */
    @Test
    void mapViewPartialsFallBack() throws Exception {
        String query = "SELECT k, COUNT(DISTINCT i), SUM(DISTINCT d) FROM V GROUP BY k";
        Run stock = run(false, query, "TWO_PHASE", 1);
        Run ferry = run(true, query, "TWO_PHASE", 1);
        String order = "aggs[1]: SUM(DISTINCT) over DOUBLE: the global aggregate folds the values in a java.util.HashMap's order:"
                + " not native yet";
        assertEquals(List.of("Global: " + order, "Local: " + order), ferry.terms());
        assertEquals(0, ferry.localsOpened() + ferry.globalsOpened());
        assertSameResults(stock, ferry, 1, query);

        Map<String, String> ttl = Map.of("table.exec.state.ttl", "1 h");
        stock = run(false, DISTINCT, "TWO_PHASE", 3, ttl);
        ferry = run(true, DISTINCT, "TWO_PHASE", 3, ttl);
        assertEquals(List.of("Global: native", "Local: native"), ferry.terms());
        assertEquals(3, ferry.localsOpened());
        assertEquals(3, ferry.globalsOpened());
        assertSameResults(stock, ferry, 3, DISTINCT + " with TTL");
    }

    /**
     * DISTINCT calls: their maps cross between the halves in the partial rows, both halves
     * native, on insert-only input (bitmasks) and over an updating input (counts), Flink's
     * changelog row for row at parallelism 1.
     */
    @ParameterizedTest(name = "{0}, parallelism {1}")
    @CsvSource({"AUTO, 1", "TWO_PHASE, 1", "AUTO, 3", "TWO_PHASE, 3"})
    void distinct(String strategy, int parallelism) throws Exception {
        Run stock = run(false, DISTINCT, strategy, parallelism);
        Run ferry = run(true, DISTINCT, strategy, parallelism);
        assertEquals(List.of("Global: native", "Local: native"), ferry.terms());
        assertEquals(parallelism, ferry.localsOpened(), "native local aggregates opened");
        assertEquals(parallelism, ferry.globalsOpened(), "native global aggregates opened");
        assertSameResults(stock, ferry, parallelism, DISTINCT);

        stock = run(false, RETRACTING_DISTINCT, strategy, parallelism, SMALL_BUNDLES);
        ferry = run(true, RETRACTING_DISTINCT, strategy, parallelism, SMALL_BUNDLES);
        assertEquals(List.of("Global: native", "Local: native", "Global: native", "Local: native"), ferry.terms());
        assertEquals(List.of("columnar", "columnar"), ferry.exchanges());
        assertTrue(ferry.framesRead() > 0, "frames read: " + ferry.framesRead());
        assertEquals(2 * parallelism, ferry.localsOpened(), "native local aggregates opened");
        assertEquals(2 * parallelism, ferry.globalsOpened(), "native global aggregates opened");
        assertSameResults(stock, ferry, parallelism, RETRACTING_DISTINCT);
    }

    /**
     * Split DISTINCT ({@code table.optimizer.distinct-agg.split.enabled}): Flink plans Local →
     * IncrementalGroupAggregate → Global; Ferry runs all three, its incremental aggregate merging
     * the maps its local writes into the partial rows, its global the incremental one's rows; both
     * exchanges are columnar, the incremental reading the local's frames and writing its own,
     * routed by the final key, for the global.
     */
    @ParameterizedTest(name = "parallelism {0}")
    @CsvSource({"1", "3"})
    void splitDistinct(int parallelism) throws Exception {
        Map<String, String> split = Map.of("table.optimizer.distinct-agg.split.enabled", "true");
        String query = "SELECT k, COUNT(DISTINCT i), COUNT(DISTINCT s) FILTER (WHERE i > 0), COUNT(DISTINCT s),"
                + " SUM(DISTINCT b), COUNT(*), MAX(d), SUM(b) FROM V GROUP BY k";
        Run stock = run(false, query, "TWO_PHASE", parallelism, split);
        long incrementals = Ferry.nativeOperatorsOpened(IncrementalGroupAggregateSpec.KIND);
        long incrementalFrames = AbstractNativeOperator.framesRead(IncrementalGroupAggregateSpec.KIND);
        long globalFrames = AbstractNativeOperator.framesRead(GlobalGroupAggregateSpec.KIND);
        Run ferry = run(true, query, "TWO_PHASE", parallelism, split);
        assertEquals(List.of("Global: native", "Incremental: native", "Local: native"), ferry.terms());
        assertEquals(List.of("columnar", "columnar"), ferry.exchanges());
        assertTrue(AbstractNativeOperator.framesRead(IncrementalGroupAggregateSpec.KIND) - incrementalFrames >= parallelism,
                "frames the incremental aggregates read");
        assertTrue(AbstractNativeOperator.framesRead(GlobalGroupAggregateSpec.KIND) - globalFrames >= parallelism,
                "frames the global aggregates read");
        assertEquals(parallelism, ferry.localsOpened(), "native local aggregates opened");
        assertEquals(parallelism, Ferry.nativeOperatorsOpened(IncrementalGroupAggregateSpec.KIND) - incrementals,
                "native incremental aggregates opened");
        assertEquals(parallelism, ferry.globalsOpened(), "native global aggregates opened");
        assertSameResults(stock, ferry, parallelism, query);

        // over an updating input the final global counts records in the $SUM0 of partial counts
        Map<String, String> splitSmall = new HashMap<>(split);
        splitSmall.putAll(SMALL_BUNDLES);
        stock = run(false, RETRACTING_DISTINCT, "TWO_PHASE", parallelism, splitSmall);
        ferry = run(true, RETRACTING_DISTINCT, "TWO_PHASE", parallelism, splitSmall);
        assertEquals(List.of("Global: native", "Incremental: native", "Local: native", "Global: native", "Local: native"),
                ferry.terms());
        assertEquals(List.of("columnar", "columnar", "columnar"), ferry.exchanges());
        assertTrue(ferry.framesRead() > 0, "frames read: " + ferry.framesRead());

        // without grouping fields the incremental reads the local's frames (hashed by the bucket)
        // and writes rows to Flink's single-channel exchange
        String global = "SELECT COUNT(DISTINCT s), COUNT(DISTINCT i) FILTER (WHERE b > 0), SUM(b) FROM V";
        stock = run(false, global, "TWO_PHASE", parallelism, splitSmall);
        incrementalFrames = AbstractNativeOperator.framesRead(IncrementalGroupAggregateSpec.KIND);
        ferry = run(true, global, "TWO_PHASE", parallelism, splitSmall);
        assertEquals(List.of("Global: native", "Incremental: native", "Local: native"), ferry.terms());
        assertEquals(List.of("rows: a single-channel exchange (no grouping fields: one partial row per bundle)", "columnar"),
                ferry.exchanges());
        assertTrue(AbstractNativeOperator.framesRead(IncrementalGroupAggregateSpec.KIND) - incrementalFrames >= parallelism,
                "frames the incremental aggregates read");
        assertSameResults(stock, ferry, parallelism, global + " (split)");
        assertSameResults(stock, ferry, parallelism, RETRACTING_DISTINCT + " (split)");
    }

    /**
     * The view of {@link #newTypes}: BOOLEAN, TIMESTAMP(6) and TIMESTAMP(9) with digits below the
     * millisecond, BINARY and VARBINARY, NULLs in each (s and b have NULLs).
     */
    static final String NEW_TYPES_VIEW = "(SELECT k, i, CASE WHEN s IS NULL THEN CAST(NULL AS BOOLEAN) ELSE MOD(i, 3) = 0 END AS bo,"
            + " CAST(CONCAT(DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss'), '.', LPAD(CAST(MOD(b, 1000000) AS STRING), 6, '0'))"
            + " AS TIMESTAMP(6)) AS t6,"
            + " CAST(CONCAT(DATE_FORMAT(ts, 'yyyy-MM-dd HH:mm:ss'), '.', LPAD(CAST(MOD(b, 1000000000) AS STRING), 9, '0'))"
            + " AS TIMESTAMP(9)) AS t9,"
            + " CAST(s AS BYTES) AS kb, CAST(CAST(MOD(k, 5) AS STRING) AS BINARY(3)) AS b3 FROM V)";

    static final String NEW_TYPES_INNER = "SELECT k, MAX(bo) AS mb, MIN(t6) AS m6, MAX(t9) AS m9, COUNT(*) / 40 AS c FROM "
            + NEW_TYPES_VIEW + " GROUP BY k";

    /**
     * MIN/MAX over BOOLEAN, TIMESTAMP(6) and TIMESTAMP(9), BINARY/VARBINARY keys and COUNT over
     * BYTES in two phases, insert-only and over an updating input (the MIN/MAX multisets of
     * BOOLEAN and TIMESTAMP(9) values and a BYTES key cross in the partial rows): both halves of
     * every level native, Flink's changelog row for row at parallelism 1.
     */
    @ParameterizedTest(name = "{0}, parallelism {1}")
    @CsvSource({"TWO_PHASE, 1", "AUTO, 3"})
    void newTypes(String strategy, int parallelism) throws Exception {
        for (String query : List.of(
                "SELECT kb, b3, MIN(bo), MAX(bo), MIN(t6), MAX(t6), MIN(t9), MAX(t9), COUNT(kb), COUNT(*) FROM "
                        + NEW_TYPES_VIEW + " GROUP BY kb, b3",
                "SELECT c, MIN(mb), MAX(mb), MIN(m6), MAX(m6), MIN(m9), MAX(m9), COUNT(*) FROM (" + NEW_TYPES_INNER
                        + ") GROUP BY c",
                "SELECT CAST(CAST(c AS STRING) AS BYTES), COUNT(*), MAX(m9), MIN(mb) FROM (" + NEW_TYPES_INNER
                        + ") GROUP BY CAST(CAST(c AS STRING) AS BYTES)")) {
            Run stock = run(false, query, strategy, parallelism, SMALL_BUNDLES);
            Run ferry = run(true, query, strategy, parallelism, SMALL_BUNDLES);
            int levels = ferry.terms().size() / 2;
            assertEquals(levels == 1 ? List.of("Global: native", "Local: native")
                    : List.of("Global: native", "Local: native", "Global: native", "Local: native"), ferry.terms(), query);
            assertEquals(levels * parallelism, ferry.localsOpened(), query);
            assertEquals(levels * parallelism, ferry.globalsOpened(), query);
            assertSameResults(stock, ferry, parallelism, query);
        }
    }

    /**
     * SINGLE_VALUE in two phases: its (value, count) partial crosses between the halves and the
     * global merges it. Flink plans a scalar sub-query's aggregate in two phases only when the
     * query has mini-batch at all (a query of projections, filters and scans over sub-queries
     * skips it), so each sub-query sits under a GROUP BY. Keyed (a correlated sub-query with one
     * row per key), global (no grouping keys), over an updating input (the sub-query's rows are
     * retracted and inserted again as MAX changes), and with a second row per key, where both
     * fail with Flink's TableRuntimeException. The join's output interleaves its inputs by
     * timing: results are compared, not changelogs.
     */
    @ParameterizedTest(name = "parallelism {0}")
    @CsvSource({"1", "3"})
    void singleValue(int parallelism) throws Exception {
        String updating = "(SELECT k, MAX(i) AS top FROM V GROUP BY k)";
        for (String query : List.of(
                "SELECT x, COUNT(*) FROM (SELECT k, (SELECT w.s FROM V w WHERE w.b = V.k * 1000003) AS x FROM V) GROUP BY x",
                "SELECT x, MOD(i, 3), COUNT(*), SUM(i) FROM (SELECT i, (SELECT w.d FROM V w WHERE w.b = 1000003 * 600) AS x FROM V)"
                        + " GROUP BY x, MOD(i, 3)",
                "SELECT x, COUNT(*) FROM (SELECT k, (SELECT u.top FROM " + updating + " u WHERE u.k + 0 = V.k) AS x FROM V)"
                        + " GROUP BY x")) {
            Run stock = run(false, query, "TWO_PHASE", parallelism, SMALL_BUNDLES);
            Run ferry = run(true, query, "TWO_PHASE", parallelism, SMALL_BUNDLES);
            assertTrue(ferry.terms().size() >= 4 && ferry.terms().stream().allMatch(t -> t.endsWith(": native")),
                    query + ": " + ferry.terms());
            assertTrue(ferry.globalsOpened() >= 2, query);
            Map<String, Integer> table = materialize(stock.changelog());
            assertTrue(table.size() > 1, query + ": " + table);
            assertEquals(table, materialize(ferry.changelog()), query);
        }
        if (parallelism > 1) {
            // Once in CI the failed job at parallelism 3 kept MiniCluster slots for minutes and every
            // later parallel test of this class starved (NoResourceAvailableException): not yet
            // understood (a Ferry subtask slow to cancel after the failure?); the error is checked
            // at parallelism 1 until it is
            return;
        }
        String twoRows = "SELECT x, COUNT(*) FROM (SELECT k, (SELECT w.s FROM V w WHERE w.k = V.k) AS x FROM V) GROUP BY x";
        for (boolean ferry : new boolean[] {false, true}) {
            Exception e = assertThrows(Exception.class,
                    () -> run(ferry, twoRows, "TWO_PHASE", parallelism, SMALL_BUNDLES));
            Throwable t = e;
            while (t != null && !(t instanceof TableRuntimeException)) {
                t = t.getCause();
            }
            assertNotNull(t, "ferry " + ferry + ": no TableRuntimeException in " + e);
            assertEquals("SingleValueAggFunction received more than one element.", t.getMessage());
        }
    }

    /**
     * Either half alone native, the other Flink's: the partial rows cross Flink's exchange in
     * Flink's format both ways, so the changelog is still Flink's row for row.
     */
    @ParameterizedTest(name = "parallelism {0}")
    @CsvSource({"1", "3"})
    void halvesMix(int parallelism) throws Exception {
        Run stock = run(false, RETRACTING, "TWO_PHASE", parallelism, SMALL_BUNDLES);
        Map<String, String> noLocal = new HashMap<>(SMALL_BUNDLES);
        noLocal.put("ferry.local-group-aggregate.enabled", "false");
        Run globalOnly = run(true, RETRACTING, "TWO_PHASE", parallelism, noLocal);
        String localOff = "Local: disabled by ferry.local-group-aggregate.enabled=false";
        assertEquals(List.of("Global: native", localOff, "Global: native", localOff), globalOnly.terms());
        assertEquals(0, globalOnly.localsOpened());
        assertEquals(2 * parallelism, globalOnly.globalsOpened());
        assertSameResults(stock, globalOnly, parallelism, "native global only");

        Map<String, String> noGlobal = new HashMap<>(SMALL_BUNDLES);
        noGlobal.put("ferry.global-group-aggregate.enabled", "false");
        Run localOnly = run(true, RETRACTING, "TWO_PHASE", parallelism, noGlobal);
        String globalOff = "Global: disabled by ferry.global-group-aggregate.enabled=false";
        assertEquals(List.of(globalOff, "Local: native", globalOff, "Local: native"), localOnly.terms());
        assertEquals(2 * parallelism, localOnly.localsOpened());
        assertEquals(0, localOnly.globalsOpened());
        assertSameResults(stock, localOnly, parallelism, "native local only");
    }
}
