package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.groupaggregate.FlinkAccState;
import io.ferrystream.ferry.kinds.groupaggregate.GlobalGroupAggregateSpec;
import io.ferrystream.ferry.kinds.groupaggregate.LocalGroupAggregateSpec;
import io.ferrystream.ferry.planner.Ferry;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.typeutils.RowTypeInfo;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.SimpleOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperatorFactory;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.AbstractStreamOperatorTestHarness;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.api.dataview.MapView;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RawValueData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.binary.BinarySegmentUtils;
import org.apache.flink.table.runtime.keyselector.RowDataKeySelector;
import org.apache.flink.table.runtime.operators.aggregate.MiniBatchGlobalGroupAggFunction;
import org.apache.flink.table.runtime.operators.aggregate.MiniBatchLocalGroupAggFunction;
import org.apache.flink.table.runtime.operators.bundle.KeyedMapBundleOperator;
import org.apache.flink.table.runtime.operators.bundle.MapBundleOperator;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.LogicalTypeRoot;
import org.apache.flink.table.types.logical.RawType;
import org.apache.flink.table.types.logical.StructuredType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.Row;
import org.apache.flink.util.InstantiationUtil;

import org.junit.jupiter.api.Test;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static io.ferrystream.ferry.operators.GroupAggregateDifferentialTest.VALUE_TYPES;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The two halves of Flink's two-phase aggregate against Ferry's, each planned from the same SQL
 * (mini-batch on, {@code table.optimizer.agg-phase-strategy=TWO_PHASE}) with Ferry off and on,
 * in Flink's own test harnesses:
 *
 * <ul>
 *   <li>the local aggregate, {@code MapBundleOperator(MiniBatchLocalGroupAggFunction)} against
 *       Ferry's native operator of the local spec ({@link OneInputNativeOperator}), in the harness for operators that are not keyed,
 *       fed the same random changelog, bundles cut by the count trigger, by barriers and
 *       watermarks at random points, and by snapshot and restore: identical partial rows in
 *       identical order;
 *   <li>the global aggregate, {@code KeyedMapBundleOperator(MiniBatchGlobalGroupAggFunction)}
 *       against Ferry's native operator of the global spec, in the keyed harness, fed the same
 *       partial rows, which Flink's own local aggregate makes from random changelogs split over
 *       several local subtasks (negative and zero counts, NULL sums, overflowed DECIMALs), with
 *       snapshots, restores and idle-state TTL: identical changelogs in identical order.
 * </ul>
 */
class TwoPhaseAggregateDifferentialTest {

    /** The two planned halves, with what the harnesses need. */
    record Planned(
            OneInputStreamOperator<RowData, RowData> local,
            RowType localOutput,
            OneInputStreamOperator<RowData, RowData> global,
            KeySelector<RowData, RowData> globalKeys,
            TypeInformation<RowData> globalKeyType,
            RowType globalOutput) {}

    static Map<String, String> twoPhase(int size) {
        return Map.of(
                "table.exec.mini-batch.enabled", "true",
                "table.exec.mini-batch.allow-latency", "1 s",
                "table.exec.mini-batch.size", Integer.toString(size),
                "table.optimizer.agg-phase-strategy", "TWO_PHASE");
    }

    static Map<String, String> withTtl(Map<String, String> options, String ttl) {
        Map<String, String> o = new HashMap<>(options);
        o.put("table.exec.state.ttl", ttl);
        return o;
    }

    static RowType typeOf(Object serializer) throws Exception {
        Field fieldTypes = RowDataSerializer.class.getDeclaredField("types");
        fieldTypes.setAccessible(true);
        return RowType.of((LogicalType[]) fieldTypes.get(serializer));
    }

