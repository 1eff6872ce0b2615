package io.ferrystream.ferry.nexmark.source;

import io.ferrystream.ferry.nexmark.generator.GeneratorConfig;

import org.apache.flink.api.common.eventtime.Watermark;
import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.SourceOutput;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.table.data.RowData;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The reader's order, end and checkpointed position; the splits' serialized form. */
class NexmarkReaderTest {
    private static final GeneratorConfig CONFIG =
            GeneratorConfig.defaults(10_000, 10_000, 1, GeneratorConfig.DEFAULT_BASE_TIME, 4);

    /** Collects the rows a reader emits. */
    static final class Rows implements ReaderOutput<RowData> {
        final List<String> rows = new ArrayList<>();

        @Override
        public void collect(RowData record) {
            rows.add(record.toString());
        }

        @Override
        public void collect(RowData record, long timestamp) {
            throw new AssertionError("the reader sets no timestamps");
        }

        @Override
        public void emitWatermark(Watermark watermark) {
            throw new AssertionError("the reader emits no watermarks");
        }

        @Override
        public void markIdle() {}

        @Override
        public void markActive() {}

        @Override
        public SourceOutput<RowData> createOutputForSplit(String splitId) {
            return this;
        }

        @Override
        public void releaseOutputForSplit(String splitId) {}
    }

    private static NexmarkReader reader(List<NexmarkSplit> splits) {
        NexmarkReader r = new NexmarkReader(CONFIG);
        r.addSplits(splits);
        r.notifyNoMoreSplits();
        return r;
    }

    /** Polls until the reader ends or {@code limit} rows; returns its last status. */
    private static InputStatus drain(NexmarkReader r, Rows out, int limit) {
        InputStatus s = InputStatus.MORE_AVAILABLE;
        while (s == InputStatus.MORE_AVAILABLE && out.rows.size() < limit) {
            s = r.pollNext(out);
        }
        return s;
    }

    @Test
    void readsEverySplitToTheEndInEventTimeOrder() {
        List<NexmarkSplit> all = NexmarkSource.splits(CONFIG);
        Rows out = new Rows();
        assertEquals(InputStatus.END_OF_INPUT, drain(reader(List.of(all.get(1), all.get(3))), out, Integer.MAX_VALUE));
        assertEquals(5_000, out.rows.size());
        // two splits on one timeline: their k-th events alternate, split 1 first
        Rows one = new Rows();
        drain(reader(List.of(all.get(1))), one, Integer.MAX_VALUE);
        Rows three = new Rows();
        drain(reader(List.of(all.get(3))), three, Integer.MAX_VALUE);
        for (int k = 0; k < 2_500; k++) {
            assertEquals(one.rows.get(k), out.rows.get(2 * k));
            assertEquals(three.rows.get(k), out.rows.get(2 * k + 1));
        }
    }

    @Test
    void aRestoredReaderEmitsExactlyTheRestOfAnUninterruptedRun() throws Exception {
        List<NexmarkSplit> all = NexmarkSource.splits(CONFIG);
        Rows whole = new Rows();
        drain(reader(all), whole, Integer.MAX_VALUE);
        assertEquals(10_000, whole.rows.size());

        Rows first = new Rows();
        NexmarkReader before = reader(all);
        drain(before, first, 3_333);
        List<NexmarkSplit> state = new ArrayList<>();
        for (NexmarkSplit s : before.snapshotState(1)) {
            state.add(NexmarkSplitSerializer.INSTANCE.deserialize(NexmarkSplitSerializer.INSTANCE.getVersion(),
                    NexmarkSplitSerializer.INSTANCE.serialize(s)));
        }
        Rows rest = new Rows();
        assertEquals(InputStatus.END_OF_INPUT, drain(reader(state), rest, Integer.MAX_VALUE));
        List<String> resumed = new ArrayList<>(first.rows);
        resumed.addAll(rest.rows);
        assertEquals(whole.rows, resumed);
    }

    @Test
    void waitsForSplitsThenEnds() {
        NexmarkReader r = new NexmarkReader(CONFIG);
        Rows out = new Rows();
        assertEquals(InputStatus.NOTHING_AVAILABLE, r.pollNext(out));
        assertTrue(!r.isAvailable().isDone(), "nothing to do until splits come");
        r.addSplits(List.of(NexmarkSource.splits(CONFIG).get(0)));
        assertTrue(r.isAvailable().isDone());
        assertEquals(InputStatus.MORE_AVAILABLE, r.pollNext(out));
        r.notifyNoMoreSplits();
        assertEquals(InputStatus.END_OF_INPUT, drain(r, out, Integer.MAX_VALUE));
        assertEquals(2_500, out.rows.size());
    }

    @Test
    void theEnumeratorsCheckpointRoundTrips() throws Exception {
        Collection<NexmarkSplit> pending = NexmarkSource.splits(CONFIG);
        NexmarkSplitSerializer.Pending s = NexmarkSplitSerializer.Pending.INSTANCE;
        assertEquals(List.copyOf(pending), List.copyOf(s.deserialize(s.getVersion(), s.serialize(pending))));
    }
}
