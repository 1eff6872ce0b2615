package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.nativelib.FerryException;
import io.ferrystream.ferry.operators.RescaleSupport.Changelog;
import io.ferrystream.ferry.operators.RescaleSupport.Chunk;
import io.ferrystream.ferry.operators.RescaleSupport.Planned;

import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.state.KeyedStateCheckpointOutputStream;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.types.RowKind;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeSet;

import static io.ferrystream.ferry.operators.RescaleSupport.MAX_PARALLELISM;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Snapshot and restore of Ferry's group aggregate in Flink's keyed harness (one subtask):
 * snapshots at random points leave the output exactly that of an uninterrupted run; corrupt,
 * truncated and foreign state is refused with a {@link FerryException} saying what is wrong (and
 * the library stays usable); a key group larger than a chunk is written as several chunks and
 * restored whole.
 */
class SnapshotRestoreTest {
    static Planned ferry;

    @BeforeAll
    static void plan() throws Exception {
        ferry = RescaleSupport.plan(RescaleSupport.AGGS, true, 64);
    }

    static KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> harness(Planned p, OperatorSubtaskState state)
            throws Exception {
        return RescaleSupport.harness(p, MAX_PARALLELISM, 1, 0, state);
    }

    /** Runs rows through the operator, snapshotting into a fresh operator before each row index in {@code at}. */
    static List<String> run(Planned p, List<RowData> rows, int[] at, int maxParallelism) throws Exception {
        List<String> out = new ArrayList<>();
        var h = RescaleSupport.harness(p, maxParallelism, 1, 0, null);
        long cp = 0;
        for (int i = 0; i < rows.size(); i++) {
            if (Arrays.binarySearch(at, i) >= 0) {
                h.prepareSnapshotPreBarrier(++cp);
                OperatorSubtaskState state = h.snapshot(cp, cp);
                out.addAll(RescaleSupport.drain(h, p.outputType()));
                h.close();
                h = RescaleSupport.harness(p, maxParallelism, 1, 0, state);
            }
            h.processElement(new StreamRecord<>(rows.get(i)));
        }
        h.prepareSnapshotPreBarrier(++cp);
        out.addAll(RescaleSupport.drain(h, p.outputType()));
        h.close();
        return out;
    }

    static void assertSameOutput(List<String> want, List<String> got, String what) {
        for (int i = 0; i < Math.min(want.size(), got.size()); i++) {
            assertEquals(want.get(i), got.get(i), what + ": first difference at output row " + i);
        }
        assertEquals(want.size(), got.size(), what + ": output length");
    }

    @Test
    void snapshotsAtRandomPointsDoNotChangeTheOutput() throws Exception {
        for (long seed = 1; seed <= 6; seed++) {
            Random r = new Random(seed);
            List<RowData> rows = new Changelog(seed, 1 + r.nextInt(400)).next(3000);
            int[] at = new int[1 + r.nextInt(5)];
            for (int i = 0; i < at.length; i++) {
                at[i] = r.nextInt(rows.size()); // any row: mid-batch, between a -U and its +U
            }
            Arrays.sort(at);
            List<String> want = run(ferry, rows, new int[0], MAX_PARALLELISM);
            assertTrue(want.size() > 1000);
            assertSameOutput(want, run(ferry, rows, at, MAX_PARALLELISM), "seed " + seed + ", snapshots before rows " + Arrays.toString(at));
        }
    }

    /** A snapshot does not disturb the running operator, and one snapshot restores twice alike. */
    @Test
    void snapshotLeavesTheOperatorRunningAndRestoresRepeatably() throws Exception {
        Changelog c = new Changelog(42, 200);
        List<RowData> before = c.next(2000);
        List<RowData> after = c.next(2000);
        var h = harness(ferry, null);
        for (RowData r : before) {
            h.processElement(new StreamRecord<>(r));
        }
        h.prepareSnapshotPreBarrier(1);
        OperatorSubtaskState state = h.snapshot(1, 1);
        RescaleSupport.drain(h, ferry.outputType());
        List<List<String>> continued = new ArrayList<>();
        for (var target : List.of(h, harness(ferry, state), harness(ferry, state))) {
            for (RowData r : after) {
                target.processElement(new StreamRecord<>(r));
            }
            target.prepareSnapshotPreBarrier(2);
            continued.add(RescaleSupport.drain(target, ferry.outputType()));
            OperatorSubtaskState again = target.snapshot(2, 2);
            target.close();
            // The state after the same rows is the same state, whichever operator holds it.
            continued.add(List.of(RescaleSupport.writtenKeyGroups(again).keySet().toString()));
        }
        assertSameOutput(continued.get(0), continued.get(2), "first restore");
        assertSameOutput(continued.get(0), continued.get(4), "second restore");
        assertEquals(continued.get(1), continued.get(3));
        assertEquals(continued.get(1), continued.get(5));
    }

