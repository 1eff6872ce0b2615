package io.ferrystream.ferry.exchange;

import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.base.TypeSerializerSingleton;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

import java.io.IOException;

/**
 * Flink's serializer of {@link FerryFrame}s on the network: the frame's length (an int), then its
 * bytes. Frames are immutable, so {@link #copy(FerryFrame)} returns the frame itself. A length
 * outside (0, {@value #MAX_FRAME_BYTES}] or bytes that are not a frame fail with an {@link
 * IOException} naming what was read.
 */
public final class FerryFrameSerializer extends TypeSerializerSingleton<FerryFrame> {
    private static final long serialVersionUID = 1L;

    /** The largest frame accepted: far above what the native local writes (docs/abi.md#frames). */
    public static final int MAX_FRAME_BYTES = 1 << 30;

    public static final FerryFrameSerializer INSTANCE = new FerryFrameSerializer();

    @Override
    public boolean isImmutableType() {
        return true;
    }

    @Override
    public FerryFrame createInstance() {
        return null;
    }

    @Override
    public FerryFrame copy(FerryFrame from) {
        return from;
    }

    @Override
    public FerryFrame copy(FerryFrame from, FerryFrame reuse) {
        return from;
    }

    @Override
    public int getLength() {
        return -1;
    }

    @Override
    public void serialize(FerryFrame record, DataOutputView target) throws IOException {
        byte[] b = record.bytes();
        target.writeInt(b.length);
        target.write(b);
    }

    @Override
    public FerryFrame deserialize(DataInputView source) throws IOException {
        byte[] b = new byte[readLength(source)];
        source.readFully(b);
        try {
            return new FerryFrame(b);
        } catch (IllegalArgumentException e) {
            throw new IOException("Ferry's columnar exchange read " + e.getMessage(), e);
        }
    }

    @Override
    public FerryFrame deserialize(FerryFrame reuse, DataInputView source) throws IOException {
        return deserialize(source);
    }

    @Override
    public void copy(DataInputView source, DataOutputView target) throws IOException {
        int n = readLength(source);
        target.writeInt(n);
        target.write(source, n);
    }

    private static int readLength(DataInputView source) throws IOException {
        int n = source.readInt();
        if (n <= 0 || n > MAX_FRAME_BYTES) {
            throw new IOException("Ferry's columnar exchange read a frame length of " + n + " bytes, outside (0, " + MAX_FRAME_BYTES + "]");
        }
        return n;
    }

    @Override
    public TypeSerializerSnapshot<FerryFrame> snapshotConfiguration() {
        return new FerryFrameSerializerSnapshot();
    }

    /** The serializer has no configuration: any snapshot restores {@link #INSTANCE}. */
    public static final class FerryFrameSerializerSnapshot extends SimpleTypeSerializerSnapshot<FerryFrame> {
        public FerryFrameSerializerSnapshot() {
            super(() -> INSTANCE);
        }
    }
}
