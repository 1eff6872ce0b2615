package io.ferrystream.ferry.nexmark.source;

import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;

/**
 * Hands the splits out: when a reader registers, every unassigned split whose index is the
 * reader's subtask index modulo the parallelism, then no more. A reader merges its splits by
 * event time, so with more splits than readers no reader's output goes back in time. Splits
 * returned by a failed reader go back to the unassigned ones until it registers again.
 */
final class NexmarkEnumerator implements SplitEnumerator<NexmarkSplit, Collection<NexmarkSplit>> {
    private final SplitEnumeratorContext<NexmarkSplit> context;
    private final List<NexmarkSplit> unassigned;

    NexmarkEnumerator(SplitEnumeratorContext<NexmarkSplit> context, Collection<NexmarkSplit> unassigned) {
        this.context = context;
        this.unassigned = new ArrayList<>(unassigned);
    }

    @Override
    public void start() {}

    @Override
    public void handleSplitRequest(int subtaskId, String requesterHostname) {}

    @Override
    public void addSplitsBack(List<NexmarkSplit> splits, int subtaskId) {
        unassigned.addAll(splits);
    }

    @Override
    public void addReader(int subtaskId) {
        int parallelism = context.currentParallelism();
        List<NexmarkSplit> mine = new ArrayList<>();
        for (Iterator<NexmarkSplit> it = unassigned.iterator(); it.hasNext(); ) {
            NexmarkSplit s = it.next();
            if (s.index() % parallelism == subtaskId) {
                mine.add(s);
                it.remove();
            }
        }
        for (NexmarkSplit s : mine) {
            context.assignSplit(s, subtaskId);
        }
        context.signalNoMoreSplits(subtaskId);
    }

    @Override
    public Collection<NexmarkSplit> snapshotState(long checkpointId) {
        return new ArrayList<>(unassigned);
    }

    @Override
    public void close() {}
}
