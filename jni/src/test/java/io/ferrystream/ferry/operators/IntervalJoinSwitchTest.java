package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.kinds.intervaljoin.FerryIntervalJoinOperator;
import io.ferrystream.ferry.kinds.intervaljoin.FlinkIntervalJoinState;
import io.ferrystream.ferry.operators.IntervalJoinDifferentialTest.Planned;
import io.ferrystream.ferry.operators.IntervalJoinDifferentialTest.Step;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.SavepointType;
import org.apache.flink.runtime.state.hashmap.HashMapStateBackend;
import org.apache.flink.state.rocksdb.EmbeddedRocksDBStateBackend;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.TwoInputStreamOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedTwoInputStreamOperatorTestHarness;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.util.InstantiationUtil;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import static io.ferrystream.ferry.operators.IntervalJoinDifferentialTest.BOUNDS;
import static io.ferrystream.ferry.operators.IntervalJoinDifferentialTest.PROC_BOUNDS;
import static io.ferrystream.ferry.operators.IntervalJoinDifferentialTest.assertSame;
import static io.ferrystream.ferry.operators.IntervalJoinDifferentialTest.collect;
import static io.ferrystream.ferry.operators.IntervalJoinDifferentialTest.plan;
import static io.ferrystream.ferry.operators.IntervalJoinDifferentialTest.procSteps;
import static io.ferrystream.ferry.operators.IntervalJoinDifferentialTest.steps;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Switching Ferry on and off for an interval join across a snapshot (docs/state.md, "Switching
 * Ferry on or off"): Flink's planned interval join snapshotted mid-stream and restored into
 * Ferry's ({@link FlinkIntervalJoinState} imports its caches, cleanup times and timers), Ferry's
 * savepointed and restored into Flink's (it writes them), and back and forth; the changelog after
 * every restore equals that of Flink's operator restored from its own snapshots, row for row and
 * watermark for watermark, on the heap backend; on RocksDB the rows between watermarks are the
 * same (each operator emits them in its own order there).
 */
class IntervalJoinSwitchTest {

    /**
     * Runs the steps: the part before the first snapshot on {@code operators[0]}, the part after
     * snapshot i on {@code operators[min(i, n - 1)]}, each restored from the snapshot before it:
     * checkpoints, or canonical savepoints.
     */
    static List<String> run(List<Planned> operators, List<Step> steps, boolean savepoints) throws Exception {
        return run(operators, steps, savepoints, HEAP);
    }

    static final String HEAP = "heap", HEAP_TRACKED = "heap with state latency tracking", ROCKSDB = "rocksdb";

    /** {@link #run(List, List, boolean)} on {@code backend}. */
    static List<String> run(List<Planned> operators, List<Step> steps, boolean savepoints, String backend) throws Exception {
        Planned first = operators.get(0);
        RowDataSerializer left = new RowDataSerializer(first.leftType());
        RowDataSerializer right = new RowDataSerializer(first.rightType());
        List<String> out = new ArrayList<>();
        KeyedTwoInputStreamOperatorTestHarness<RowData, RowData, RowData, RowData> h = harness(first, null, backend);
        int segment = 0;
        long cp = 0;
        long clock = 0;
        for (Step s : steps) {
            switch (s.kind()) {
                case 'p':
                    clock = s.time();
                    h.setProcessingTime(clock);
                    break;
                case 'r':
                    if (s.input() == 1) {
                        h.processElement1(new StreamRecord<>(left.toBinaryRow(s.row()).copy()));
                    } else {
                        h.processElement2(new StreamRecord<>(right.toBinaryRow(s.row()).copy()));
                    }
                    break;
                case 'w':
                    if (s.input() == 1) {
                        h.processWatermark1(new Watermark(s.time()));
                    } else {
                        h.processWatermark2(new Watermark(s.time()));
                    }
                    break;
                default:
                    h.prepareSnapshotPreBarrier(++cp);
                    OperatorSubtaskState state = savepoints
                            ? h.snapshotWithLocalState(cp, cp, SavepointType.savepoint(SavepointFormatType.CANONICAL))
                                    .getJobManagerOwnedState()
                            : h.snapshot(cp, cp);
                    collect(h, first.outputType(), out);
                    h.close();
                    segment++;
                    h = harness(operators.get(Math.min(segment, operators.size() - 1)), state, backend);
                    h.setProcessingTime(clock);
                    out.add("restored");
            }
        }
        h.prepareSnapshotPreBarrier(++cp);
        collect(h, first.outputType(), out);
        h.close();
        return out;
    }

    static KeyedTwoInputStreamOperatorTestHarness<RowData, RowData, RowData, RowData> harness(
            Planned p, OperatorSubtaskState state, String backend) throws Exception {
        if (backend.equals(HEAP)) {
            return IntervalJoinDifferentialTest.harness(p, state);
        }
        TwoInputStreamOperator<RowData, RowData, RowData> operator = InstantiationUtil.clone(p.operator());
        KeyedTwoInputStreamOperatorTestHarness<RowData, RowData, RowData, RowData> h =
                new KeyedTwoInputStreamOperatorTestHarness<>(operator, p.leftKeys(), p.rightKeys(), p.keyType());
        if (backend.equals(ROCKSDB)) {
            EmbeddedRocksDBStateBackend rocks = new EmbeddedRocksDBStateBackend(false);
            rocks.getMemoryConfiguration().setFixedMemoryPerSlot("64mb"); // the harness has no managed memory for it
            h.setStateBackend(rocks);
        } else { // Flink wraps every state in a latency-tracking state
            Configuration conf = new Configuration();
            conf.setString("state.latency-track.keyed-state-enabled", "true");
            h.setStateBackend(new HashMapStateBackend().configure(conf, IntervalJoinSwitchTest.class.getClassLoader()));
        }
        h.setup(new RowDataSerializer(p.outputType()));
        if (state != null) {
            h.initializeState(state);
        }
        h.open();
        assertTrue(((AbstractStreamOperator<?>) h.getOperator()).getKeyedStateBackend().getClass().getSimpleName()
                .contains(backend.equals(ROCKSDB) ? "RocksDB" : "Heap"));
        return h;
    }

    /**
     * The output with the rows between two watermarks (or restores) sorted: on RocksDB Flink's
     * operator emits in the order of RocksDB's keys, Ferry's in the heap backend's order
     * (docs/operators/interval-join.md#emission-order); the rows are the same.
     */
    static List<String> perWatermark(List<String> out) {
        List<String> result = new ArrayList<>();
        List<String> rows = new ArrayList<>();
        for (String s : out) {
            if (s.startsWith("WM") || s.equals("restored")) {
                Collections.sort(rows);
                result.addAll(rows);
                rows.clear();
                result.add(s);
            } else {
                rows.add(s);
            }
        }
        Collections.sort(rows);
        result.addAll(rows);
        return result;
    }

    /** Ferry's operator and Flink's, alternating for n segments, starting with {@code first}. */
    static List<Planned> alternating(Planned first, Planned second, int n) {
        List<Planned> ops = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            ops.add(i % 2 == 0 ? first : second);
        }
        return ops;
    }

    /** The steps with one snapshot, in the middle, instead of theirs. */
    static List<Step> oneSnapshot(List<Step> steps) {
        List<Step> s = new ArrayList<>(steps);
        s.removeIf(x -> x.kind() == 's');
        s.add(s.size() / 2, new Step('s', 0, null, 0));
        return s;
    }

    static void check(String joinType, String condition, boolean proctime, long seeds) throws Exception {
        Planned stock = plan(joinType, condition, false, 1, proctime);
        Planned ferry = plan(joinType, condition, true, 3, proctime);
        assertInstanceOf(FerryIntervalJoinOperator.class, ferry.operator());
        for (long seed = 0; seed < seeds; seed++) {
            String what = joinType + " JOIN ON " + condition + ", seed " + seed;
            // Flink's operator keeps NULL keys' rows of an unpadded side, which Ferry does not keep:
            // they switch on only (Ferry refuses to write them: nullKeysSwitchOnOnly)
            List<Step> withNulls = proctime ? procSteps(seed * 17 + 3, 600) : steps(seed * 17 + 3, 600, true);
            List<Step> noNulls = proctime ? procSteps(seed * 17 + 5, 600, 0) : steps(seed * 17 + 5, 600, 0, -3);
            long imported = FlinkIntervalJoinState.importedKeys();
            assertSame(run(List.of(stock), withNulls, false), run(List.of(stock, ferry), withNulls, false),
                    what + ": Flink's operator, then Ferry's, across checkpoints");
            List<Step> once = oneSnapshot(withNulls); // Ferry's later savepoints would hold NULL keys
            assertSame(run(List.of(stock), once, true), run(List.of(stock, ferry), once, true),
                    what + ": Flink's operator, then Ferry's, across a savepoint");
            assertTrue(FlinkIntervalJoinState.importedKeys() > imported, what + ": Ferry imported Flink's state");
            List<String> want = run(List.of(stock), noNulls, true);
            assertSame(want, run(List.of(ferry, stock), noNulls, true), what + ": Ferry's operator, then Flink's, across savepoints");
            assertSame(want, run(List.of(ferry), noNulls, true), what + ": Ferry's operator across its savepoints (Flink's form)");
            assertSame(want, run(alternating(ferry, stock, 40), noNulls, true), what + ": Ferry's, Flink's, Ferry's, ... across savepoints");
            assertSame(want, run(alternating(stock, ferry, 40), noNulls, true), what + ": Flink's, Ferry's, Flink's, ... across savepoints");
        }
    }

    /**
     * On RocksDB: Flink's operator restored into Ferry's from checkpoints and from a savepoint,
     * Ferry's into Flink's and alternating across savepoints; the rows between watermarks equal
     * Flink's run (their order is each operator's own).
     */
    static void checkRocksDb(String joinType, String condition, boolean proctime, long seed) throws Exception {
        Planned stock = plan(joinType, condition, false, 1, proctime);
        Planned ferry = plan(joinType, condition, true, 3, proctime);
        String what = joinType + " JOIN ON " + condition + " on RocksDB, seed " + seed;
        List<Step> withNulls = proctime ? procSteps(seed * 17 + 3, 600) : steps(seed * 17 + 3, 600, true);
        List<Step> noNulls = proctime ? procSteps(seed * 17 + 5, 600, 0) : steps(seed * 17 + 5, 600, 0, -3);
        long imported = FlinkIntervalJoinState.importedKeys();
        assertSame(perWatermark(run(List.of(stock), withNulls, false, ROCKSDB)),
                perWatermark(run(List.of(stock, ferry), withNulls, false, ROCKSDB)), what + ": Flink's, then Ferry's, across checkpoints");
        List<Step> once = oneSnapshot(withNulls);
        assertSame(perWatermark(run(List.of(stock), once, true, ROCKSDB)),
                perWatermark(run(List.of(stock, ferry), once, true, ROCKSDB)), what + ": Flink's, then Ferry's, across a savepoint");
        assertTrue(FlinkIntervalJoinState.importedKeys() > imported, what + ": Ferry imported Flink's state");
        List<String> want = perWatermark(run(List.of(stock), noNulls, true, ROCKSDB));
        assertSame(want, perWatermark(run(List.of(ferry, stock), noNulls, true, ROCKSDB)), what + ": Ferry's, then Flink's, across savepoints");
        assertSame(want, perWatermark(run(alternating(ferry, stock, 40), noNulls, true, ROCKSDB)), what + ": alternating across savepoints");
    }

    @Test
    void rocksDb() throws Exception {
        checkRocksDb("LEFT", BOUNDS, false, 0);
        checkRocksDb("FULL", BOUNDS + " AND (L.v <> R.w OR R.a IS NULL)", false, 1);
        checkRocksDb("FULL", PROC_BOUNDS, true, 0);
    }

    /**
     * Flink's state inside the wrappers of state latency tracking: the import reads the heap
     * backend's HashMaps inside them, and the switch keeps Flink's order.
     */
    @Test
    void latencyTrackedHeapState() throws Exception {
        Planned stock = plan("FULL", BOUNDS, false, 1, false);
        Planned ferry = plan("FULL", BOUNDS, true, 3, false);
        List<Step> steps = oneSnapshot(steps(11, 600, 0, -3));
        for (boolean savepoints : new boolean[] {false, true}) {
            assertSame(run(List.of(stock), steps, savepoints, HEAP_TRACKED), run(List.of(stock, ferry), steps, savepoints, HEAP_TRACKED),
                    "FULL JOIN, latency-tracked heap state, Flink's operator, then Ferry's, savepoint " + savepoints);
        }
    }

    @Test
    void rowTime() throws Exception {
        check("", BOUNDS, false, 2);
        check("LEFT", BOUNDS, false, 2);
        check("RIGHT", "L.k = R.k AND L.rt BETWEEN R.rt - INTERVAL '2' SECOND AND R.rt", false, 2);
        check("FULL", BOUNDS + " AND (L.v <> R.w OR R.a IS NULL)", false, 2);
    }

    @Test
    void processingTime() throws Exception {
        check("", PROC_BOUNDS, true, 2);
        check("LEFT", PROC_BOUNDS, true, 2);
        check("FULL", PROC_BOUNDS + " AND (L.v <> R.w OR R.a IS NULL)", true, 2);
    }

    /**
     * A savepoint of Ferry's operator holding rows of a NULL key on a side that is not padded
     * (rows Ferry never keeps, as they never join) cannot be written in Flink's form: it fails,
     * naming why, and the operator goes on.
     */
    @Test
    void nullKeysSwitchOnOnly() throws Exception {
        Planned ferry = plan("LEFT", BOUNDS, true, 1, false);
        List<Step> steps = steps(7, 200, 50, -3);
        RowDataSerializer right = new RowDataSerializer(ferry.rightType());
        KeyedTwoInputStreamOperatorTestHarness<RowData, RowData, RowData, RowData> h = harness(ferry, null, HEAP);
        for (Step s : steps) {
            if (s.kind() == 'r' && s.input() == 2) {
                h.processElement2(new StreamRecord<>(right.toBinaryRow(s.row()).copy()));
            }
        }
        h.prepareSnapshotPreBarrier(1);
        Exception refused = assertThrows(Exception.class,
                () -> h.snapshotWithLocalState(1, 1, SavepointType.savepoint(SavepointFormatType.CANONICAL)));
        String why = String.valueOf(refused.getMessage()) + refused.getCause();
        assertTrue(why.contains("never joins"), why);
        h.snapshot(2, 2); // a checkpoint still works
        h.close();
    }
}