    // ---- corrupt, truncated and foreign state ----

    /** A real snapshot with state in many key groups. */
    static OperatorSubtaskState realSnapshot(Planned p, long seed) throws Exception {
        var h = harness(p, null);
        for (RowData r : new Changelog(seed, 150).next(1500)) {
            h.processElement(new StreamRecord<>(r));
        }
        h.prepareSnapshotPreBarrier(1);
        OperatorSubtaskState state = h.snapshot(1, 1);
        h.close();
        return state;
    }

    /**
     * Restoring {@code state} must fail with a FerryException (EDATA) whose message contains
     * {@code expected}; the JVM and the library survive, and a fresh operator still works.
     */
    static FerryException assertRestoreFails(Planned p, OperatorSubtaskState state, String expected) throws Exception {
        Throwable thrown = null;
        try {
            harness(p, state).close();
        } catch (Throwable t) {
            thrown = t;
        }
        if (thrown == null) {
            fail("restore succeeded, expected a FerryException saying \"" + expected + "\"");
        }
        StringBuilder chain = new StringBuilder();
        FerryException ferryError = null;
        for (Throwable t = thrown; t != null; t = t.getCause()) {
            chain.append("\n  ").append(t);
            if (t instanceof FerryException && ferryError == null) {
                ferryError = (FerryException) t;
            }
        }
        if (ferryError == null) {
            fail("restore failed, but not with a FerryException (expected \"" + expected + "\"):" + chain);
        }
        assertTrue(ferryError.getMessage().contains(expected), "expected \"" + expected + "\" in:" + chain);
        assertEquals(FerryException.EDATA, ferryError.code(), ferryError.toString());
        // Not poisoned: the process carries on.
        assertEquals(run(p, new Changelog(3, 10).next(50), new int[] {25}, MAX_PARALLELISM).size(),
                run(p, new Changelog(3, 10).next(50), new int[0], MAX_PARALLELISM).size());
        return ferryError;
    }

    static void flip(byte[] data, int at) {
        data[at] ^= 0x5a;
    }

    @Test
    void payloadCorruptionIsDetected() throws Exception {
        OperatorSubtaskState state = realSnapshot(ferry, 1);
        Map<Integer, List<Chunk>> chunks = RescaleSupport.chunksByKeyGroup(state);
        assertTrue(chunks.size() > 64, "state in many key groups: " + chunks.keySet());
        // A flipped bit in the middle of some key group's compressed payload.
        Chunk victim = chunks.values().stream().skip(chunks.size() / 2).findFirst().get().get(0);
        byte[] data = RescaleSupport.rawBytes(state);
        flip(data, victim.start() + 48 + (victim.length() - 48) / 2);
        assertRestoreFails(ferry, RescaleSupport.withRawBytes(state, data), "payload checksum mismatch");
    }

    @Test
    void headerCorruptionIsDetected() throws Exception {
        OperatorSubtaskState state = realSnapshot(ferry, 2);
        Chunk victim = RescaleSupport.chunksByKeyGroup(state).values().iterator().next().get(0);
        byte[] data = RescaleSupport.rawBytes(state);
        flip(data, victim.start() + 16); // the key group field
        assertRestoreFails(ferry, RescaleSupport.withRawBytes(state, data), "header checksum mismatch");
    }

    /**
     * A corrupt stored-length field (header bytes 36..39). The header checksum covers it, so the
     * restore must say the header is corrupt, whatever length the field now claims: one more byte,
     * or 256 MiB more than the stream holds.
     */
    @Test
    void corruptLengthFieldIsDetected() throws Exception {
        OperatorSubtaskState state = realSnapshot(ferry, 6);
        Chunk victim = RescaleSupport.chunksByKeyGroup(state).values().iterator().next().get(0);
        byte[] data = RescaleSupport.rawBytes(state);
        data[victim.start() + 36] ^= 0x01;
        assertRestoreFails(ferry, RescaleSupport.withRawBytes(state, data), "header checksum mismatch");
        data = RescaleSupport.rawBytes(state);
        data[victim.start() + 39] ^= 0x10;
        assertRestoreFails(ferry, RescaleSupport.withRawBytes(state, data), "header checksum mismatch");
    }

