package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.operators.IntervalJoinDifferentialTest.Planned;
import io.ferrystream.ferry.operators.IntervalJoinDifferentialTest.Step;

import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.SavepointType;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.AbstractStreamOperatorTestHarness;
import org.apache.flink.streaming.util.KeyedTwoInputStreamOperatorTestHarness;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.util.InstantiationUtil;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rescaling the interval join: Flink's operator and Ferry's run the same stream at parallelism
 * {@code from} (each subtask fed the rows of its key groups, every subtask every watermark), are
 * snapshotted mid-stream, their states merged and cut for parallelism {@code to} as Flink's
 * rescaling does, restored and run on. Every subtask's output, rows and watermarks, before and
 * after the rescale, must be identical for the two; with cached rows, matched flags and pending
 * cleanup timers moving between subtasks.
 */
class IntervalJoinRescaleTest {
    static final int MAX_PARALLELISM = 128;

    static KeyedTwoInputStreamOperatorTestHarness<RowData, RowData, RowData, RowData> harness(
            Planned p, int parallelism, int subtask, OperatorSubtaskState state) throws Exception {
        KeyedTwoInputStreamOperatorTestHarness<RowData, RowData, RowData, RowData> h =
                new KeyedTwoInputStreamOperatorTestHarness<>(InstantiationUtil.clone(p.operator()), p.leftKeys(),
                        p.rightKeys(), p.keyType(), MAX_PARALLELISM, parallelism, subtask);
        h.setup(new RowDataSerializer(p.outputType()));
        if (state != null) {
            h.initializeState(state);
        }
        h.open();
        return h;
    }

    /** Feeds steps to the subtasks: a row to the subtask of its key group, a watermark to all. */
    static void feed(Planned p, List<KeyedTwoInputStreamOperatorTestHarness<RowData, RowData, RowData, RowData>> hs,
            List<Step> steps) throws Exception {
        RowDataSerializer left = new RowDataSerializer(p.leftType());
        RowDataSerializer right = new RowDataSerializer(p.rightType());
        for (Step s : steps) {
            if (s.kind() == 'r') {
                RowData row = (s.input() == 1 ? left : right).toBinaryRow(s.row()).copy();
                RowData key = (s.input() == 1 ? p.leftKeys() : p.rightKeys()).getKey(row);
                int subtask = KeyGroupRangeAssignment.assignKeyToParallelOperator(key, MAX_PARALLELISM, hs.size());
                if (s.input() == 1) {
                    hs.get(subtask).processElement1(new StreamRecord<>(row));
                } else {
                    hs.get(subtask).processElement2(new StreamRecord<>(row));
                }
            } else if (s.kind() == 'w') {
                for (var h : hs) {
                    if (s.input() == 1) {
                        h.processWatermark1(new Watermark(s.time()));
                    } else {
                        h.processWatermark2(new Watermark(s.time()));
                    }
                }
            }
        }
    }

    /** Each subtask's output of one phase, then (when rescaling) the phase after the rescale. */
    static List<List<String>> run(Planned p, List<Step> before, List<Step> after, int from, int to) throws Exception {
        return run(p, p, false, before, after, from, to);
    }

