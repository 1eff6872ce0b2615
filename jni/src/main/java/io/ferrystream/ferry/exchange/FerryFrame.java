package io.ferrystream.ferry.exchange;

import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarBinaryType;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/**
 * One frame of Ferry's columnar exchange: partial rows of one destination channel, as the native
 * local aggregate wrote them (docs/abi.md#frames). Java reads only the header, to route the frame
 * ({@link FerryKeyGroupPartitioner}); the native global aggregate decodes and validates the rest.
 * Immutable once built: the bytes are owned by the frame and never written again.
 */
public final class FerryFrame {
    /** The frame's first four bytes, {@code FXF1}, read as a little-endian int. */
    public static final int MAGIC = 0x31465846;

    /**
     * The row type of the Arrow batches frames cross the native boundary in: one frame per row
     * (the local aggregate's output, the global aggregate's input).
     */
    public static final RowType ROW_TYPE =
            RowType.of(false, new org.apache.flink.table.types.logical.LogicalType[] {new VarBinaryType(false, VarBinaryType.MAX_LENGTH)}, new String[] {"frame"});

    /** Bytes of the header fields Java reads (magic to rows). */
    static final int HEADER_BYTES = 32;

    private final byte[] bytes;
    private final ByteBuffer header;

    /**
     * @param bytes a whole frame; owned by the frame from now on
     * @throws IllegalArgumentException when {@code bytes} cannot be a frame (too short, no magic)
     */
    public FerryFrame(byte[] bytes) {
        if (bytes.length < HEADER_BYTES) {
            throw new IllegalArgumentException("not a Ferry frame: " + bytes.length + " bytes, fewer than its header's " + HEADER_BYTES);
        }
        this.bytes = bytes;
        this.header = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        if (header.getInt(0) != MAGIC) {
            throw new IllegalArgumentException(String.format("not a Ferry frame: magic 0x%08x, not 0x%08x", header.getInt(0), MAGIC));
        }
    }

    /** The frame's bytes, not a copy: never modify them. */
    public byte[] bytes() {
        return bytes;
    }

    /** The frame format's version. */
    public int version() {
        return header.getShort(4) & 0xffff;
    }

    /** The smallest key group of the frame's rows. */
    public int keyGroupFirst() {
        return header.getInt(8);
    }

    /** The largest key group of the frame's rows. */
    public int keyGroupLast() {
        return header.getInt(12);
    }

    /** The consumer's max parallelism the key groups were computed for. */
    public int maxParallelism() {
        return header.getInt(16);
    }

    /** The consumer parallelism (channel count) the sender routed the rows for. */
    public int parallelism() {
        return header.getInt(20);
    }

    /** The channel the sender routed every row of the frame to. */
    public int channel() {
        return header.getInt(24);
    }

    /** The number of partial rows in the frame. */
    public int rows() {
        return header.getInt(28);
    }

    @Override
    public String toString() {
        return "FerryFrame{rows=" + rows() + ", keyGroups=[" + keyGroupFirst() + ", " + keyGroupLast() + "], channel="
                + channel() + "/" + parallelism() + ", maxParallelism=" + maxParallelism() + ", bytes=" + bytes.length + "}";
    }
}
