package io.ferrystream.ferry.nexmark.source;

import io.ferrystream.ferry.nexmark.generator.EventGenerator;
import io.ferrystream.ferry.nexmark.generator.GeneratorConfig;

import org.apache.flink.api.connector.source.ReaderOutput;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.core.io.InputStatus;
import org.apache.flink.table.data.RowData;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * Emits the events of its splits, one per {@link #pollNext} call, as fast as it is called (no
 * throttling: like Nexmark's {@code max-emit-speed}, the rate only spaces event time). With several
 * splits it emits the one whose next event is earliest in event time (ties by split index), so
 * its output never goes back in time and Nexmark's watermark delay keeps every event on time.
 * Its checkpointed state is its splits with their positions.
 */
final class NexmarkReader implements SourceReader<RowData, NexmarkSplit> {
    private final EventGenerator generator;
    private final List<NexmarkSplit> splits = new ArrayList<>();
    /** Emitted events of {@link #splits}, index for index: the live positions. */
    private long[] emitted = new long[0];
    private boolean noMoreSplits;
    /** Completed when {@link #pollNext} has something to do again. */
    private CompletableFuture<Void> available = new CompletableFuture<>();

    NexmarkReader(GeneratorConfig config) {
        this.generator = new EventGenerator(config);
    }

    @Override
    public void start() {}

    @Override
    public InputStatus pollNext(ReaderOutput<RowData> output) {
        int next = -1;
        for (int i = 0; i < splits.size(); i++) {
            if (emitted[i] < splits.get(i).events() && (next < 0 || emitted[i] < emitted[next])) {
                next = i;
            }
        }
        if (next < 0) {
            if (noMoreSplits) {
                return InputStatus.END_OF_INPUT;
            }
            if (available.isDone()) {
                available = new CompletableFuture<>(); // completed by the next splits or their end
            }
            return InputStatus.NOTHING_AVAILABLE;
        }
        long number = ++emitted[next];
        output.collect(generator.event(splits.get(next).firstEventId() + number, number));
        return InputStatus.MORE_AVAILABLE;
    }

    @Override
    public List<NexmarkSplit> snapshotState(long checkpointId) {
        List<NexmarkSplit> state = new ArrayList<>(splits.size());
        for (int i = 0; i < splits.size(); i++) {
            state.add(splits.get(i).at(emitted[i]));
        }
        return state;
    }

    @Override
    public CompletableFuture<Void> isAvailable() {
        return available;
    }

    @Override
    public void addSplits(List<NexmarkSplit> added) {
        for (int i = 0; i < splits.size(); i++) {
            splits.set(i, splits.get(i).at(emitted[i]));
        }
        for (NexmarkSplit s : added) {
            int at = 0;
            while (at < splits.size() && splits.get(at).index() < s.index()) {
                at++;
            }
            splits.add(at, s);
        }
        emitted = new long[splits.size()];
        for (int i = 0; i < splits.size(); i++) {
            emitted[i] = splits.get(i).emitted();
        }
        signal();
    }

    @Override
    public void notifyNoMoreSplits() {
        noMoreSplits = true;
        signal();
    }

    private void signal() {
        available.complete(null);
    }

    @Override
    public void close() {}
}
