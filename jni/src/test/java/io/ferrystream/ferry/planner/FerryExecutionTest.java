package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.groupaggregate.FerryGroupAggregateOperator;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.flink.api.dag.Transformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.runtime.OperatorIDPair;
import org.apache.flink.runtime.jobgraph.JobGraph;
import org.apache.flink.runtime.jobgraph.JobVertex;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.operators.SimpleOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperatorFactory;
import org.apache.flink.streaming.api.transformations.OneInputTransformation;
import org.apache.flink.table.api.TableRuntimeException;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.api.bridge.java.internal.StreamTableEnvironmentImpl;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.CloseableIterator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Function;

/**
 * Queries run to completion on a MiniCluster at parallelism 1, once with Flink's operators
 * ({@code ferry.enabled=false}) and once with Ferry's: the changelogs, row kinds included, must be
 * identical, and the Ferry run must really have used {@link FerryGroupAggregateOperator}.
 */
class FerryExecutionTest {
    @RegisterExtension
    static final MiniClusterExtension CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(2)
                            .build());

    private static final int ROWS = 3000;
    private static final String PARALLELISM = "table.exec.resource.default-parallelism";

    /**
     * Deterministic rows of every native numeric type under a VARCHAR key, NULLs included. TINYINT
     * and SMALLINT sums wrap; INT sums overflow; FLOAT and DOUBLE values are fractional.
     */
    private static final String SOURCE_DDL =
            "CREATE TEMPORARY TABLE seq (id BIGINT) WITH ('connector' = 'datagen',"
                    + " 'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '" + (ROWS - 1) + "')";
    private static final String VIEW_DDL =
            "CREATE TEMPORARY VIEW T AS SELECT"
                    + " CASE WHEN MOD(id, 13) = 5 THEN CAST(NULL AS STRING)"
                    + "   ELSE CONCAT('key-', CAST(MOD(id * 7, 17) AS STRING)) END AS k,"
                    + " CASE WHEN MOD(id, 11) = 0 THEN CAST(NULL AS TINYINT)"
                    + "   ELSE CAST(MOD(id * 37, 251) - 125 AS TINYINT) END AS t,"
                    + " CASE WHEN MOD(id, 12) = 1 THEN CAST(NULL AS SMALLINT)"
                    + "   ELSE CAST(MOD(id * 1009, 60001) - 30000 AS SMALLINT) END AS s,"
                    + " CASE WHEN MOD(id, 14) = 2 THEN CAST(NULL AS INT)"
                    + "   ELSE CAST(MOD(id * 2654435761, 4000000001) - 2000000000 AS INT) END AS i,"
                    + " CASE WHEN MOD(id, 15) = 3 THEN CAST(NULL AS BIGINT)"
                    + "   ELSE id * 1000000007 * (1 - 2 * MOD(id, 2)) END AS b,"
                    + " CASE WHEN MOD(id, 16) = 4 THEN CAST(NULL AS FLOAT)"
                    + "   ELSE CAST(MOD(id * 31, 1000) AS FLOAT) / CAST(8 AS FLOAT) - CAST(60.3 AS FLOAT) END AS f,"
                    + " CASE WHEN MOD(id, 17) = 6 THEN CAST(NULL AS DOUBLE)"
                    + "   ELSE CAST(MOD(id * 17, 10007) AS DOUBLE) / 3.0 - 1000.1 END AS d"
                    + " FROM seq";

    /** Mini-batch with bundles of 37 rows that only size or the end of input closes. */
    private static final Map<String, String> MINI_BATCH = Map.of("table.exec.mini-batch.enabled", "true",
            "table.exec.mini-batch.allow-latency", "1 h", "table.exec.mini-batch.size", "37");

    /** {@link #MINI_BATCH} with Flink's one-phase aggregate. */
    private static final Map<String, String> ONE_PHASE_MINI_BATCH = with(MINI_BATCH, "table.optimizer.agg-phase-strategy", "ONE_PHASE");

    private static Map<String, String> with(Map<String, String> options, String key, String value) {
        Map<String, String> m = new java.util.HashMap<>(options);
        m.put(key, value);
        return Map.copyOf(m);
    }

    /** The result of one run: the changelog, and the transformations of the job. */
    private static final class Run {
        final List<String> rows = new ArrayList<>();
        final List<Transformation<?>> transformations = new ArrayList<>();

        List<OneInputTransformation<?, ?>> ferryTransformations() {
            List<OneInputTransformation<?, ?>> ferry = new ArrayList<>();
            for (Transformation<?> t : transformations) {
                if (t instanceof OneInputTransformation
                        && operatorOf((OneInputTransformation<?, ?>) t) instanceof FerryGroupAggregateOperator) {
                    ferry.add((OneInputTransformation<?, ?>) t);
                }
            }
            return ferry;
        }
    }

    private static Object operatorOf(OneInputTransformation<?, ?> t) {
        StreamOperatorFactory<?> f = t.getOperatorFactory();
        return f instanceof SimpleOperatorFactory ? ((SimpleOperatorFactory<?>) f).getOperator() : f;
    }

    private static void collect(Transformation<?> t, Set<Transformation<?>> seen, List<Transformation<?>> out) {
        if (!seen.add(t)) {
            return;
        }
        out.add(t);
        for (Transformation<?> input : t.getInputs()) {
            collect(input, seen, out);
        }
    }

    private static StreamTableEnvironment newEnv(boolean ferry, Map<String, String> options) {
        int parallelism = Integer.parseInt(options.getOrDefault(PARALLELISM, "1"));
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(parallelism);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
        tEnv.getConfig().set(PARALLELISM, String.valueOf(parallelism));
        Ferry.install(tEnv);
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        options.forEach((k, v) -> tEnv.getConfig().set(k, v));
        tEnv.executeSql(SOURCE_DDL);
        tEnv.executeSql(VIEW_DDL);
        // One non-parallel stream, so the rows arrive in this order on every run (a VALUES clause
        // with NULLs plans as a UNION of single-row sources, whose interleaving is not fixed).
        tEnv.createTemporaryView(
                "V",
                tEnv.fromDataStream(
                        env.fromData(
                                List.of(
                                        Row.of("a", 1L, 1.5),
                                        Row.of(null, 2L, null),
                                        Row.of("b", null, 2.5),
                                        Row.of("a", 1L, 1.5),
                                        Row.of(null, null, -0.0),
                                        Row.of("a", 0L, 0.0),
                                        Row.of(null, 5L, 0.0),
                                        Row.of("b", 3L, null),
                                        Row.of("c", null, null),
                                        Row.of("a", -2L, 1.5)),
                                Types.ROW_NAMED(new String[] {"k", "v", "x"}, Types.STRING, Types.LONG, Types.DOUBLE))));
        return tEnv;
    }

    private static Run run(
            boolean ferry, String sql, Map<String, String> options, Function<StreamTableEnvironment, DataStream<Row>> toStream)
            throws Exception {
        StreamTableEnvironment tEnv = newEnv(ferry, options);
        DataStream<Row> stream = toStream == null ? tEnv.toChangelogStream(tEnv.sqlQuery(sql)) : toStream.apply(tEnv);
        Run run = new Run();
        collect(stream.getTransformation(), Collections.newSetFromMap(new IdentityHashMap<>()), run.transformations);
        try (CloseableIterator<Row> it = stream.executeAndCollect()) {
            it.forEachRemaining(r -> run.rows.add(r.toString()));
        }
        return run;
    }

    /** Runs sql with Flink's and with Ferry's operators; returns Ferry's run. */
    private static Run assertSameAsFlink(String sql, int ferryOperators, Map<String, String> options) throws Exception {
        return assertSameAsFlink(sql, ferryOperators, options, null);
    }

    private static Run assertSameAsFlink(
            String sql,
            int ferryOperators,
            Map<String, String> options,
            Function<StreamTableEnvironment, DataStream<Row>> toStream)
            throws Exception {
        Run flink = run(false, sql, options, toStream);
        Run ferry = run(true, sql, options, toStream);
        assertEquals(0, flink.ferryTransformations().size(), "ferry.enabled=false must use Flink's operators");
        List<OneInputTransformation<?, ?>> natives = ferry.ferryTransformations();
        assertEquals(ferryOperators, natives.size(), "Ferry operators in the job of " + sql);
        for (OneInputTransformation<?, ?> t : natives) {
            assertTrue(t.getName().startsWith("FerryGroupAggregate"), t.getName());
            assertNotNull(t.getStateKeySelector(), "Flink's key selector is kept");
            assertNotNull(t.getStateKeyType());
            assertEquals(t.getInputs().get(0).getParallelism(), t.getParallelism(), "Flink's parallelism");
        }
        assertFalse(flink.rows.isEmpty());
        assertEquals(flink.rows, ferry.rows, sql);
        return ferry;
    }

    private static final String ALL_TYPES =
            "SELECT k, COUNT(*), SUM(t), MIN(t), MAX(t), SUM(s), MIN(s), MAX(s), SUM(i), MIN(i), MAX(i),"
                    + " SUM(b), MIN(b), MAX(b), SUM(f), MIN(f), MAX(f), SUM(d), MIN(d), MAX(d), COUNT(d), COUNT(k)"
                    + " FROM T GROUP BY k";

    @Test
    void everyNumericTypeUnderAVarcharKeyWithNulls() throws Exception {
        Run ferry = assertSameAsFlink(ALL_TYPES, 1, Map.of());
        assertTrue(ferry.rows.stream().anyMatch(r -> r.startsWith("+I[null, ")), "a NULL key group");
        assertTrue(ferry.rows.stream().anyMatch(r -> r.startsWith("-U[")), "UPDATE_BEFORE rows");
    }

    @Test
    void batchSizesDoNotChangeTheChangelog() throws Exception {
        List<String> reference = run(false, ALL_TYPES, Map.of(), null).rows;
        for (String size : List.of("1", "7")) {
            Run ferry = run(true, ALL_TYPES, Map.of(FerryOptions.BATCH_SIZE.key(), size), null);
            assertEquals(1, ferry.ferryTransformations().size());
            assertEquals(reference, ferry.rows, "ferry.batch.size=" + size);
        }
    }

    @Test
    void averages() throws Exception {
        assertSameAsFlink("SELECT k, AVG(t), AVG(s), AVG(i), AVG(b), AVG(f), AVG(d), COUNT(*) FROM T GROUP BY k", 1, Map.of());
    }

    @Test
    void groupByOverGroupByRetracts() throws Exception {
        assertSameAsFlink(
                "SELECT MOD(c, 5) AS m, COUNT(*), SUM(c), MIN(sd), MAX(sd), AVG(ai), SUM(sf), MIN(mt), MAX(mt), SUM(st)"
                        + " FROM (SELECT k, COUNT(*) AS c, SUM(d) AS sd, AVG(i) AS ai, SUM(f) AS sf, MAX(t) AS mt,"
                        + " SUM(s) AS st FROM T GROUP BY k) GROUP BY MOD(c, 5)",
                2,
                Map.of());
    }

    /**
     * TIMESTAMP_LTZ crosses as TIMESTAMP: as a key, as MIN/MAX arguments (insert-only and
     * retracting), in a DISTINCT set, in a session time zone far from UTC, and in the two-phase
     * plan's partial rows.
     */
    @Test
    void timestampLtzKeysAndArguments() throws Exception {
        String view = "(SELECT k, TO_TIMESTAMP_LTZ(1700000000000 + MOD(i, 100000) * 997, 3) AS t3,"
                + " CAST(TO_TIMESTAMP_LTZ(1700000000000 + MOD(b, 50) * 1000 + 1, 3) AS TIMESTAMP_LTZ(6)) AS t6 FROM T)";
        Map<String, String> zone = Map.of("table.local-time-zone", "Asia/Kolkata");
        assertSameAsFlink("SELECT k, MIN(t3), MAX(t3), COUNT(t6) FROM " + view + " GROUP BY k", 1, zone);
        assertSameAsFlink("SELECT t6, COUNT(*), MAX(t3), COUNT(DISTINCT t3) FROM " + view + " GROUP BY t6", 1, zone);
        assertSameAsFlink(
                "SELECT MOD(c, 3), MIN(mt), MAX(mt) FROM (SELECT k, COUNT(*) AS c, MAX(t3) AS mt FROM " + view
                        + " GROUP BY k) GROUP BY MOD(c, 3)",
                2,
                zone);
    }

    /** TIME crosses as INT: as a key, MIN/MAX (insert-only and retracting) and DISTINCT argument. */
    @Test
    void timeKeysAndArguments() throws Exception {
        String view = "(SELECT k, CAST(TO_TIMESTAMP(FROM_UNIXTIME(MOD(MOD(i, 86400) + 86400, 86400))) AS TIME(0)) AS tm,"
                + " CAST(TO_TIMESTAMP(FROM_UNIXTIME(1700000000 + MOD(b, 5000))) AS TIME(3)) AS tk FROM T)";
        assertSameAsFlink("SELECT k, MIN(tm), MAX(tm), COUNT(DISTINCT tk), LAST_VALUE(tm) FROM " + view + " GROUP BY k", 1, Map.of());
        assertSameAsFlink("SELECT tk, COUNT(*), MAX(tm) FROM " + view + " GROUP BY tk", 1, Map.of());
        assertSameAsFlink(
                "SELECT MOD(c, 3), MIN(mt), MAX(mt) FROM (SELECT k, COUNT(*) AS c, MAX(tm) AS mt FROM " + view
                        + " GROUP BY k) GROUP BY MOD(c, 3)",
                2,
                Map.of());
    }

    /**
     * MIN/MAX, FIRST_VALUE and LAST_VALUE over BOOLEAN (false before true) and TIMESTAMP(6) (nanoseconds within the
     * millisecond), NULLs included: insert-only, with retraction (a GROUP BY over a GROUP BY), and
     * in two phases (the retracting multiset crosses in the partial row).
     */
    @Test
    void booleanAndTimestamp6MinMaxFirstLast() throws Exception {
        String view = "(SELECT k, CASE WHEN i IS NULL THEN CAST(NULL AS BOOLEAN) ELSE MOD(i, 3) = 0 END AS bo,"
                + " CAST(CONCAT('2024-01-01 00:00:', LPAD(CAST(ABS(MOD(b, 60)) AS STRING), 2, '0'), '.',"
                + " LPAD(CAST(ABS(MOD(i, 1000000)) AS STRING), 6, '0')) AS TIMESTAMP(6)) AS t6 FROM T)";
        String insertOnly = "SELECT k, MIN(bo), MAX(bo), MIN(t6), MAX(t6), COUNT(*), FIRST_VALUE(bo), LAST_VALUE(t6)"
                + " FROM " + view + " GROUP BY k";
        assertSameAsFlink(insertOnly, 1, Map.of());
        String retracting = "SELECT MOD(c, 3), MIN(mb), MAX(mb), MIN(mt), MAX(mt), LAST_VALUE(mb), FIRST_VALUE(mt)"
                + " FROM (SELECT k, COUNT(*) AS c, MAX(bo) AS mb, MIN(t6) AS mt FROM " + view + " GROUP BY k) GROUP BY MOD(c, 3)";
        assertSameAsFlink(retracting, 2, Map.of());
        assertSameAsFlink(retracting, 2, ONE_PHASE_MINI_BATCH);
    }

    /** BINARY/VARBINARY as grouping keys (NULL included) and COUNT arguments, one and two phases. */
    @Test
    void binaryKeysAndArguments() throws Exception {
        String view = "(SELECT CAST(k AS BYTES) AS kb, CAST(CAST(MOD(i, 5) AS STRING) AS BINARY(3)) AS b3,"
                + " CAST(CAST(t AS STRING) AS VARBINARY(10)) AS vb, i FROM T)";
        String sql = "SELECT kb, b3, COUNT(vb), COUNT(*), MAX(i) FROM " + view + " GROUP BY kb, b3";
        Run ferry = assertSameAsFlink(sql, 1, Map.of());
        assertTrue(ferry.rows.stream().anyMatch(r -> r.startsWith("+I[null, ")), "a NULL key group");
        assertSameAsFlink(sql, 1, ONE_PHASE_MINI_BATCH);
    }

    /**
     * SINGLE_VALUE (a scalar sub-query) over one row per key, and over two: the job fails with
     * Flink's TableRuntimeException and message, with Ferry's operator as with Flink's.
     */
    @Test
    void singleValue() throws Exception {
        // the join with the sub-query's result interleaves its inputs by timing: compare results
        for (String sql : List.of("SELECT k, (SELECT x FROM V WHERE v = 5) FROM V", "SELECT k, (SELECT MAX(x) FROM V WHERE v = 1) FROM V")) {
            Run flink = run(false, sql, Map.of(), null);
            Run ferry = run(true, sql, Map.of(), null);
            assertFalse(ferry.ferryTransformations().isEmpty(), sql);
            assertEquals(materialize(flink.rows), materialize(ferry.rows), sql);
        }
        for (boolean ferry : new boolean[] {false, true}) {
            Exception e = assertThrows(Exception.class, () -> run(ferry, "SELECT k, (SELECT x FROM V WHERE v = 1) FROM V", Map.of(), null));
            Throwable t = e;
            while (t != null && !(t instanceof TableRuntimeException)) {
                t = t.getCause();
            }
            assertNotNull(t, "ferry " + ferry + ": no TableRuntimeException in " + e);
            assertEquals("SingleValueAggFunction received more than one element.", t.getMessage());
        }
    }

    /**
     * FIRST_VALUE/LAST_VALUE on insert-only input, over every type of the view and VARCHAR, NULLs
     * included, with and without mini-batch; on retracting input (a GROUP BY over a GROUP BY) their
     * retract variants, native too, also in one-phase mini-batch and next to a two-phase inner
     * aggregate.
     */
    @Test
    void firstAndLastValues() throws Exception {
        String sql = "SELECT k, FIRST_VALUE(t), LAST_VALUE(t), FIRST_VALUE(s), LAST_VALUE(i), FIRST_VALUE(b),"
                + " LAST_VALUE(f), LAST_VALUE(d), FIRST_VALUE(k), LAST_VALUE(CAST(d AS DECIMAL(12, 3))),"
                + " LAST_VALUE(CAST(MOD(i, 7) AS STRING)), COUNT(*) FROM T GROUP BY k";
        Run ferry = assertSameAsFlink(sql, 1, Map.of());
        assertTrue(ferry.rows.stream().anyMatch(r -> r.startsWith("-U[")), "updates");
        assertSameAsFlink(sql, 1, ONE_PHASE_MINI_BATCH);
        // two phases are not plannable (the functions cannot merge): Flink plans one phase
        assertSameAsFlink(sql, 1, MINI_BATCH);
        String retracting = "SELECT MOD(c, 3), LAST_VALUE(mb), FIRST_VALUE(mb), FIRST_VALUE(ms), LAST_VALUE(ms),"
                + " LAST_VALUE(md), FIRST_VALUE(mf), LAST_VALUE(mk), FIRST_VALUE(c), COUNT(*) FROM (SELECT k, COUNT(*) AS c,"
                + " MAX(b) AS mb, CAST(MAX(s) AS STRING) AS ms, MAX(CAST(d AS DECIMAL(12, 3))) AS md, MIN(f) AS mf,"
                + " MAX(k) AS mk FROM T GROUP BY k) GROUP BY MOD(c, 3)";
        Run retract = assertSameAsFlink(retracting, 2, Map.of());
        assertTrue(retract.rows.stream().anyMatch(r -> r.startsWith("-D[") || r.startsWith("-U[")), "retractions");
        assertSameAsFlink(retracting, 2, ONE_PHASE_MINI_BATCH);
        assertSameAsFlink(retracting, 1, MINI_BATCH); // the inner aggregate's two halves are other operator kinds
    }

    /**
     * LISTAGG on insert-only input: the default ',' and literal delimiters, NULL values, FILTER and
     * DISTINCT, with and without mini-batch; on retracting input (a GROUP BY over a GROUP BY) its
     * retract variants, with and without delimiter, native in one phase; in two phases (its
     * ListViews do not cross) the outer aggregate stays Flink's.
     */
    @Test
    void listAgg() throws Exception {
        String sql = "SELECT k, LISTAGG(CAST(t AS STRING)), LISTAGG(CAST(s AS STRING), '|'), LISTAGG(k, '; ') FILTER (WHERE b > 0),"
                + " LISTAGG(DISTINCT CAST(MOD(i, 5) AS STRING)), COUNT(*) FROM T GROUP BY k";
        Run ferry = assertSameAsFlink(sql, 1, Map.of());
        assertTrue(ferry.rows.stream().anyMatch(r -> r.startsWith("-U[")), "updates");
        assertSameAsFlink(sql, 1, ONE_PHASE_MINI_BATCH);
        String retracting = "SELECT MOD(c, 3), LISTAGG(CAST(c AS STRING)), LISTAGG(ms, '|'), LISTAGG(k, '') FILTER (WHERE c > 170),"
                + " LISTAGG(DISTINCT ms), COUNT(*) FROM (SELECT k, COUNT(*) AS c, CAST(MAX(s) AS STRING) AS ms FROM T GROUP BY k)"
                + " GROUP BY MOD(c, 3)";
        Run retract = assertSameAsFlink(retracting, 2, Map.of());
        assertTrue(retract.rows.stream().anyMatch(r -> r.startsWith("-D[") || r.startsWith("-U[")), "retractions");
        assertSameAsFlink(retracting, 2, ONE_PHASE_MINI_BATCH);
        // two phases: the inner halves are native (other operator kinds), the outer ones Flink's
        assertSameAsFlink(retracting, 0, MINI_BATCH);
    }

    /**
     * STDDEV_POP/STDDEV_SAMP/VAR_POP/VAR_SAMP reduce to Flink's $WELFORD_M2 next to a COUNT and a
     * Calc: its floating-point steps match Flink's bit for bit, on insert-only and retracting
     * input, with and without mini-batch.
     */
    @Test
    void varianceFamily() throws Exception {
        String sql = "SELECT k, STDDEV_POP(d), STDDEV_SAMP(i), VAR_POP(f), VAR_SAMP(b), STDDEV_SAMP(t), VAR_POP(s)"
                + " FROM T GROUP BY k";
        Run ferry = assertSameAsFlink(sql, 1, Map.of());
        assertTrue(ferry.rows.stream().anyMatch(r -> r.startsWith("-U[")), "updates");
        assertSameAsFlink(sql, 1, ONE_PHASE_MINI_BATCH);
        assertSameAsFlink(
                "SELECT MOD(c, 3), STDDEV_SAMP(sd), VAR_POP(c), STDDEV_POP(mb) FROM (SELECT k, COUNT(*) AS c, SUM(d) AS sd,"
                        + " MAX(b) AS mb FROM T GROUP BY k) GROUP BY MOD(c, 3)",
                2,
                Map.of());
    }

    @Test
    void globalAggregationOverRetractingInput() throws Exception {
        assertSameAsFlink(
                "SELECT COUNT(*), SUM(c), MAX(c), MIN(sd), AVG(sb) FROM"
                        + " (SELECT k, COUNT(*) AS c, SUM(d) AS sd, SUM(b) AS sb FROM T GROUP BY k)",
                2,
                Map.of());
    }

    @Test
    void nullKeysAndValues() throws Exception {
        Run ferry =
                assertSameAsFlink(
                        "SELECT k, COUNT(*), COUNT(v), SUM(v), MIN(v), MAX(v), AVG(v), SUM(x), MIN(x), MAX(x)"
                                + " FROM V GROUP BY k",
                        1,
                        Map.of());
        assertTrue(ferry.rows.contains("+I[null, 1, 1, 2, 2, 2, 2, null, null, null]"), ferry.rows.toString());
    }

    /** An upsert consumer needs no UPDATE_BEFORE: the aggregate runs with generateUpdateBefore=false. */
    @Test
    void upsertOutputWithoutUpdateBefore() throws Exception {
        String sql =
                "SELECT COALESCE(k, '<null>') AS k, COUNT(*) AS c, SUM(b) AS s, MAX(d) AS x FROM T"
                        + " GROUP BY COALESCE(k, '<null>')";
        Function<StreamTableEnvironment, DataStream<Row>> upsert =
                tEnv -> {
                    Table table = tEnv.sqlQuery(sql);
                    return tEnv.toChangelogStream(
                            table,
                            Schema.newBuilder()
                                    .column("k", DataTypes.STRING().notNull())
                                    .column("c", DataTypes.BIGINT().notNull())
                                    .column("s", DataTypes.BIGINT())
                                    .column("x", DataTypes.DOUBLE())
                                    .primaryKey("k")
                                    .build(),
                            ChangelogMode.upsert());
                };
        Run ferry = assertSameAsFlink(sql, 1, Map.of(), upsert);
        assertFalse(ferry.rows.stream().anyMatch(r -> r.startsWith(RowKind.UPDATE_BEFORE.shortString())), ferry.rows.toString());
        assertTrue(ferry.rows.stream().anyMatch(r -> r.startsWith(RowKind.UPDATE_AFTER.shortString())));
    }

    /** A node Ferry leaves to Flink runs Flink's operator next to a native one. */
    @Test
    void fallbackNodesRunFlinksOperator() throws Exception {
        assertSameAsFlink(
                "SELECT c, AVG(DISTINCT b) FROM (SELECT k, COUNT(*) AS c, MAX(b) AS b FROM T GROUP BY k) GROUP BY c", 1, Map.of());
    }

    /** The table a changelog materializes to: row (without kind) → multiplicity. */
    private static Map<String, Integer> materialize(List<String> changelog) {
        Map<String, Integer> table = new TreeMap<>();
        for (String row : changelog) {
            String kind = row.substring(0, 2);
            String values = row.substring(2);
            int delta = kind.equals("+I") || kind.equals("+U") ? 1 : -1;
            table.merge(values, delta, Integer::sum);
            table.remove(values, 0);
        }
        return table;
    }

    /**
     * At parallelism 2 Flink's shuffle spreads keys over two subtasks, each owning half of the key
     * groups; Go must agree with Flink's key-group assignment for every key. The interleaving of
     * the two source subtasks is not deterministic, so the final results are compared.
     */
    @Test
    void parallelismTwoGivesFlinksFinalResult() throws Exception {
        String sql =
                "SELECT c, COUNT(*), SUM(sd) FROM (SELECT k, COUNT(*) AS c, SUM(b) AS sd, MAX(d) AS mx FROM T GROUP BY k)"
                        + " GROUP BY c";
        Map<String, String> options = Map.of(PARALLELISM, "2");
        Run flink = run(false, sql, options, null);
        Run ferry = run(true, sql, options, null);
        assertEquals(2, ferry.ferryTransformations().size());
        Map<String, Integer> expected = materialize(flink.rows);
        assertFalse(expected.isEmpty());
        assertEquals(expected, materialize(ferry.rows));
    }

    /** The operator IDs of the job graph of the table environment's pending transformations. */
    private static List<String> operatorIds(StreamTableEnvironment tEnv) {
        List<String> ids = new ArrayList<>();
        JobGraph job = ((StreamTableEnvironmentImpl) tEnv).execEnv().getStreamGraph().getJobGraph();
        for (JobVertex v : job.getVertices()) {
            for (OperatorIDPair p : v.getOperatorIDs()) {
                ids.add(p.getGeneratedOperatorID() + "/" + p.getUserDefinedOperatorID().orElse(null));
            }
        }
        return ids;
    }

    /**
     * Ferry's operator has Flink's transformation name, hence Flink's UID when the planner sets
     * UIDs (ALWAYS), and in every mode the operator IDs of Flink's operator: state of either
     * reaches the other (docs/state.md). Only the display name says Ferry.
     */
    @Test
    void stockUidAndOperatorIds() {
        NativeSupport.clearCache();
        for (String uids : new String[] {"PLAN_ONLY", "ALWAYS"}) {
            List<List<String>> ids = new ArrayList<>();
            for (boolean ferry : new boolean[] {false, true}) {
                StreamTableEnvironment tEnv = newEnv(ferry, Map.of("table.exec.uid.generation", uids));
                DataStream<Row> stream = tEnv.toChangelogStream(tEnv.sqlQuery("SELECT k, SUM(b) FROM T GROUP BY k"));
                stream.sinkTo(new DiscardingSink<>());
                List<Transformation<?>> all = new ArrayList<>();
                collect(stream.getTransformation(), Collections.newSetFromMap(new IdentityHashMap<>()), all);
                List<String> names = new ArrayList<>();
                for (Transformation<?> t : all) {
                    if (t.getName().matches("(Ferry)?GroupAggregate\\[\\d+\\]")) {
                        names.add((t.getUid() == null ? "-" : t.getUid().replaceFirst("^\\d+_", "")) + " "
                                + t.getName().replaceFirst("\\[\\d+\\]$", ""));
                    }
                }
                String uid = uids.equals("ALWAYS") ? "group-aggregate" : "-";
                assertEquals(List.of(uid + (ferry ? " FerryGroupAggregate" : " GroupAggregate")), names);
                ids.add(operatorIds(tEnv));
            }
            if (uids.equals("PLAN_ONLY")) { // ALWAYS: UIDs carry a JVM-wide node counter; their suffixes are compared above
                assertEquals(ids.get(0), ids.get(1), "operator IDs with Ferry off and on");
            }
        }
        // translation re-checked the spec the planner had already checked: one cache entry
        assertEquals(1, NativeSupport.cacheSize());
    }
}
