package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.nativelib.FerryException;
import io.ferrystream.ferry.operators.RescaleSupport.Changelog;
import io.ferrystream.ferry.operators.RescaleSupport.Planned;

import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.AbstractStreamOperatorTestHarness;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

import static io.ferrystream.ferry.operators.RescaleSupport.MAX_PARALLELISM;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Rescaling Ferry's group aggregate the way Flink does: the operator (planned from SQL with Ferry
 * on) runs in N keyed harnesses, each fed the rows Flink's hash exchange would send it; all N are
 * snapshotted, their states merged ({@code repackageState}) and cut into the key-group ranges of
 * M new subtasks ({@code repartitionOperatorState}), restored into M fresh operators, and the
 * stream continues, routed for M. Each key's changelog must equal the one an unscaled single
 * operator (Ferry's, and Flink's own) emits for the same rows, and every written key group must
 * be restored exactly once, by the subtask owning it.
 */
class RescaleTest {
    static final int KEYS = 300;
    static final int ROWS_BEFORE = 4000;
    static final int ROWS_AFTER = 3000;

    static Planned ferry;
    static Planned stock;

    @BeforeAll
    static void plan() throws Exception {
        ferry = RescaleSupport.plan(RescaleSupport.AGGS, true, 16);
        stock = RescaleSupport.plan(RescaleSupport.AGGS, false, 1);
    }

    /** The stream of one scenario: rows before the rescale, then a probe per key, then more rows. */
    record Input(List<RowData> before, List<RowData> after) {}

    static Input input(long seed) {
        Changelog c = new Changelog(seed, KEYS);
        List<RowData> before = c.next(ROWS_BEFORE);
        List<RowData> after = new ArrayList<>(c.probes());
        after.addAll(c.next(ROWS_AFTER));
        return new Input(before, after);
    }

    /** An unscaled single operator over all rows; the output before and after the split point. */
    static List<List<String>> unscaled(Planned p, Input in) throws Exception {
        KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> h =
                RescaleSupport.harness(p, MAX_PARALLELISM, 1, 0, null);
        try {
            for (RowData r : in.before()) {
                h.processElement(new StreamRecord<>(r));
            }
            h.prepareSnapshotPreBarrier(1); // flushes Ferry's batch: no snapshot, no restore
            List<String> before = RescaleSupport.drain(h, p.outputType());
            for (RowData r : in.after()) {
                h.processElement(new StreamRecord<>(r));
            }
            h.prepareSnapshotPreBarrier(2);
            return List.of(before, RescaleSupport.drain(h, p.outputType()));
        } finally {
            h.close();
        }
    }

    static List<KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData>> open(
            int parallelism, List<OperatorSubtaskState> states) throws Exception {
        List<KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData>> hs = new ArrayList<>();
        for (int i = 0; i < parallelism; i++) {
            hs.add(RescaleSupport.harness(ferry, MAX_PARALLELISM, parallelism, i, states == null ? null : states.get(i)));
        }
        return hs;
    }

    static void feed(List<KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData>> hs, List<RowData> rows)
            throws Exception {
        for (RowData r : rows) {
            hs.get(RescaleSupport.route(ferry, r, MAX_PARALLELISM, hs.size())).processElement(new StreamRecord<>(r));
        }
    }

    /** Flushes every harness and returns each one's output so far. */
    static List<List<String>> drain(List<KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData>> hs, long cp)
            throws Exception {
        List<List<String>> out = new ArrayList<>();
        for (var h : hs) {
            h.prepareSnapshotPreBarrier(cp);
            out.add(RescaleSupport.drain(h, ferry.outputType()));
        }
        return out;
    }

    static void closeAll(List<KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData>> hs) throws Exception {
        for (var h : hs) {
            h.close();
        }
    }