    /** The stream ends inside the last key group's chunk (a short read of the checkpoint file). */
    @Test
    void truncatedStateIsDetected() throws Exception {
        OperatorSubtaskState state = realSnapshot(ferry, 3);
        byte[] data = RescaleSupport.rawBytes(state);
        byte[] cut = Arrays.copyOf(data, data.length - 5);
        assertRestoreFails(ferry, RescaleSupport.withRawBytes(state, cut), "truncated");
    }

    /** The stream ends inside the last key group's header. */
    @Test
    void stateTruncatedInAHeaderIsDetected() throws Exception {
        OperatorSubtaskState state = realSnapshot(ferry, 4);
        Map<Integer, List<Chunk>> chunks = RescaleSupport.chunksByKeyGroup(state);
        List<Chunk> lastGroup = new ArrayList<>(chunks.values()).get(chunks.size() - 1);
        byte[] data = RescaleSupport.rawBytes(state);
        byte[] cut = Arrays.copyOf(data, lastGroup.get(0).start() + 20);
        assertRestoreFails(ferry, RescaleSupport.withRawBytes(state, cut), "truncated");
    }

    /** State written for another query (other aggregates over the same key) is refused. */
    @Test
    void stateOfAnotherQueryIsRefused() throws Exception {
        Planned other = RescaleSupport.plan("SUM(v), MAX(i), MIN(d), COUNT(*)", true, 64);
        OperatorSubtaskState state = realSnapshot(other, 5);
        assertRestoreFails(ferry, state, "different spec");
    }

    /**
     * Raw keyed state some other operator wrote (here: a length-prefixed text record per key
     * group, as a DataOutputStream writes it) must be recognised as not Ferry's.
     */
    @Test
    void foreignStateIsRefused() throws Exception {
        OperatorSubtaskState state = foreignSnapshot(kg -> {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            DataOutputStream out = new DataOutputStream(b);
            out.writeUTF("legacy state of key group " + kg + ": {\"timers\":[1700000000000,1700000000500],"
                    + "\"owner\":\"some other operator\"}");
            return b.toByteArray();
        });
        assertRestoreFails(ferry, state, "not a Ferry state blob");
    }

    /** Foreign raw keyed state of 48 binary bytes per key group (a header's size, small length field). */
    @Test
    void foreignBinaryStateIsRefused() throws Exception {
        OperatorSubtaskState state = foreignSnapshot(kg -> new byte[48]);
        assertRestoreFails(ferry, state, "not a Ferry state blob");
    }

    interface Bytes extends Serializable {
        byte[] of(int keyGroup) throws IOException;
    }

    /** Writes {@code bytes.of(kg)} into raw keyed state for every key group of the subtask. */
    static final class ForeignOperator extends AbstractStreamOperator<RowData> implements OneInputStreamOperator<RowData, RowData> {
        private static final long serialVersionUID = 1L;
        private final Bytes bytes;

        ForeignOperator(Bytes bytes) {
            this.bytes = bytes;
        }

        @Override
        protected boolean isUsingCustomRawKeyedState() {
            return true;
        }

        @Override
        public void processElement(StreamRecord<RowData> element) {}

        @Override
        public void snapshotState(StateSnapshotContext context) throws Exception {
            super.snapshotState(context);
            KeyedStateCheckpointOutputStream out = context.getRawKeyedOperatorStateOutput();
            for (int kg : out.getKeyGroupList()) {
                out.startNewKeyGroup(kg);
                out.write(bytes.of(kg));
            }
        }
    }

    static OperatorSubtaskState foreignSnapshot(Bytes bytes) throws Exception {
        var h = new KeyedOneInputStreamOperatorTestHarness<>(
                new ForeignOperator(bytes), ferry.keySelector(), ferry.keyType(),
                MAX_PARALLELISM, 1, 0);
        h.setup(new RowDataSerializer(ferry.outputType()));
        h.open();
        OperatorSubtaskState state = h.snapshot(1, 1);
        h.close();
        assertEquals(MAX_PARALLELISM, RescaleSupport.writtenKeyGroups(state).size());
        return state;
    }

    // ---- a key group bigger than a chunk ----

