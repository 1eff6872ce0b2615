package io.ferrystream.ferry.nexmark.source;

import io.ferrystream.ferry.nexmark.generator.GeneratorConfig;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.java.typeutils.ResultTypeQueryable;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.table.data.RowData;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * Nexmark's event stream as a FLIP-27 source: {@link GeneratorConfig#splits()} splits, each one
 * generator over its own block of event ids on the shared event-time line, spread over the
 * source's subtasks ({@link NexmarkEnumerator}). Bounded when the config has an event count.
 * Checkpoints hold each split's position; a restored reader goes on with exactly the events it
 * had not emitted, and since every event is a function of its id, they are the events an
 * uninterrupted run emits.
 */
public final class NexmarkSource
        implements Source<RowData, NexmarkSplit, Collection<NexmarkSplit>>, ResultTypeQueryable<RowData> {
    private final GeneratorConfig config;
    private final TypeInformation<RowData> type;

    public NexmarkSource(GeneratorConfig config, TypeInformation<RowData> type) {
        this.config = config;
        this.type = type;
    }

    public GeneratorConfig config() {
        return config;
    }

    @Override
    public Boundedness getBoundedness() {
        return config.bounded() ? Boundedness.BOUNDED : Boundedness.CONTINUOUS_UNBOUNDED;
    }

    @Override
    public SourceReader<RowData, NexmarkSplit> createReader(SourceReaderContext context) {
        return new NexmarkReader(config);
    }

    @Override
    public SplitEnumerator<NexmarkSplit, Collection<NexmarkSplit>> createEnumerator(
            SplitEnumeratorContext<NexmarkSplit> context) {
        return new NexmarkEnumerator(context, splits(config));
    }

    @Override
    public SplitEnumerator<NexmarkSplit, Collection<NexmarkSplit>> restoreEnumerator(
            SplitEnumeratorContext<NexmarkSplit> context, Collection<NexmarkSplit> checkpoint) {
        return new NexmarkEnumerator(context, checkpoint);
    }

    @Override
    public SimpleVersionedSerializer<NexmarkSplit> getSplitSerializer() {
        return NexmarkSplitSerializer.INSTANCE;
    }

    @Override
    public SimpleVersionedSerializer<Collection<NexmarkSplit>> getEnumeratorCheckpointSerializer() {
        return NexmarkSplitSerializer.Pending.INSTANCE;
    }

    @Override
    public TypeInformation<RowData> getProducedType() {
        return type;
    }

    /** Every split of the stream, none emitted yet. */
    static List<NexmarkSplit> splits(GeneratorConfig config) {
        List<NexmarkSplit> splits = new ArrayList<>(config.splits());
        for (int i = 0; i < config.splits(); i++) {
            splits.add(new NexmarkSplit(i, config.splitFirstEventId(i), config.splitEvents(i), 0));
        }
        return splits;
    }
}
