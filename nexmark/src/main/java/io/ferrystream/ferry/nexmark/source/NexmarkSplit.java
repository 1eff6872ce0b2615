package io.ferrystream.ferry.nexmark.source;

import org.apache.flink.api.connector.source.SourceSplit;

/**
 * One generator of the stream and how far it got: split {@code index} of {@code
 * GeneratorConfig.splits()}, whose k-th event (k from 1) has id {@code firstEventId + k}, with
 * {@code emitted} of its {@code events} events already emitted. Immutable: a reader's position
 * is a new split in each checkpoint.
 */
public record NexmarkSplit(int index, long firstEventId, long events, long emitted) implements SourceSplit {
    public NexmarkSplit {
        if (index < 0 || events < 0 || emitted < 0 || emitted > events) {
            throw new IllegalArgumentException("nexmark: invalid split " + index + ": " + emitted + " of " + events + " emitted");
        }
    }

    @Override
    public String splitId() {
        return Integer.toString(index);
    }

    boolean finished() {
        return emitted == events;
    }

    NexmarkSplit at(long position) {
        return new NexmarkSplit(index, firstEventId, events, position);
    }
}