    /**
     * Max parallelism 1 puts every key in key group 0: 200k groups are well over the 128 KiB chunk
     * size, so the key group is written as several chunks; it restores whole (the continued
     * output equals an uninterrupted run), and a missing chunk is refused.
     */
    @Test
    void bigKeyGroupSpansSeveralChunks() throws Exception {
        int keys = 200_000;
        List<RowData> rows = new ArrayList<>(3 * keys);
        Random r = new Random(9);
        for (int pass = 0; pass < 2; pass++) {
            for (int k = 0; k < keys; k++) {
                GenericRowData row = GenericRowData.of((long) k * 7919, (long) r.nextInt(1000), r.nextInt(100), r.nextInt(400) * 0.5);
                rows.add(row);
            }
        }
        // Retract some first-pass rows, so retractable MIN/MAX state is exercised after the restore.
        for (int k = 0; k < keys; k += 3) {
            GenericRowData old = (GenericRowData) rows.get(k);
            GenericRowData del = GenericRowData.of(old.getField(0), old.getField(1), old.getField(2), old.getField(3));
            del.setRowKind(RowKind.DELETE);
            rows.add(del);
        }
        Planned big = RescaleSupport.plan(RescaleSupport.AGGS, true, 4096);
        int[] at = {keys + 1};

        // The snapshot at the split point, inspected: one key group, several chunks, numbered, the last flagged.
        var h = RescaleSupport.harness(big, 1, 1, 0, null);
        for (RowData row : rows.subList(0, at[0])) {
            h.processElement(new StreamRecord<>(row));
        }
        h.prepareSnapshotPreBarrier(1);
        OperatorSubtaskState state = h.snapshot(1, 1);
        h.close();
        Map<Integer, List<Chunk>> chunks = RescaleSupport.chunksByKeyGroup(state);
        assertEquals(new TreeSet<>(List.of(0)), new TreeSet<>(chunks.keySet()));
        List<Chunk> kg0 = chunks.get(0);
        assertTrue(kg0.size() >= 3, "a key group over 128 KiB spans several chunks: " + kg0);
        for (int i = 0; i < kg0.size(); i++) {
            assertEquals(i, kg0.get(i).index());
            assertEquals(0, kg0.get(i).keyGroup());
            assertEquals(i == kg0.size() - 1, kg0.get(i).last(), "last-chunk flag of chunk " + i);
        }
        assertEquals(RescaleSupport.rawBytes(state).length, kg0.get(kg0.size() - 1).start() + kg0.get(kg0.size() - 1).length());

        List<String> want = run(big, rows, new int[0], 1);
        List<String> got = run(big, rows, at, 1);
        assertTrue(want.size() > 2 * keys);
        assertSameOutput(want, got, "restore of a " + kg0.size() + "-chunk key group");

        // A chunk missing from the middle of the sequence.
        byte[] data = RescaleSupport.rawBytes(state);
        Chunk gone = kg0.get(1);
        byte[] holed = new byte[data.length - gone.length()];
        System.arraycopy(data, 0, holed, 0, gone.start());
        System.arraycopy(data, gone.start() + gone.length(), holed, gone.start(), data.length - gone.start() - gone.length());
        FerryException e = assertRestoreFailsAt(big, RescaleSupport.withRawBytes(state, holed), "out of sequence");
        assertTrue(e.getMessage().contains("chunk 2") && e.getMessage().contains("expected chunk 1"), e.getMessage());

        assertArrayEquals(data, RescaleSupport.rawBytes(state), "the snapshot itself is untouched");

        // The last chunk missing: the stream ends before the key group does.
        byte[] headless = Arrays.copyOf(data, kg0.get(kg0.size() - 1).start());
        assertRestoreFailsAt(big, RescaleSupport.withRawBytes(state, headless), "truncated");
    }

    /** {@link #assertRestoreFails} at max parallelism 1. */
    static FerryException assertRestoreFailsAt(Planned p, OperatorSubtaskState state, String expected) throws Exception {
        Throwable thrown = null;
        try {
            RescaleSupport.harness(p, 1, 1, 0, state).close();
        } catch (Throwable t) {
            thrown = t;
        }
        if (thrown == null) {
            fail("restore succeeded, expected a FerryException saying \"" + expected + "\"");
        }
        StringBuilder chain = new StringBuilder();
        for (Throwable t = thrown; t != null; t = t.getCause()) {
            chain.append("\n  ").append(t);
            if (t instanceof FerryException) {
                assertTrue(t.getMessage().contains(expected), "expected \"" + expected + "\" in:" + chain);
                return (FerryException) t;
            }
        }
        fail("restore failed, but not with a FerryException (expected \"" + expected + "\"):" + chain);
        return null;
    }
}