    /**
     * {@link #run(Planned, List, List, int, int)} with {@code p} before the rescale and {@code
     * next} after it, across checkpoints or canonical savepoints.
     */
    static List<List<String>> run(Planned p, Planned next, boolean savepoint, List<Step> before, List<Step> after, int from,
            int to) throws Exception {
        List<KeyedTwoInputStreamOperatorTestHarness<RowData, RowData, RowData, RowData>> hs = new ArrayList<>();
        for (int i = 0; i < from; i++) {
            hs.add(harness(p, from, i, null));
        }
        feed(p, hs, before);
        List<List<String>> out = new ArrayList<>();
        List<OperatorSubtaskState> snapshots = new ArrayList<>();
        for (var h : hs) {
            h.prepareSnapshotPreBarrier(1);
            snapshots.add(savepoint
                    ? h.snapshotWithLocalState(1, 1, SavepointType.savepoint(SavepointFormatType.CANONICAL)).getJobManagerOwnedState()
                    : h.snapshot(1, 1));
            List<String> o = new ArrayList<>();
            IntervalJoinDifferentialTest.collect(h, p.outputType(), o);
            out.add(o);
            h.close();
        }
        OperatorSubtaskState merged = AbstractStreamOperatorTestHarness.repackageState(snapshots.toArray(new OperatorSubtaskState[0]));
        hs.clear();
        for (int j = 0; j < to; j++) {
            hs.add(harness(next, to, j, AbstractStreamOperatorTestHarness.repartitionOperatorState(merged, MAX_PARALLELISM, from, to, j)));
        }
        feed(next, hs, after);
        for (var h : hs) {
            h.prepareSnapshotPreBarrier(2);
            List<String> o = new ArrayList<>();
            IntervalJoinDifferentialTest.collect(h, p.outputType(), o);
            out.add(o);
            h.close();
        }
        return out;
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({"1, 2", "2, 1", "2, 3", "3, 2", "4, 1"})
    void rescale(int from, int to) throws Exception {
        String condition = IntervalJoinDifferentialTest.BOUNDS;
        Planned stock = IntervalJoinDifferentialTest.plan("FULL", condition, false, 1);
        Planned ferry = IntervalJoinDifferentialTest.plan("FULL", condition, true, 7);
        List<Step> steps = new ArrayList<>(IntervalJoinDifferentialTest.steps(100L * from + to, 1500, true));
        steps.removeIf(s -> s.kind() == 's');
        List<Step> before = steps.subList(0, steps.size() / 2);
        List<Step> after = steps.subList(steps.size() / 2, steps.size());
        List<List<String>> want = run(stock, before, after, from, to);
        List<List<String>> got = run(ferry, before, after, from, to);
        assertEquals(want.size(), got.size());
        int rows = 0;
        for (int s = 0; s < want.size(); s++) {
            List<String> w = want.get(s);
            List<String> g = got.get(s);
            for (int i = 0; i < Math.min(w.size(), g.size()); i++) {
                assertEquals(w.get(i), g.get(i), from + " -> " + to + ", output " + s + ", row " + i);
            }
            assertEquals(w.size(), g.size(), from + " -> " + to + ", output " + s + ": length");
            rows += w.stream().filter(r -> r.startsWith("+I")).count();
        }
        assertTrue(rows > 100, "too little output to say anything: " + rows);
    }

    /**
     * Switching Ferry on and off while rescaling (docs/state.md, "The interval join"): Flink's
     * operator savepointed at parallelism {@code from} and restored into Ferry's at {@code to}
     * (each subtask importing the caches, cleanup times and timers of its key groups), and the
     * reverse; every subtask's output equals that of Flink's operator rescaled the same way.
     */
    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({"1, 2", "2, 1", "3, 2"})
    void switchingWhileRescaling(int from, int to) throws Exception {
        String condition = IntervalJoinDifferentialTest.BOUNDS;
        Planned stock = IntervalJoinDifferentialTest.plan("FULL", condition, false, 1);
        Planned ferry = IntervalJoinDifferentialTest.plan("FULL", condition, true, 7);
        List<Step> steps = new ArrayList<>(IntervalJoinDifferentialTest.steps(31L * from + to, 1500, true));
        steps.removeIf(s -> s.kind() == 's');
        List<Step> before = steps.subList(0, steps.size() / 2);
        List<Step> after = steps.subList(steps.size() / 2, steps.size());
        List<List<String>> want = run(stock, stock, true, before, after, from, to);
        for (List<Planned> pair : List.of(List.of(stock, ferry), List.of(ferry, stock))) {
            String what = (pair.get(0) == stock ? "Flink's, then Ferry's, " : "Ferry's, then Flink's, ") + from + " -> " + to;
            List<List<String>> got = run(pair.get(0), pair.get(1), true, before, after, from, to);
            assertEquals(want.size(), got.size());
            for (int s = 0; s < want.size(); s++) {
                List<String> w = want.get(s);
                List<String> g = got.get(s);
                for (int i = 0; i < Math.min(w.size(), g.size()); i++) {
                    assertEquals(w.get(i), g.get(i), what + ", output " + s + ", row " + i);
                }
                assertEquals(w.size(), g.size(), what + ", output " + s + ": length");
            }
        }
    }

    /**
     * An {@code EARLY_FIRE} FULL join (no Flink 2.3 operator to compare with) rescaled with rows
     * fired, pads pending and early-fire timers due: the same changelog rows as without the
     * rescale (a fired bit lost would pad a row twice, or turn a correction into an insert).
     */
    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({"1, 2", "2, 3", "3, 1"})
    void earlyFireRescale(int from, int to) throws Exception {
        Planned ferry = IntervalJoinDifferentialTest.plan(
                "FULL", IntervalJoinDifferentialTest.BOUNDS, true, 7, false, false, "EARLY_FIRE('delay'='1ms')");
        List<Step> steps = new ArrayList<>(IntervalJoinDifferentialTest.steps(7L * from + to, 1500, true));
        steps.removeIf(s -> s.kind() == 's');
        List<Step> before = steps.subList(0, steps.size() / 2);
        List<Step> after = steps.subList(steps.size() / 2, steps.size());
        List<String> want = changelog(run(ferry, before, after, 1, 1));
        List<String> got = changelog(run(ferry, before, after, from, to));
        assertEquals(want, got, from + " -> " + to);
        long corrections = want.stream().filter(r -> r.startsWith("-U")).count();
        assertEquals(corrections, want.stream().filter(r -> r.startsWith("+U")).count());
        assertTrue(corrections >= 3, "too few corrections to say anything: " + corrections);
    }

    /** The output rows of every subtask and phase, without watermarks, sorted. */
    private static List<String> changelog(List<List<String>> outputs) {
        List<String> rows = new ArrayList<>();
        outputs.forEach(o -> o.stream().filter(r -> !r.startsWith("WM")).forEach(rows::add));
        rows.sort(null);
        return rows;
    }
}
