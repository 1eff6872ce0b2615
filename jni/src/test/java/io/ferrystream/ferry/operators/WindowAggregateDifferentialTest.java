package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.windowaggregate.FerryWindowAggregateOperator;
import io.ferrystream.ferry.kinds.windowaggregate.WindowAggregateKind;
import io.ferrystream.ferry.planner.Ferry;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
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
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.runtime.keyselector.RowDataKeySelector;
import org.apache.flink.table.runtime.operators.window.tvf.common.WindowAggOperator;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.LogicalTypeRoot;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.Row;
import org.apache.flink.util.InstantiationUtil;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Flink's own {@code WindowAggOperator} (planned by Flink 2.3 with Ferry off, single-phase: the
 * operator {@code StreamExecWindowAggregate} builds, with its slice assigner, shift time zone,
 * generated aggregate handler and window properties) and Ferry's ({@link
 * FerryWindowAggregateOperator}, planned for the same query with Ferry and the preview on), each in
 * Flink's keyed one-input harness on the heap state backend, fed the same random stream: row times
 * around the watermark (late rows, rows of fired slices whose last window is open), NULL keys and
 * values, -0.0 and doubles whose sums depend on their order, watermarks that repeat or go back,
 * checkpoint barriers (Flink's window buffer flushes there, which registers its timers earlier) and
 * snapshots restored into fresh operators. Both must emit identical sequences: rows (every field),
 * their order across keys (Flink's timer heap, fed in the buffer's order) and the watermarks. The
 * number of rows batched before they reach Go does not matter (the buffer's order is the rows'
 * arrival order either way), so batches of 1 and 64 rows are both compared row for row.
 */
class WindowAggregateDifferentialTest {
    /** A planned window aggregate with its state key selector and row types. */
    record Planned(
            OneInputStreamOperator<RowData, RowData> operator,
            KeySelector<RowData, RowData> keySelector,
            TypeInformation<RowData> keyType,
            RowType in,
            RowType out) {}

    /**
     * The query over T(k BIGINT, v INT, d DOUBLE, s STRING, rt TIMESTAMP(3), ms BIGINT, lt AS
     * TO_TIMESTAMP_LTZ(ms, 3)), row time rt, or lt in {@code zone} when it is not null.
     */
    static Planned plan(String query, boolean ferry, int batchSize, String zone) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        tEnv.getConfig().set(WindowAggregateKind.ENABLED, ferry);
        tEnv.getConfig().set(FerryOptions.BATCH_SIZE, batchSize);
        tEnv.getConfig().set(FerryOptions.BATCH_MAX_DELAY, Duration.ofHours(1));
        tEnv.getConfig().set("table.optimizer.agg-phase-strategy", "ONE_PHASE");
        if (zone != null) {
            tEnv.getConfig().set("table.local-time-zone", zone);
        }
        Ferry.install(tEnv);
        RowTypeInfo type = new RowTypeInfo(
                new TypeInformation<?>[] {Types.LONG, Types.INT, Types.DOUBLE, Types.STRING, Types.LOCAL_DATE_TIME, Types.LONG},
                new String[] {"k", "v", "d", "s", "rt", "ms"});
        DataStream<Row> source = env.fromData(List.of(new Row(6)), type);
        Schema.Builder schema = Schema.newBuilder()
                .column("k", "BIGINT").column("v", "INT").column("d", "DOUBLE").column("s", "STRING")
                .column("rt", "TIMESTAMP(3)").column("ms", "BIGINT")
                .columnByExpression("lt", "TO_TIMESTAMP_LTZ(ms, 3)");
        schema.watermark(zone != null ? "lt" : "rt", zone != null ? "lt" : "rt");
        tEnv.createTemporaryView("T", tEnv.fromDataStream(source, schema.build()));
        tEnv.toDataStream(tEnv.sqlQuery(query)).print();
        StreamGraph graph = env.getStreamGraph();
        for (StreamNode node : graph.getStreamNodes()) {
            StreamOperatorFactory<?> factory = node.getOperatorFactory();
            if (!(factory instanceof SimpleOperatorFactory)) {
                continue;
            }
            Object op = ((SimpleOperatorFactory<?>) factory).getOperator();
            if (op instanceof WindowAggOperator || op instanceof FerryWindowAggregateOperator) {
                assertEquals(ferry, op instanceof FerryWindowAggregateOperator, "planned operator " + op);
                @SuppressWarnings("unchecked")
                KeySelector<RowData, RowData> selector = (KeySelector<RowData, RowData>) node.getStatePartitioners()[0];
                @SuppressWarnings("unchecked")
                OneInputStreamOperator<RowData, RowData> operator = (OneInputStreamOperator<RowData, RowData>) op;
                Field types = RowDataSerializer.class.getDeclaredField("types");
                types.setAccessible(true);
                RowType in = RowType.of((LogicalType[]) types.get(node.getTypeSerializersIn()[0]));
                RowType out = RowType.of((LogicalType[]) types.get(node.getTypeSerializerOut()));
                return new Planned(operator, selector, ((RowDataKeySelector) selector).getProducedType(), in, out);
            }
        }
        throw new AssertionError("no window aggregate in the plan");
    }

    /** One step: a row, a watermark, a checkpoint barrier, or a snapshot and restore. */
    record Step(char kind, GenericRowData row, long time) {}

    /**
     * A random stream of the operator's input rows: the row time (a TIMESTAMP or TIMESTAMP_LTZ
     * field) within 12 s around the watermark, in whole seconds half the time (many rows share a
     * slice), a few keys (one NULL), values with NULLs, doubles among -0.0, 0.0 and values whose
     * sums round by order; watermarks advancing by up to 4 s (sometimes repeating or going back),
     * barriers and snapshots.
     */
    static List<Step> steps(long seed, int n, RowType type, long origin) {
        Random r = new Random(seed);
        List<Step> steps = new ArrayList<>();
        long wm = origin;
        int keys = 1 + r.nextInt(6);
        for (int i = 0; i < n; i++) {
            int x = r.nextInt(100);
            if (x < 80) {
                long t = wm - 6000 + r.nextInt(12_000);
                if (r.nextBoolean()) {
                    t = Math.floorDiv(t, 1000) * 1000;
                }
                GenericRowData row = new GenericRowData(type.getFieldCount());
                boolean keySet = false;
                for (int f = 0; f < type.getFieldCount(); f++) {
                    LogicalTypeRoot root = type.getTypeAt(f).getTypeRoot();
                    switch (root) {
                        case TIMESTAMP_WITHOUT_TIME_ZONE, TIMESTAMP_WITH_LOCAL_TIME_ZONE -> row.setField(f, TimestampData.fromEpochMillis(t));
                        case BIGINT -> {
                            if (!keySet) {
                                keySet = true;
                                row.setField(f, r.nextInt(7) == 0 ? null : (long) r.nextInt(keys));
                            } else {
                                row.setField(f, t);
                            }
                        }
                        case INTEGER -> row.setField(f, r.nextInt(6) == 0 ? null : r.nextInt(41) - 20);
                        case DOUBLE -> row.setField(f, switch (r.nextInt(6)) {
                            case 0 -> null;
                            case 1 -> -0.0;
                            case 2 -> 0.1 * r.nextInt(30);
                            case 3 -> 1e16;
                            case 4 -> -1e16;
                            default -> r.nextInt(100) / 7.0;
                        });
                        case VARCHAR -> row.setField(f, r.nextInt(8) == 0 ? null : StringData.fromString("s" + r.nextInt(12)));
                        default -> throw new AssertionError("field " + f + " of type " + type.getTypeAt(f));
                    }
                }
                steps.add(new Step('r', row, t));
            } else if (x < 93) {
                long w = wm + r.nextInt(4000) - (r.nextInt(8) == 0 ? 3000 : 0);
                wm = Math.max(wm, w);
                steps.add(new Step('w', null, w));
            } else if (x < 97) {
                steps.add(new Step('b', null, 0));
            } else {
                steps.add(new Step('s', null, 0));
            }
        }
        steps.add(new Step('w', null, Long.MAX_VALUE));
        return steps;
    }

    static KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> harness(Planned p, OperatorSubtaskState state)
            throws Exception {
        OneInputStreamOperator<RowData, RowData> operator = InstantiationUtil.clone(p.operator());
        KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> h =
                new KeyedOneInputStreamOperatorTestHarness<>(operator, p.keySelector(), p.keyType());
        if (operator instanceof FerryWindowAggregateOperator) {
            HarnessMemory.outsideBudget(h);
        }
        h.setup(new RowDataSerializer(p.out()));
        if (state != null) {
            h.initializeState(state);
        }
        h.open();
        return h;
    }

    /** The output of the steps as text: rows and watermarks. */
    static List<String> run(Planned p, List<Step> steps) throws Exception {
        List<String> out = new ArrayList<>();
        long cp = 0;
        KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> h = harness(p, null);
        try {
            for (Step s : steps) {
                switch (s.kind()) {
                    case 'r' -> h.processElement(new StreamRecord<>(DeduplicateDifferentialTest.copy(s.row())));
                    case 'w' -> h.processWatermark(new Watermark(s.time()));
                    case 'b' -> h.prepareSnapshotPreBarrier(++cp);
                    default -> {
                        h.prepareSnapshotPreBarrier(++cp);
                        OperatorSubtaskState state = h.snapshot(cp, cp);
                        collect(h, p.out(), out);
                        h.close();
                        h = harness(p, state);
                    }
                }
            }
        } catch (Exception e) {
            try {
                h.getOperator().close();
            } catch (Exception closing) {
                e.addSuppressed(closing);
            }
            throw e;
        }
        collect(h, p.out(), out);
        h.close();
        return out;
    }

    static void collect(KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> h, RowType type, List<String> into) {
        for (Object o : h.getOutput()) {
            if (o instanceof Watermark w) {
                into.add("WM " + w.getTimestamp());
            } else if (o instanceof StreamRecord<?> rec) {
                into.add(GroupAggregateDifferentialTest.render((RowData) rec.getValue(), type));
            }
        }
        h.getOutput().clear();
    }

    static final String AGGS = "COUNT(*), SUM(v), MAX(d), MIN(s), AVG(v), COUNT(v), SUM(d), MIN(v), AVG(d)";

    /** Flink's output and Ferry's for {@code seeds} streams, row for row, at batch sizes 1 and 64. */
    static void check(String query, String zone, long origin, int seeds) throws Exception {
        Planned stock = plan(query, false, 1, zone);
        assertInstanceOf(WindowAggOperator.class, stock.operator(), query);
        for (int batch : new int[] {1, 64}) {
            Planned ferry = plan(query, true, batch, zone);
            assertInstanceOf(FerryWindowAggregateOperator.class, ferry.operator(), query);
            assertEquals(stock.in(), ferry.in(), "the same input rows");
            assertEquals(stock.out(), ferry.out(), "the same output rows");
            for (long seed = 0; seed < seeds; seed++) {
                List<Step> steps = steps(seed, 400, stock.in(), origin);
                List<String> want = run(stock, steps);
                String what = query + " (zone " + zone + ", batch " + batch + ", seed " + seed + ")";
                assertTrue(want.stream().filter(s -> !s.startsWith("WM ")).count() >= 10, what + ": stock emitted few rows " + want);
                DeduplicateDifferentialTest.assertSame(want, run(ferry, steps), what);
            }
        }
    }

    static String query(String window, String group) {
        return "SELECT " + group + ", " + AGGS + " FROM TABLE(" + window + ") GROUP BY " + group;
    }

    @ParameterizedTest
    @ValueSource(strings = {
        "TUMBLE(TABLE T, DESCRIPTOR(rt), INTERVAL '5' SECOND)",
        "TUMBLE(TABLE T, DESCRIPTOR(rt), INTERVAL '5' SECOND, INTERVAL '2' SECOND)",
        "HOP(TABLE T, DESCRIPTOR(rt), INTERVAL '2' SECOND, INTERVAL '6' SECOND)",
        "HOP(TABLE T, DESCRIPTOR(rt), INTERVAL '3' SECOND, INTERVAL '9' SECOND, INTERVAL '1' SECOND)",
        "CUMULATE(TABLE T, DESCRIPTOR(rt), INTERVAL '2' SECOND, INTERVAL '8' SECOND)"})
    void rowTimeWindows(String window) throws Exception {
        check(query(window, "k, window_start, window_end"), null, 100_000, 6);
        check(query(window, "window_start, window_end, window_time"), null, 100_000, 3);
    }

    /**
     * TIMESTAMP_LTZ windows in the session zone: a zone with daylight saving around a change of
     * its clocks (Flink's DST branch of the timer time and of the next trigger), and a zone
     * without, whose offset the slices divide (Flink's next trigger is then computed in epoch
     * time, and agrees with the windows' timers).
     */
    @ParameterizedTest
    @ValueSource(strings = {"America/New_York", "Asia/Shanghai"})
    void timestampLtzWindows(String zone) throws Exception {
        long origin = zone.equals("America/New_York") ? 1_710_054_000_000L : 1_710_000_000_000L; // 2024-03-10 07:00Z
        check(query("TUMBLE(TABLE T, DESCRIPTOR(lt), INTERVAL '5' SECOND)", "k, window_start, window_end, window_time"),
                zone, origin, 4);
        check(query("CUMULATE(TABLE T, DESCRIPTOR(lt), INTERVAL '2' SECOND, INTERVAL '8' SECOND)", "k, window_start, window_end"),
                zone, origin, 3);
    }
}