    @SuppressWarnings("unchecked")
    static Planned plan(String keyType, boolean changelog, boolean ferry, String aggs, Map<String, String> options) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        // the halves run apart, on rows: the row exchange's operators (frames are checked by
        // NativeFrameRoutingTest and, end to end, by TwoPhaseSqlDifferentialTest)
        tEnv.getConfig().set(FerryOptions.EXCHANGE_COLUMNAR, false);
        options.forEach((k, v) -> tEnv.getConfig().set(k, v));
        Ferry.install(tEnv);
        List<String> names = new ArrayList<>(List.of("k"));
        List<TypeInformation<?>> types = new ArrayList<>(List.of(GroupAggregateDifferentialTest.typeInfo(keyType)));
        Schema.Builder schema = Schema.newBuilder().column("k", keyType);
        for (GroupAggregateDifferentialTest.Col c : VALUE_TYPES) {
            names.add(c.name());
            types.add(GroupAggregateDifferentialTest.typeInfo(c.sqlType().replace(" NOT NULL", "")));
            schema.column(c.name(), c.sqlType());
        }
        RowTypeInfo rowType = new RowTypeInfo(types.toArray(new TypeInformation<?>[0]), names.toArray(new String[0]));
        DataStream<Row> source = env.fromData(List.of(new Row(names.size())), rowType);
        Table t = tEnv.fromChangelogStream(source, schema.build(), changelog ? ChangelogMode.all() : ChangelogMode.insertOnly());
        tEnv.createTemporaryView("T", t);
        tEnv.toChangelogStream(tEnv.sqlQuery("SELECT k, " + aggs + " FROM T GROUP BY k")).print();
        StreamGraph graph = env.getStreamGraph();
        OneInputStreamOperator<RowData, RowData> local = null;
        OneInputStreamOperator<RowData, RowData> global = null;
        RowType localOut = null;
        RowType globalOut = null;
        KeySelector<RowData, RowData> keys = null;
        for (StreamNode node : graph.getStreamNodes()) {
            StreamOperatorFactory<?> factory = node.getOperatorFactory();
            if (!(factory instanceof SimpleOperatorFactory)) {
                continue;
            }
            Object op = ((SimpleOperatorFactory<?>) factory).getOperator();
            if (op instanceof MapBundleOperator || runs(op, LocalGroupAggregateSpec.class)) {
                assertEquals(ferry, runs(op, LocalGroupAggregateSpec.class), "planned local " + op);
                // The harness feeds source rows: the local aggregate must read them as they are.
                assertEquals(1 + VALUE_TYPES.size(), typeOf(node.getTypeSerializersIn()[0]).getFieldCount());
                local = (OneInputStreamOperator<RowData, RowData>) op;
                localOut = typeOf(node.getTypeSerializerOut());
            } else if (op instanceof KeyedMapBundleOperator || runs(op, GlobalGroupAggregateSpec.class)) {
                assertEquals(ferry, runs(op, GlobalGroupAggregateSpec.class), "planned global " + op);
                global = (OneInputStreamOperator<RowData, RowData>) op;
                globalOut = typeOf(node.getTypeSerializerOut());
                keys = (KeySelector<RowData, RowData>) node.getStatePartitioners()[0];
            }
        }
        if (local == null || global == null) {
            throw new AssertionError("no two-phase aggregate in the plan:\n" + tEnv.explainSql("SELECT k, " + aggs + " FROM T GROUP BY k"));
        }
        if (!ferry) {
            assertInstanceOf(MiniBatchLocalGroupAggFunction.class, userFunction(local));
            assertInstanceOf(MiniBatchGlobalGroupAggFunction.class, userFunction(global));
        }
        return new Planned(local, localOut, global, keys, ((RowDataKeySelector) keys).getProducedType(), globalOut);
    }

    static Object userFunction(Object bundleOperator) throws Exception {
        Field f = bundleOperator.getClass().getSuperclass().getDeclaredField("function");
        f.setAccessible(true);
        return f.get(bundleOperator);
    }

    // ---- the local aggregate ---------------------------------------------------------------------

    static OneInputStreamOperatorTestHarness<RowData, RowData> localHarness(Planned p, OperatorSubtaskState state)
            throws Exception {
        OneInputStreamOperatorTestHarness<RowData, RowData> h =
                new OneInputStreamOperatorTestHarness<>(InstantiationUtil.clone(p.local()));
        h.setup(new RowDataSerializer(p.localOutput()));
        if (state != null) {
            h.initializeState(state);
        }
        h.open();
        return h;
    }

    /**
     * Runs rows through a fresh copy of the planned local aggregate. Before row i: {@code
     * events[i]} 1 flushes the bundle with a barrier, 2 with a watermark, 3 snapshots and restores
     * the operator (a new HashMap on both sides). Returns the output rows, as copied by the
     * harness with the output serializer (what the network would carry).
     */
    static List<RowData> runLocal(Planned p, List<RowData> rows, int[] events) throws Exception {
        List<RowData> out = new ArrayList<>();
        OneInputStreamOperatorTestHarness<RowData, RowData> h = localHarness(p, null);
        long cp = 0;
        for (int i = 0; i < rows.size(); i++) {
            switch (events[i]) {
                case 1 -> h.prepareSnapshotPreBarrier(++cp);
                case 2 -> h.processWatermark(new Watermark(i));
                case 3 -> {
                    h.prepareSnapshotPreBarrier(++cp);
                    OperatorSubtaskState state = h.snapshot(cp, cp);
                    out.addAll(h.extractOutputValues());
                    h.close();
                    h = localHarness(p, state);
                }
                default -> { }
            }
            h.processElement(new StreamRecord<>(rows.get(i)));
        }
        h.prepareSnapshotPreBarrier(++cp);
        out.addAll(h.extractOutputValues());
        h.close();
        return out;
    }

    static int[] events(Random r, int n, boolean restores) {
        int[] e = new int[n];
        for (int i = 0; i < n; i++) {
            int x = r.nextInt(40);
            e[i] = x == 0 ? 1 : x == 1 ? 2 : (x == 2 && restores) ? 3 : 0;
        }
        return e;
    }

    /**
     * Each row as its values and, after them, the bytes of the {@code BinaryRowData} Flink's
     * serializer makes of it (what the exchange carries, RowKind header included): equal texts
     * mean byte-identical rows. The one exception is the bits of a NaN that arithmetic made:
     * they depend on operand order in Java as in Go (docs/group-aggregate.md#decisions), so a
     * NaN in a DOUBLE or FLOAT field is compared as Java's canonical NaN. A DISTINCT call's map
     * (a RAW MapView) and the accumulator of MIN/MAX with retraction (a nested row holding one)
     * are compared as their values and sets of entries, after the row: a map's serialized form
     * follows the iteration order of a HashMap, which depends on the map's history.
     */
    static List<String> render(List<RowData> rows, RowType type) {
        RowDataSerializer ser = new RowDataSerializer(type);
        List<String> s = new ArrayList<>();
        for (RowData row : rows) {
            StringBuilder views = new StringBuilder();
            RowData r = withoutViews(row, type, views);
            BinaryRowData b = ser.toBinaryRow(r).copy();
            for (int i = 0; i < type.getFieldCount(); i++) {
                if (b.isNullAt(i)) {
                    continue;
                }
                LogicalTypeRoot root = type.getTypeAt(i).getTypeRoot();
                if (root == LogicalTypeRoot.DOUBLE && Double.isNaN(b.getDouble(i))) {
                    b.setDouble(i, Double.NaN);
                } else if (root == LogicalTypeRoot.FLOAT && Float.isNaN(b.getFloat(i))) {
                    b.setFloat(i, Float.NaN);
                }
            }
            byte[] bytes = BinarySegmentUtils.copyToBytes(b.getSegments(), b.getOffset(), b.getSizeInBytes());
            s.add(GroupAggregateDifferentialTest.render(r, type) + " " + HexFormat.of().formatHex(bytes) + views);
        }
        return s;
    }

    /**
     * The row with its distinct maps (RAW MapView fields) set to NULL, each appended to {@code
     * views} as its sorted entries; the row itself when it has none.
     */
    @SuppressWarnings("unchecked")
    static RowData withoutViews(RowData row, RowType type, StringBuilder views) {
        GenericRowData g = null;
        for (int i = 0; i < type.getFieldCount(); i++) {
            LogicalType t = type.getTypeAt(i);
            boolean acc = t instanceof StructuredType; // MIN/MAX with retraction: min, mapSize, map
            if (!(t instanceof RawType) && !acc) {
                continue;
            }
            if (g == null) {
                g = new GenericRowData(row.getRowKind(), type.getFieldCount());
                for (int j = 0; j < type.getFieldCount(); j++) {
                    g.setField(j, RowData.createFieldGetter(type.getTypeAt(j), j).getFieldOrNull(row));
                }
            }
            g.setField(i, null);
            if (row.isNullAt(i)) {
                views.append(" null");
                continue;
            }
            RowData holder = row;
            int pos = i;
            if (acc) {
                holder = row.getRow(i, 3);
                pos = 2;
                views.append(" acc{").append(RowData.createFieldGetter(t.getChildren().get(0), 0).getFieldOrNull(holder))
                        .append(", ").append(holder.getLong(1)).append("}");
                t = t.getChildren().get(2);
            }
            RawType<MapView<Object, Object>> raw = (RawType<MapView<Object, Object>>) t;
            RawValueData<MapView<Object, Object>> value = (RawValueData<MapView<Object, Object>>) (RawValueData<?>) holder.getRawValue(pos);
            MapView<Object, Object> view = value.toObject(raw.getTypeSerializer());
            List<String> entries = new ArrayList<>();
            for (Map.Entry<Object, Object> e : view.getMap().entrySet()) {
                Object v = e.getValue();
                entries.add(e.getKey() + "=" + (v instanceof long[] ? java.util.Arrays.toString((long[]) v) : v));
            }
            Collections.sort(entries);
            views.append(' ').append(entries);
        }
        return g == null ? row : g;
    }

    static void assertIdentical(List<String> want, List<String> got, String what) {
        assertTrue(!want.isEmpty(), what + ": Flink produced no output");
        for (int i = 0; i < Math.min(want.size(), got.size()); i++) {
            assertEquals(want.get(i), got.get(i), what + ": first difference at output row " + i);
        }
        assertEquals(want.size(), got.size(), what + ": output length");
    }

    void checkLocal(String keyType, boolean changelog, String aggs, int size, long seeds, int rows, int keyDomain) throws Exception {
        Planned stock = plan(keyType, changelog, false, aggs, twoPhase(size));
        Planned ferry = plan(keyType, changelog, true, aggs, twoPhase(size));
        assertEquals(stock.localOutput(), ferry.localOutput(), "the partial row type");
        for (long seed = 0; seed < seeds; seed++) {
            List<RowData> in = GroupAggregateDifferentialTest.input(seed * 17 + size, keyType, changelog, rows, keyDomain);
            int[] events = events(new Random(seed), in.size(), true);
            List<String> want = render(runLocal(stock, in, events), stock.localOutput());
            List<String> got = render(runLocal(ferry, in, events), ferry.localOutput());
            assertIdentical(want, got, "local, " + keyType + (changelog ? " changelog" : "") + ", size " + size + ", seed " + seed);
        }
    }

    // ---- the global aggregate --------------------------------------------------------------------

    /**
     * The partial rows Flink's local aggregate makes of rows split at random over {@code locals}
     * local subtasks, each cutting bundles at random points too, interleaved at random as an
     * exchange delivers them (each local's order kept), as the binary rows the network carries.
     */
    static List<RowData> partialRows(Planned stock, List<RowData> rows, int locals, Random r) throws Exception {
        List<List<RowData>> parts = new ArrayList<>();
        for (int l = 0; l < locals; l++) {
            parts.add(new ArrayList<>());
        }
        for (RowData row : rows) {
            parts.get(r.nextInt(locals)).add(row);
        }
        RowDataSerializer ser = new RowDataSerializer(stock.localOutput());
        List<List<RowData>> outs = new ArrayList<>();
        for (List<RowData> part : parts) {
            List<RowData> out = new ArrayList<>();
            for (RowData row : runLocal(stock, part, events(r, part.size(), false))) {
                out.add(ser.toBinaryRow(row).copy());
            }
            outs.add(out);
        }
        List<RowData> merged = new ArrayList<>();
        int[] pos = new int[locals];
        while (true) {
            List<Integer> open = new ArrayList<>();
            for (int l = 0; l < locals; l++) {
                if (pos[l] < outs.get(l).size()) {
                    open.add(l);
                }
            }
            if (open.isEmpty()) {
                return merged;
            }
            int l = open.get(r.nextInt(open.size()));
            merged.add(outs.get(l).get(pos[l]++));
        }
    }

    static KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> globalHarness(
            Planned p, OperatorSubtaskState state) throws Exception {
        KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> h =
                HarnessMemory.outsideBudget(new KeyedOneInputStreamOperatorTestHarness<>(
                        InstantiationUtil.clone(p.global()), p.globalKeys(), p.globalKeyType())); // manyKeys outgrows 1.5 MiB
        h.setup(new RowDataSerializer(p.globalOutput()));
        if (state != null) {
            h.initializeState(state);
        }
        h.open();
        return h;
    }

    /**
     * Runs partial rows through a fresh copy of the planned global aggregate, with the events of
     * {@link #runLocal} (snapshot and restore keep the state) and, with {@code times}, the
     * processing time idle-state TTL reads (each step first flushes the bundle with a barrier).
     */
    static List<String> runGlobal(Planned p, List<RowData> rows, int[] events, long[] times) throws Exception {
        List<String> out = new ArrayList<>();
        KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> h = globalHarness(p, null);
        long cp = 0;
        for (int i = 0; i < rows.size(); i++) {
            if (times != null && (i == 0 || times[i] != times[i - 1])) {
                h.prepareSnapshotPreBarrier(++cp);
                h.setProcessingTime(times[i]);
                h.setStateTtlProcessingTime(times[i]);
            }
            switch (events[i]) {
                case 1 -> h.prepareSnapshotPreBarrier(++cp);
                case 2 -> h.processWatermark(new Watermark(i));
                case 3 -> {
                    h.prepareSnapshotPreBarrier(++cp);
                    OperatorSubtaskState state = h.snapshot(cp, cp);
                    out.addAll(render(h.extractOutputValues(), p.globalOutput()));
                    h.getOutput().clear();
                    h.close();
                    h = globalHarness(p, state);
                    if (times != null) {
                        h.setProcessingTime(times[i]);
                        h.setStateTtlProcessingTime(times[i]);
                    }
                }
                default -> { }
            }
            h.processElement(new StreamRecord<>(rows.get(i)));
        }
        h.prepareSnapshotPreBarrier(++cp);
        out.addAll(render(h.extractOutputValues(), p.globalOutput()));
        h.close();
        return out;
    }

    void checkGlobal(String keyType, boolean changelog, String aggs, Map<String, String> options, long seeds, int rows,
            int keyDomain, boolean clock) throws Exception {
        Planned stock = plan(keyType, changelog, false, aggs, options);
        Planned ferry = plan(keyType, changelog, true, aggs, options);
        for (long seed = 0; seed < seeds; seed++) {
            Random r = new Random(seed * 31 + 7);
            List<RowData> in = GroupAggregateDifferentialTest.input(seed * 13 + 5, keyType, changelog, rows, keyDomain);
            List<RowData> partials = partialRows(stock, in, 1 + r.nextInt(3), r);
            int[] events = events(r, partials.size(), true);
            long[] times = null;
            if (clock) { // steps of up to 40 ms against a TTL of 50 ms
                times = new long[partials.size()];
                for (int i = 1; i < times.length; i++) {
                    times[i] = times[i - 1] + (r.nextInt(10) == 0 ? r.nextInt(40) : 0);
                }
            }
            List<String> want = runGlobal(stock, partials, events, times);
            List<String> got = runGlobal(ferry, partials, events, times);
            assertIdentical(want, got, "global, " + keyType + (changelog ? " changelog" : "") + ", " + options + ", seed " + seed);
        }
    }

    // ---- the calls -------------------------------------------------------------------------------

    /** Every call of GroupAggregateDifferentialTest.AGGS, one by one. */
    static List<String> calls(String list) {
        List<String> calls = new ArrayList<>();
        for (String c : list.split(",(?![^(]*\\))")) {
            calls.add(c.trim());
        }
        return calls;
    }

    /**
     * Retracting input without MIN or MAX (which take retraction there: {@link #retractingMinMax}
     * covers them), so idle-state TTL leaves the global native too; a COUNT of every column keeps
     * the source row whole.
     */
    static final String RETRACTING_AGGS;

    static {
        List<String> keep = new ArrayList<>();
        for (String c : calls(GroupAggregateDifferentialTest.AGGS)) {
            if (!c.startsWith("MIN(") && !c.startsWith("MAX(")) {
                keep.add(c);
            }
        }
        for (GroupAggregateDifferentialTest.Col c : VALUE_TYPES) {
            keep.add(c.name().startsWith("f") ? "COUNT(*) FILTER (WHERE " + c.name() + ")" : "COUNT(" + c.name() + ")");
        }
        RETRACTING_AGGS = String.join(", ", keep);
    }

    /** No COUNT(*): on retracting input Flink inserts count1, which the partial rows carry. */
    static final String COUNT1_AGGS =
            "SUM(vb), AVG(vi), SUM(vm) FILTER (WHERE fa), AVG(vw), COUNT(vc), COUNT(va), COUNT(ve), SUM(vd), AVG(vf), SUM(vs),"
                    + " COUNT(vt), COUNT(*) FILTER (WHERE fb)";

    /**
     * DISTINCT calls whose two-phase state is native: maps shared by several calls (bitmasks on
     * insert-only input) and not, FILTER, NULLs, NaN and -0.0 as values, every value type an
     * order-free call reads; every column read, so the source row reaches the aggregate whole.
     */
    static final String DISTINCT_AGGS =
            "COUNT(DISTINCT vb), COUNT(DISTINCT vb) FILTER (WHERE fa), SUM(DISTINCT vi), SUM(DISTINCT vb) FILTER (WHERE fb),"
                    + " MIN(DISTINCT vs), MAX(DISTINCT vi) FILTER (WHERE fa), COUNT(DISTINCT vd), COUNT(DISTINCT vf),"
                    + " COUNT(*) FILTER (WHERE fa), SUM(vb) FILTER (WHERE fb), MAX(vi) FILTER (WHERE fa), AVG(vd) FILTER (WHERE fb),"
                    + " COUNT(vt), COUNT(DISTINCT vc), MAX(DISTINCT vc) FILTER (WHERE fb), COUNT(DISTINCT vm) FILTER (WHERE fa),"
                    + " SUM(DISTINCT vt), MIN(vw) FILTER (WHERE fa), MAX(DISTINCT vm), MIN(vc), COUNT(DISTINCT va),"
                    + " MAX(DISTINCT ve) FILTER (WHERE fa), COUNT(DISTINCT ve), MIN(va), COUNT(vw)";

    /**
     * DISTINCT calls on retracting input (counts: one per map of one call, long[] for maps
     * shared by two or three), no MIN/MAX (they take retraction there).
     */
    static final String RETRACTING_DISTINCT_AGGS =
            "COUNT(DISTINCT vb), COUNT(DISTINCT vb) FILTER (WHERE fa), SUM(DISTINCT vi), SUM(DISTINCT vb) FILTER (WHERE fb),"
                    + " COUNT(DISTINCT vd), COUNT(DISTINCT vf), COUNT(*) FILTER (WHERE fa), SUM(vb) FILTER (WHERE fb),"
                    + " AVG(vd) FILTER (WHERE fb), COUNT(vt), COUNT(DISTINCT vc), COUNT(DISTINCT vm) FILTER (WHERE fa),"
                    + " SUM(DISTINCT vt), COUNT(vw), COUNT(DISTINCT va), COUNT(DISTINCT ve) FILTER (WHERE fa),"
                    + " COUNT(DISTINCT ve), COUNT(vs), COUNT(*) FILTER (WHERE fb)";

    /** Every call of AGGS on retracting input: MIN and MAX take retraction (a value→count map). */
    static final String RETRACTING_MIN_MAX_AGGS;

    static {
        List<String> all = new ArrayList<>(calls(GroupAggregateDifferentialTest.AGGS));
        for (GroupAggregateDifferentialTest.Col c : VALUE_TYPES) {
            all.add(c.name().startsWith("f") ? "COUNT(*) FILTER (WHERE " + c.name() + ")" : "COUNT(" + c.name() + ")");
        }
        RETRACTING_MIN_MAX_AGGS = String.join(", ", all);
    }

    /**
     * The halves crossed: Flink's global fed Ferry's local's partial rows, and Ferry's global fed
     * them too, must emit what Flink's global emits from Flink's local's rows (same splits, same
     * bundles, same snapshots).
     */
    void checkCrossed(String keyType, boolean changelog, String aggs, int size, long seeds, int rows) throws Exception {
        Planned stock = plan(keyType, changelog, false, aggs, twoPhase(size));
        Planned ferry = plan(keyType, changelog, true, aggs, twoPhase(size));
        for (long seed = 0; seed < seeds; seed++) {
            List<RowData> in = GroupAggregateDifferentialTest.input(seed * 11 + 3, keyType, changelog, rows, 0);
            int locals = 1 + (int) (seed % 3);
            List<RowData> flinks = partialRows(stock, in, locals, new Random(seed));
            List<RowData> ferrys = partialRows(ferry, in, locals, new Random(seed));
            assertEquals(flinks.size(), ferrys.size(), "partial rows");
            int[] events = events(new Random(seed + 1), flinks.size(), true);
            String what = keyType + (changelog ? " changelog" : "") + ", size " + size + ", seed " + seed;
            List<String> want = runGlobal(stock, flinks, events, null);
            assertIdentical(want, runGlobal(stock, ferrys, events, null), "Ferry's local, Flink's global, " + what);
            assertIdentical(want, runGlobal(ferry, ferrys, events, null), "Ferry's local, Ferry's global, " + what);
        }
    }

    // ---- tests -----------------------------------------------------------------------------------

    /**
     * MIN and MAX with retraction over every type: the accumulators (extreme, mapSize, value
     * counts, negative ones included) in the local's partial rows, merged by the global, the
     * halves crossed.
     */
    /** Whether {@code op} is Ferry's native operator running a spec of class {@code spec}. */
    static boolean runs(Object op, Class<? extends NativeSpec> spec) {
        return op instanceof OneInputNativeOperator && spec.isInstance(((OneInputNativeOperator<?>) op).spec());
    }

    @Test
    void retractingMinMax() throws Exception {
        for (int size : new int[] {1, 4, 100}) {
            checkLocal("INT", true, RETRACTING_MIN_MAX_AGGS, size, 3, 400, 0);
            checkGlobal("STRING", true, RETRACTING_MIN_MAX_AGGS, twoPhase(size), 3, 500, 0, false);
            checkCrossed("BIGINT", true, RETRACTING_MIN_MAX_AGGS, size, 2, 400);
        }
    }

    /** DISTINCT maps in the local's partial rows: Flink's entries, bits and counts. */
    @Test
    void localDistinct() throws Exception {
        for (int size : new int[] {1, 4, 100}) {
            checkLocal("BIGINT", false, DISTINCT_AGGS, size, 3, 400, 0);
            checkLocal("STRING", true, RETRACTING_DISTINCT_AGGS, size, 3, 400, 0);
        }
    }

    /**
     * DISTINCT maps merged by the global (first sight and last removal run the calls; negative
     * counts from the locals), with snapshots and restores of its distinct state, and the halves
     * crossed.
     */
    @Test
    void globalDistinct() throws Exception {
        for (int size : new int[] {1, 5, 100}) {
            checkGlobal("INT", false, DISTINCT_AGGS, twoPhase(size), 3, 500, 0, false);
            checkGlobal("DECIMAL(10, 2)", true, RETRACTING_DISTINCT_AGGS, twoPhase(size), 3, 500, 0, false);
            checkCrossed("BIGINT", false, DISTINCT_AGGS, size, 3, 400);
            checkCrossed("STRING", true, RETRACTING_DISTINCT_AGGS, size, 3, 400);
        }
    }

    @Test
    void localInsertOnly() throws Exception {
        for (int size : new int[] {1, 3, 7, 100}) {
            checkLocal("BIGINT", false, GroupAggregateDifferentialTest.AGGS, size, 3, 400, 0);
        }
    }

    @Test
    void localRetracting() throws Exception {
        for (int size : new int[] {1, 4, 100}) {
            checkLocal("STRING", true, RETRACTING_AGGS, size, 3, 400, 0);
            checkLocal("DECIMAL(38, 4)", true, COUNT1_AGGS + ", COUNT(vw), COUNT(vb), COUNT(vi), COUNT(vd), COUNT(vf), COUNT(vs),"
                    + " COUNT(vm), COUNT(*) FILTER (WHERE fa)", size, 2, 400, 0);
        }
    }

    @Test
    void globalInsertOnly() throws Exception {
        for (int size : new int[] {1, 5, 100}) {
            checkGlobal("BIGINT", false, GroupAggregateDifferentialTest.AGGS, twoPhase(size), 3, 500, 0, false);
        }
    }

    @Test
    void globalRetracting() throws Exception {
        for (int size : new int[] {1, 5, 100}) {
            checkGlobal("INT", true, RETRACTING_AGGS, twoPhase(size), 3, 500, 0, false);
            checkGlobal("STRING", true, COUNT1_AGGS + ", COUNT(vw), COUNT(vb), COUNT(vi), COUNT(vd), COUNT(vf), COUNT(vs),"
                    + " COUNT(vm), COUNT(*) FILTER (WHERE fa)", twoPhase(size), 2, 500, 0, false);
        }
    }

    /** Idle-state TTL: expiry between and within bundles, unchanged results re-emitted. */
    @Test
    void globalIdleStateTtl() throws Exception {
        for (int size : new int[] {1, 7, 100}) {
            checkGlobal("INT", true, RETRACTING_AGGS, withTtl(twoPhase(size), "50 ms"), 3, 400, 0, true);
            // extremes only (they read every column): results soon stop changing, and TTL re-emits them
            checkGlobal("BIGINT", false, GroupAggregateDifferentialTest.EXTREME_AGGS, withTtl(twoPhase(size), "50 ms"), 2, 400, 0, true);
        }
    }

    /**
     * Idle-state TTL with MapViews: the global's DISTINCT maps and MIN/MAX-with-retraction
     * multisets expire entry by entry, apart from the accumulators.
     */
    @Test
    void globalIdleStateTtlWithMapViews() throws Exception {
        for (int size : new int[] {1, 7, 100}) {
            Map<String, String> ttl = withTtl(twoPhase(size), "50 ms");
            checkGlobal("INT", false, DISTINCT_AGGS, ttl, 3, 400, 0, true);
            checkGlobal("STRING", true, RETRACTING_DISTINCT_AGGS, ttl, 3, 400, 0, true);
            checkGlobal("BIGINT", true, RETRACTING_MIN_MAX_AGGS, ttl, 3, 400, 0, true);
        }
    }

    /**
     * Thousands of keys: bundles of hundreds of keys grow the HashMap of both halves, which keeps
     * its table from bundle to bundle and starts over after a restore.
     */
    @Test
    void manyKeys() throws Exception {
        for (int size : new int[] {500, 2000}) {
            checkLocal("BIGINT", true, RETRACTING_AGGS, size, 1, 6000, 3000);
            checkGlobal("STRING", false, GroupAggregateDifferentialTest.AGGS, twoPhase(size), 1, 6000, 3000, false);
        }
    }

    /**
     * Random aggregate lists over random key types, input kinds and bundle sizes, both halves.
     * {@code -Dferry.differential.combos=N} runs N combinations (default 8) drawn with {@code
     * -Dferry.differential.seed=S} (default 2026).
     */
    @Test
    void randomAggregateLists() throws Exception {
        List<String> keyTypes = List.of("BIGINT", "INT", "STRING", "SMALLINT", "TINYINT NOT NULL", "BOOLEAN", "DATE",
                "TIMESTAMP(3)", "TIMESTAMP(9)", "DECIMAL(10, 2)", "DECIMAL(38, 4)");
        int combos = Integer.getInteger("ferry.differential.combos", 8);
        Random r = new Random(Long.getLong("ferry.differential.seed", 2026));
        for (int combo = 0; combo < combos; combo++) {
            boolean changelog = r.nextBoolean();
            List<String> pool = calls(changelog ? RETRACTING_AGGS : GroupAggregateDifferentialTest.AGGS);
            List<String> picked = new ArrayList<>();
            for (int n = 1 + r.nextInt(6); n > 0; n--) {
                picked.add(pool.get(r.nextInt(pool.size())));
            }
            for (GroupAggregateDifferentialTest.Col c : VALUE_TYPES) {
                picked.add(c.name().startsWith("f") ? "COUNT(*) FILTER (WHERE " + c.name() + ")" : "COUNT(" + c.name() + ")");
            }
            Collections.shuffle(picked, r);
            String aggs = String.join(", ", picked);
            String keyType = keyTypes.get(r.nextInt(keyTypes.size()));
            int size = new int[] {1, 2, 7, 64}[r.nextInt(4)];
            try {
                checkLocal(keyType, changelog, aggs, size, 2, 300, 0);
                checkGlobal(keyType, changelog, aggs, twoPhase(size), 2, 300, 0, false);
            } catch (AssertionError e) {
                throw new AssertionError("combo " + combo + ": GROUP BY " + keyType + (changelog ? " (changelog)" : "")
                        + ", size " + size + ": " + aggs + ": " + e.getMessage(), e);
            }
        }
    }

    /**
     * Rescaling the global aggregate as Flink does, Flink's operator and Ferry's alike: N keyed
     * harnesses fed the partial rows Flink's exchange routes to each, snapshotted, their states
     * merged and cut for M new subtasks ({@code repackageState}, {@code repartitionOperatorState}),
     * and the stream continued, routed for M. Every subtask's output must be identical.
     */
    @Test
    void globalRescale() throws Exception {
        Planned stock = plan("BIGINT", true, false, RETRACTING_AGGS, twoPhase(50));
        Planned ferry = plan("BIGINT", true, true, RETRACTING_AGGS, twoPhase(50));
        for (int[] fromTo : new int[][] {{1, 3}, {3, 2}, {2, 1}, {2, 4}}) {
            int from = fromTo[0];
            int to = fromTo[1];
            List<RowData> in = GroupAggregateDifferentialTest.input(from * 7L + to, "BIGINT", true, 3000, 200);
            List<RowData> partials = partialRows(stock, in, 2, new Random(from * 10L + to));
            List<List<String>> want = rescaled(stock, partials, from, to);
            List<List<String>> got = rescaled(ferry, partials, from, to);
            for (int s = 0; s < want.size(); s++) {
                assertIdentical(want.get(s), got.get(s), from + " -> " + to + ", output " + s);
            }
        }
    }

    /**
     * Flink's operator snapshotted, then Flink's and Ferry's restored from that snapshot and fed the
     * rest of the stream: Ferry's global aggregate imports Flink's {@code accState} ({@link
     * FlinkAccState}) and its output must be Flink's, for every value type and accumulator of
     * {@link #RETRACTING_AGGS}, for {@link #COUNT1_AGGS} (count1 inserted) and for DISTINCT calls
     * (their MapStates, bitmasks and counts, imported with the accumulators). The local
     * aggregate, which is not keyed and keeps no state in either form, continues from Flink's
     * snapshot with Flink's partial rows.
     */
    @Test
    void switchingOnAcrossASnapshot() throws Exception {
        for (String aggs : List.of(RETRACTING_AGGS, COUNT1_AGGS, RETRACTING_DISTINCT_AGGS)) {
            Planned stock = plan("BIGINT", true, false, aggs, twoPhase(10));
            Planned ferry = plan("BIGINT", true, true, aggs, twoPhase(10));
            List<RowData> in = GroupAggregateDifferentialTest.input(99, "BIGINT", true, 400, 0);
            List<RowData> partials = partialRows(stock, in, 2, new Random(99));
            OperatorSubtaskState globalState = stockGlobalSnapshot(stock, partials.subList(0, 100));
            List<List<String>> outs = new ArrayList<>();
            for (Planned restored : List.of(stock, ferry)) {
                long imported = FlinkAccState.importedKeys();
                KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> h = globalHarness(restored, globalState);
                if (restored == ferry) {
                    assertTrue(FlinkAccState.importedKeys() > imported, "Ferry's global aggregate imported Flink's accState");
                }
                for (RowData row : partials.subList(100, partials.size())) {
                    h.processElement(new StreamRecord<>(row));
                }
                h.prepareSnapshotPreBarrier(2);
                outs.add(render(h.extractOutputValues(), stock.globalOutput()));
                h.close();
            }
            assertTrue(outs.get(0).size() > 50, "the restored global emitted: " + outs.get(0).size());
            assertIdentical(outs.get(0), outs.get(1), "global restored from Flink's snapshot: " + aggs);
        }

        Planned stock = plan("BIGINT", true, false, RETRACTING_AGGS, twoPhase(10));
        Planned ferry = plan("BIGINT", true, true, RETRACTING_AGGS, twoPhase(10));
        List<RowData> in = GroupAggregateDifferentialTest.input(99, "BIGINT", true, 400, 0);
        List<List<String>> outs = new ArrayList<>();
        for (Planned restored : List.of(stock, ferry)) {
            OneInputStreamOperatorTestHarness<RowData, RowData> h = localHarness(stock, null);
            for (RowData row : in.subList(0, 205)) {
                h.processElement(new StreamRecord<>(row));
            }
            h.prepareSnapshotPreBarrier(1);
            OperatorSubtaskState localState = h.snapshot(1, 1);
            h.close();
            h = localHarness(restored, localState);
            for (RowData row : in.subList(205, in.size())) {
                h.processElement(new StreamRecord<>(row));
            }
            h.prepareSnapshotPreBarrier(2);
            outs.add(render(h.extractOutputValues(), stock.localOutput()));
            h.close();
        }
        assertIdentical(outs.get(0), outs.get(1), "local restored from Flink's snapshot");
    }

    /** A snapshot of Flink's global aggregate after {@code partials}. */
    static OperatorSubtaskState stockGlobalSnapshot(Planned stock, List<RowData> partials) throws Exception {
        KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> flinks = globalHarness(stock, null);
        for (RowData row : partials) {
            flinks.processElement(new StreamRecord<>(row));
        }
        flinks.prepareSnapshotPreBarrier(1);
        OperatorSubtaskState state = flinks.snapshot(1, 1);
        flinks.close();
        return state;
    }

    /** Each old subtask's output, then each new one's, around a rescale from {@code from} to {@code to}. */
    static List<List<String>> rescaled(Planned p, List<RowData> partials, int from, int to) throws Exception {
        int maxParallelism = 128;
        int split = partials.size() / 2;
        List<List<String>> outs = new ArrayList<>();
        List<KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData>> hs = new ArrayList<>();
        for (int i = 0; i < from; i++) {
            hs.add(keyedHarness(p, maxParallelism, from, i, null));
        }
        feed(p, hs, partials.subList(0, split), maxParallelism);
        List<OperatorSubtaskState> snapshots = new ArrayList<>();
        for (var h : hs) {
            h.prepareSnapshotPreBarrier(1);
            outs.add(render(h.extractOutputValues(), p.globalOutput()));
            snapshots.add(h.snapshot(1, 1));
            h.close();
        }
        OperatorSubtaskState merged = AbstractStreamOperatorTestHarness.repackageState(snapshots.toArray(new OperatorSubtaskState[0]));
        hs.clear();
        for (int j = 0; j < to; j++) {
            hs.add(keyedHarness(p, maxParallelism, to, j,
                    AbstractStreamOperatorTestHarness.repartitionOperatorState(merged, maxParallelism, from, to, j)));
        }
        feed(p, hs, partials.subList(split, partials.size()), maxParallelism);
        for (var h : hs) {
            h.prepareSnapshotPreBarrier(2);
            outs.add(render(h.extractOutputValues(), p.globalOutput()));
            h.close();
        }
        return outs;
    }

    static KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> keyedHarness(
            Planned p, int maxParallelism, int parallelism, int subtask, OperatorSubtaskState state) throws Exception {
        KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> h =
                new KeyedOneInputStreamOperatorTestHarness<>(
                        InstantiationUtil.clone(p.global()), p.globalKeys(), p.globalKeyType(), maxParallelism, parallelism, subtask);
        h.setup(new RowDataSerializer(p.globalOutput()));
        if (state != null) {
            h.initializeState(state);
        }
        h.open();
        return h;
    }

    static void feed(Planned p, List<KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData>> hs, List<RowData> rows,
            int maxParallelism) throws Exception {
        for (RowData row : rows) {
            int subtask = org.apache.flink.runtime.state.KeyGroupRangeAssignment.assignKeyToParallelOperator(
                    p.globalKeys().getKey(row), maxParallelism, hs.size());
            hs.get(subtask).processElement(new StreamRecord<>(row));
        }
    }
}
