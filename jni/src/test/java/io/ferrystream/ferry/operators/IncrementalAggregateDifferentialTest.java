package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.groupaggregate.IncrementalGroupAggregateSpec;
import io.ferrystream.ferry.kinds.groupaggregate.LocalGroupAggregateSpec;
import io.ferrystream.ferry.planner.Ferry;

import static io.ferrystream.ferry.operators.TwoPhaseAggregateDifferentialTest.assertIdentical;
import static io.ferrystream.ferry.operators.TwoPhaseAggregateDifferentialTest.events;
import static io.ferrystream.ferry.operators.TwoPhaseAggregateDifferentialTest.partialRows;
import static io.ferrystream.ferry.operators.TwoPhaseAggregateDifferentialTest.runs;
import static io.ferrystream.ferry.operators.TwoPhaseAggregateDifferentialTest.runGlobal;
import static io.ferrystream.ferry.operators.TwoPhaseAggregateDifferentialTest.typeOf;
import static io.ferrystream.ferry.operators.TwoPhaseAggregateDifferentialTest.userFunction;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.SimpleOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperatorFactory;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.runtime.keyselector.RowDataKeySelector;
import org.apache.flink.table.runtime.operators.aggregate.MiniBatchIncrementalGroupAggFunction;
import org.apache.flink.table.runtime.operators.bundle.KeyedMapBundleOperator;
import org.apache.flink.table.runtime.operators.bundle.MapBundleOperator;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * The incremental aggregate of a split DISTINCT ({@code KeyedMapBundleOperator} running {@code
 * MiniBatchIncrementalGroupAggFunction}) against Ferry's native operator of the incremental spec ({@link OneInputNativeOperator}),
 * each planned from the same SQL (mini-batch on, TWO_PHASE, split DISTINCT on) with Ferry off and
 * on, in Flink's keyed test harness: fed the same partial rows, which Flink's own local aggregate
 * makes from random rows of its input (the partial keys with their buckets, the DISTINCT
 * arguments, the FILTER flags) split over several local subtasks, with bundles cut by the count
 * trigger, barriers and watermarks, and snapshots and restores of the incremental's state:
 * identical output rows in identical order.
 */
class IncrementalAggregateDifferentialTest {

    static final String CALLS =
            "COUNT(DISTINCT a), COUNT(DISTINCT s) FILTER (WHERE b > 0), COUNT(DISTINCT s), SUM(b), COUNT(*), AVG(d)";

    /** The query: on a changelog its MIN and MAX take retraction. */
    static String query(boolean changelog) {
        return "SELECT k, " + CALLS + ", MAX(d), MIN(s) FROM T GROUP BY k";
    }

    static Map<String, String> options(int size) {
        return Map.of(
                "table.exec.mini-batch.enabled", "true",
                "table.exec.mini-batch.allow-latency", "1 s",
                "table.exec.mini-batch.size", Integer.toString(size),
                "table.optimizer.agg-phase-strategy", "TWO_PHASE",
                "table.optimizer.distinct-agg.split.enabled", "true");
    }

    /** The planned local aggregate and incremental aggregate, and the local's input type. */
    record Planned(TwoPhaseAggregateDifferentialTest.Planned halves, RowType localInput) {}

    static Planned plan(boolean ferry, boolean changelog, int size) throws Exception {
        return plan(ferry, changelog, size, Map.of());
    }

