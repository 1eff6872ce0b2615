package io.ferrystream.ferry.nexmark.source;

import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;

import java.io.IOException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * The checkpointed form of {@link NexmarkSplit}s (version 1: index, first event id, events,
 * emitted) and of the enumerator's unassigned splits (a count, then each split).
 */
final class NexmarkSplitSerializer implements SimpleVersionedSerializer<NexmarkSplit> {
    static final NexmarkSplitSerializer INSTANCE = new NexmarkSplitSerializer();
    private static final int VERSION = 1;

    @Override
    public int getVersion() {
        return VERSION;
    }

    @Override
    public byte[] serialize(NexmarkSplit split) throws IOException {
        DataOutputSerializer out = new DataOutputSerializer(28);
        write(out, split);
        return out.getCopyOfBuffer();
    }

    @Override
    public NexmarkSplit deserialize(int version, byte[] bytes) throws IOException {
        checkVersion(version);
        return read(new DataInputDeserializer(bytes));
    }

    private static void write(DataOutputSerializer out, NexmarkSplit split) throws IOException {
        out.writeInt(split.index());
        out.writeLong(split.firstEventId());
        out.writeLong(split.events());
        out.writeLong(split.emitted());
    }

    private static NexmarkSplit read(DataInputDeserializer in) throws IOException {
        return new NexmarkSplit(in.readInt(), in.readLong(), in.readLong(), in.readLong());
    }

    private static void checkVersion(int version) throws IOException {
        if (version != VERSION) {
            throw new IOException("nexmark: split state of version " + version + ", this reads version " + VERSION);
        }
    }

    /** The enumerator's checkpoint: its unassigned splits. */
    static final class Pending implements SimpleVersionedSerializer<Collection<NexmarkSplit>> {
        static final Pending INSTANCE = new Pending();

        @Override
        public int getVersion() {
            return VERSION;
        }

        @Override
        public byte[] serialize(Collection<NexmarkSplit> splits) throws IOException {
            DataOutputSerializer out = new DataOutputSerializer(4 + 28 * splits.size());
            out.writeInt(splits.size());
            for (NexmarkSplit s : splits) {
                write(out, s);
            }
            return out.getCopyOfBuffer();
        }

        @Override
        public Collection<NexmarkSplit> deserialize(int version, byte[] bytes) throws IOException {
            checkVersion(version);
            DataInputDeserializer in = new DataInputDeserializer(bytes);
            int n = in.readInt();
            List<NexmarkSplit> splits = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                splits.add(read(in));
            }
            return splits;
        }
    }
}