    static Map<String, List<String>> concatPerKey(List<List<String>> a, List<List<String>> b) {
        List<String> all = new ArrayList<>();
        a.forEach(all::addAll);
        b.forEach(all::addAll);
        return RescaleSupport.perKey(all);
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({"1, 2", "2, 1", "2, 3", "3, 1", "4, 2"})
    void rescale(int from, int to) throws Exception {
        Input in = input(1000L * from + to);
        List<List<String>> reference = unscaled(ferry, in);
        Map<String, List<String>> want = concatPerKey(List.of(reference.get(0)), List.of(reference.get(1)));
        // Ferry unscaled agrees with Flink's own operator key by key (the differential test checks more).
        List<List<String>> flink = unscaled(stock, in);
        assertEquals(concatPerKey(List.of(flink.get(0)), List.of(flink.get(1))), want, "Ferry vs Flink, unscaled");

        // Phase 1 at the old parallelism.
        var old = open(from, null);
        feed(old, in.before());
        List<List<String>> outBefore = drain(old, 1);
        List<OperatorSubtaskState> snapshots = new ArrayList<>();
        for (var h : old) {
            snapshots.add(h.snapshot(1, 1));
        }
        closeAll(old);

        // Every subtask wrote only key groups of its own range; together they are the key groups with state.
        Map<Integer, Integer> writtenBy = new TreeMap<>();
        for (int i = 0; i < from; i++) {
            KeyGroupRange range = KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(MAX_PARALLELISM, from, i);
            for (int kg : RescaleSupport.writtenKeyGroups(snapshots.get(i)).keySet()) {
                assertTrue(range.contains(kg), "old subtask " + i + " wrote key group " + kg + " outside " + range);
                assertEquals(null, writtenBy.put(kg, i), "key group " + kg + " written by two old subtasks");
            }
        }
        Set<String> liveKeys = liveKeys(reference.get(0));
        Set<Integer> liveKeyGroups = new TreeSet<>();
        for (RowData probe : in.after().subList(0, KEYS + 1)) {
            RowData key = ferry.keySelector().getKey(probe);
            if (liveKeys.contains(String.valueOf(((GenericRowData) probe).getField(0)))) {
                liveKeyGroups.add(KeyGroupRangeAssignment.assignToKeyGroup(key, MAX_PARALLELISM));
            }
        }
        assertEquals(liveKeyGroups, writtenBy.keySet(), "key groups written = key groups of the live keys");
        assertTrue(liveKeyGroups.size() > MAX_PARALLELISM / 2, "most key groups hold state: " + liveKeyGroups.size());
        assertTrue(liveKeyGroups.size() < MAX_PARALLELISM, "some key groups are empty (their keys were deleted)");

        // Merge the old subtasks' states as Flink's rescaling tests do, then cut them for the new subtasks.
        OperatorSubtaskState merged = AbstractStreamOperatorTestHarness.repackageState(snapshots.toArray(new OperatorSubtaskState[0]));
        List<OperatorSubtaskState> parts = new ArrayList<>();
        for (int j = 0; j < to; j++) {
            parts.add(AbstractStreamOperatorTestHarness.repartitionOperatorState(merged, MAX_PARALLELISM, from, to, j));
        }
        var fresh = open(to, parts);

        // (b) Right after the restore, each new subtask holds exactly the written key groups of its range.
        Map<Integer, Integer> restoredBy = new TreeMap<>();
        for (int j = 0; j < to; j++) {
            KeyGroupRange range = KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(MAX_PARALLELISM, to, j);
            for (int kg : RescaleSupport.writtenKeyGroups(fresh.get(j).snapshot(2, 2)).keySet()) {
                assertTrue(range.contains(kg), "new subtask " + j + " holds key group " + kg + " outside " + range);
                assertEquals(null, restoredBy.put(kg, j), "key group " + kg + " restored twice");
            }
        }
        assertEquals(writtenBy.keySet(), restoredBy.keySet(), "every written key group restored exactly once");

        // Phase 2 at the new parallelism, starting with one probe row per key.
        feed(fresh, in.after());
        List<List<String>> outAfter = drain(fresh, 3);
        closeAll(fresh);

        // (b) by output: a probed key answers -U (it had state) or +I (it had none); count per new subtask.
        for (int j = 0; j < to; j++) {
            Set<String> restored = new HashSet<>();
            Set<String> seen = new HashSet<>();
            for (String row : outAfter.get(j)) {
                String key = RescaleSupport.keyOf(row);
                if (seen.add(key) && row.startsWith("-U")) {
                    restored.add(key);
                }
            }
            Set<String> expected = new HashSet<>();
            for (RowData probe : in.after().subList(0, KEYS + 1)) {
                String key = String.valueOf(((GenericRowData) probe).getField(0));
                if (RescaleSupport.route(ferry, probe, MAX_PARALLELISM, to) == j) {
                    assertTrue(seen.contains(key), "subtask " + j + ": probed key " + key + " produced no output");
                    if (liveKeys.contains(key)) {
                        expected.add(key);
                    }
                }
            }
            assertEquals(expected.size(), restored.size(), "new subtask " + j + ": keys restored");
            assertEquals(expected, restored, "new subtask " + j + ": keys restored");
        }

        // (a) Each key's changelog equals the unscaled run's.
        Map<String, List<String>> got = concatPerKey(outBefore, outAfter);
        assertEquals(want.keySet(), got.keySet());
        for (String key : want.keySet()) {
            List<String> w = want.get(key);
            List<String> g = got.get(key);
            for (int i = 0; i < Math.min(w.size(), g.size()); i++) {
                assertEquals(w.get(i), g.get(i), from + " -> " + to + ", key " + key + ": changelog row " + i);
            }
            assertEquals(w.size(), g.size(), from + " -> " + to + ", key " + key + ": changelog length");
        }
    }

    /** Keys whose last output row of a changelog leaves them in the result (+I or +U). */
    static Set<String> liveKeys(List<String> changelog) {
        Map<String, String> last = new HashMap<>();
        for (String row : changelog) {
            last.put(RescaleSupport.keyOf(row), row);
        }
        Set<String> live = new HashSet<>();
        last.forEach((k, row) -> {
            if (row.startsWith("+I") || row.startsWith("+U")) {
                live.add(k);
            }
        });
        return live;
    }

    /**
     * Key groups cannot move across a change of max parallelism. On a cluster, Flink refuses such a
     * restore before any operator runs when the new max parallelism is set explicitly ("Max
     * parallelism mismatch between checkpoint/savepoint state and new program", see FailoverTest);
     * the harness has no JobMaster, so the restore reaches Ferry, which must refuse it saying why.
     */
    @Test
    void changedMaxParallelismIsRejected() throws Exception {
        Input in = input(7);
        var h = RescaleSupport.harness(ferry, 128, 1, 0, null);
        for (RowData r : in.before()) {
            h.processElement(new StreamRecord<>(r));
        }
        h.prepareSnapshotPreBarrier(1);
        OperatorSubtaskState state = h.snapshot(1, 1);
        h.close();
        OperatorSubtaskState part = AbstractStreamOperatorTestHarness.repartitionOperatorState(state, 256, 1, 1, 0);
        Exception e = assertThrows(Exception.class, () -> {
            var restored = RescaleSupport.harness(ferry, 256, 1, 0, part);
            restored.close();
        });
        Throwable t = e;
        StringBuilder chain = new StringBuilder();
        while (t != null) {
            chain.append(t).append('\n');
            if (t instanceof FerryException) {
                assertTrue(t.getMessage().contains("max parallelism changed from 128 to 256"), t.getMessage());
                return;
            }
            t = t.getCause();
        }
        fail("restore at max parallelism 256 failed, but not with Ferry's max-parallelism message:\n" + chain);
    }
}