    @SuppressWarnings("unchecked")
    static Planned plan(boolean ferry, boolean changelog, int size, Map<String, String> more) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        // the operators run apart, on rows: the row exchange's operators (frames are checked by
        // NativeFrameRoutingTest and, end to end, by TwoPhaseSqlDifferentialTest#splitDistinct)
        tEnv.getConfig().set(FerryOptions.EXCHANGE_COLUMNAR, false);
        options(size).forEach((k, v) -> tEnv.getConfig().set(k, v));
        more.forEach((k, v) -> tEnv.getConfig().set(k, v));
        Ferry.install(tEnv);
        String[] names = {"k", "a", "s", "b", "d"};
        TypeInformation<?>[] types = {Types.LONG, Types.INT, Types.STRING, Types.LONG, Types.DOUBLE};
        DataStream<Row> source = env.fromData(List.of(new Row(names.length)), Types.ROW_NAMED(names, types));
        Schema schema = Schema.newBuilder().column("k", "BIGINT").column("a", "INT").column("s", "STRING")
                .column("b", "BIGINT").column("d", "DOUBLE").build();
        Table t = tEnv.fromChangelogStream(source, schema, changelog ? ChangelogMode.all() : ChangelogMode.insertOnly());
        tEnv.createTemporaryView("T", t);
        tEnv.toChangelogStream(tEnv.sqlQuery(query(changelog))).print();
        StreamGraph graph = env.getStreamGraph();
        OneInputStreamOperator<RowData, RowData> local = null;
        OneInputStreamOperator<RowData, RowData> incremental = null;
        RowType localIn = null;
        RowType localOut = null;
        RowType incrementalOut = null;
        KeySelector<RowData, RowData> keys = null;
        for (StreamNode node : graph.getStreamNodes()) {
            StreamOperatorFactory<?> factory = node.getOperatorFactory();
            if (!(factory instanceof SimpleOperatorFactory)) {
                continue;
            }
            Object op = ((SimpleOperatorFactory<?>) factory).getOperator();
            boolean flinkIncremental = op instanceof KeyedMapBundleOperator
                    && userFunction(op) instanceof MiniBatchIncrementalGroupAggFunction;
            if (op instanceof MapBundleOperator || runs(op, LocalGroupAggregateSpec.class)) {
                local = (OneInputStreamOperator<RowData, RowData>) op;
                localIn = typeOf(node.getTypeSerializersIn()[0]);
                localOut = typeOf(node.getTypeSerializerOut());
            } else if (flinkIncremental || runs(op, IncrementalGroupAggregateSpec.class)) {
                assertEquals(ferry, runs(op, IncrementalGroupAggregateSpec.class),
                        "planned incremental " + op + "\n" + tEnv.explainSql(query(changelog)));
                incremental = (OneInputStreamOperator<RowData, RowData>) op;
                incrementalOut = typeOf(node.getTypeSerializerOut());
                keys = (KeySelector<RowData, RowData>) node.getStatePartitioners()[0];
            }
        }
        assertNotNull(local, "no local aggregate:\n" + tEnv.explainSql(query(changelog)));
        assertNotNull(incremental, "no incremental aggregate:\n" + tEnv.explainSql(query(changelog)));
        if (!ferry) {
            assertInstanceOf(MiniBatchIncrementalGroupAggFunction.class, userFunction(incremental));
        }
        return new Planned(
                new TwoPhaseAggregateDifferentialTest.Planned(local, localOut, incremental, keys,
                        ((RowDataKeySelector) keys).getProducedType(), incrementalOut),
                localIn);
    }

    /**
     * Random rows of the local aggregate's input type: small domains (keys, buckets and
     * arguments repeat), NULLs in nullable fields, a changelog of inserts and retractions of
     * earlier rows when {@code changelog}.
     */
    static List<RowData> input(RowType type, long seed, int n, boolean changelog) {
        Random r = new Random(seed);
        RowDataSerializer ser = new RowDataSerializer(type);
        List<RowData> rows = new ArrayList<>();
        List<GenericRowData> live = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            if (changelog && !live.isEmpty() && r.nextInt(4) == 0) {
                GenericRowData old = live.remove(r.nextInt(live.size()));
                GenericRowData retract = new GenericRowData(RowKind.DELETE, type.getFieldCount());
                for (int f = 0; f < type.getFieldCount(); f++) {
                    retract.setField(f, old.getField(f));
                }
                rows.add(ser.toBinaryRow(retract).copy());
                continue;
            }
            GenericRowData row = new GenericRowData(type.getFieldCount());
            for (int f = 0; f < type.getFieldCount(); f++) {
                LogicalType t = type.getTypeAt(f);
                row.setField(f, t.isNullable() && r.nextInt(8) == 0 ? null : value(t, r));
            }
            live.add(row);
            rows.add(ser.toBinaryRow(row).copy());
        }
        return rows;
    }

    static Object value(LogicalType t, Random r) {
        return switch (t.getTypeRoot()) {
            case BIGINT -> (long) r.nextInt(12) - 2;
            case INTEGER -> r.nextInt(6);
            case BOOLEAN -> r.nextBoolean();
            case DOUBLE -> r.nextInt(40) / 4.0;
            case VARCHAR, CHAR -> StringData.fromString("v" + r.nextInt(9));
            default -> throw new IllegalArgumentException("no random values of " + t);
        };
    }

    void check(boolean changelog, int size, long seeds) throws Exception {
        check(changelog, size, seeds, false);
    }

    /**
     * @param ttl idle-state TTL of 50 ms ({@code table.exec.state.ttl}), the TTL clock stepping by
     *     up to 40 ms now and then: the DISTINCT maps' entries, the incremental's only state,
     *     expire one by one
     */
    void check(boolean changelog, int size, long seeds, boolean ttl) throws Exception {
        Map<String, String> more = ttl ? Map.of("table.exec.state.ttl", "50 ms") : Map.of();
        Planned stock = plan(false, changelog, size, more);
        Planned ferry = plan(true, changelog, size, more);
        assertEquals(stock.localInput(), ferry.localInput());
        for (long seed = 0; seed < seeds; seed++) {
            Random r = new Random(seed * 17 + 3);
            List<RowData> in = input(stock.localInput(), seed, 400, changelog);
            List<RowData> partials = partialRows(stock.halves(), in, 1 + r.nextInt(3), r);
            int[] events = events(r, partials.size(), true);
            long[] times = null;
            if (ttl) {
                times = new long[partials.size()];
                for (int i = 1; i < times.length; i++) {
                    times[i] = times[i - 1] + (r.nextInt(10) == 0 ? r.nextInt(40) : 0);
                }
            }
            List<String> want = runGlobal(stock.halves(), partials, events, times);
            List<String> got = runGlobal(ferry.halves(), partials, events, times);
            assertIdentical(want, got, "incremental, " + (changelog ? "changelog" : "insert-only") + ", bundles of " + size
                    + (ttl ? ", TTL" : "") + ", seed " + seed);
        }
    }

    @Test
    void insertOnly() throws Exception {
        check(false, 7, 12);
        check(false, 100, 4);
    }

    @Test
    void retracting() throws Exception {
        check(true, 7, 12);
        check(true, 100, 4);
    }

    /** Idle-state TTL: the DISTINCT maps' entries expire one by one, each at its own last write. */
    @Test
    void idleStateTtl() throws Exception {
        check(false, 7, 6, true);
        check(true, 7, 6, true);
        check(true, 100, 3, true);
    }
}
