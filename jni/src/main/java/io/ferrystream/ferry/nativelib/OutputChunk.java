package io.ferrystream.ferry.nativelib;

import static io.ferrystream.ferry.nativelib.InputExport.ARRAY_SIZE;
import static io.ferrystream.ferry.nativelib.InputExport.BUFFERS;
import static io.ferrystream.ferry.nativelib.InputExport.CHILDREN;
import static io.ferrystream.ferry.nativelib.InputExport.DICTIONARY;
import static io.ferrystream.ferry.nativelib.InputExport.LENGTH;
import static io.ferrystream.ferry.nativelib.InputExport.NULL_COUNT;
import static io.ferrystream.ferry.nativelib.InputExport.N_BUFFERS;
import static io.ferrystream.ferry.nativelib.InputExport.N_CHILDREN;
import static io.ferrystream.ferry.nativelib.InputExport.OFFSET;
import static io.ferrystream.ferry.nativelib.InputExport.RELEASE;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.OwnershipTransferResult;
import org.apache.arrow.memory.ReferenceManager;
import org.apache.arrow.memory.util.MemoryUtil;
import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.ipc.message.ArrowFieldNode;

/**
 * One output chunk of libferry.so loaded into a {@link VectorSchemaRoot} without Arrow Java's C
 * Data importer: the chunk's buffers are wrapped in {@link ArrowBuf}s that share this one
 * reference manager (no allocator ledger per buffer) and loaded into the root's vectors with
 * {@link FieldVector#loadFieldBuffers}. The chunk owns one off-heap block: the {@code struct
 * ArrowArray} moved out of the caller's output struct (whose {@code release} is then NULL),
 * followed by an all-valid bitmap for each column the library sent without one (Arrow Java's
 * vectors would otherwise allocate one per column per call). When the last buffer is released
 * (the root cleared, reloaded or closed, or a vector's buffers transferred and released in turn)
 * the chunk calls the struct's {@code release} and frees the block, from whichever thread that is.
 *
 * <p>The memory is not counted against any allocator: Go counts it
 * ({@link NativeLibrary#outstandingBytes}). {@link #getAllocator} answers the allocator the
 * operator was opened with, for Arrow code that asks.
 */
final class OutputChunk implements ReferenceManager {
    private final AtomicInteger refs = new AtomicInteger(1);
    private final long block;
    private final BufferAllocator allocator;

    private OutputChunk(long block, BufferAllocator allocator) {
        this.block = block;
        this.allocator = allocator;
    }

    /** Whether every vector of {@code root} is of a class {@link #load} handles. */
    static boolean loads(VectorSchemaRoot root) {
        for (FieldVector v : root.getFieldVectors()) {
            if (!(v instanceof BaseFixedWidthVector) && !(v instanceof BaseVariableWidthVector)) {
                return false;
            }
        }
        return true;
    }

    /**
     * Loads the chunk in the struct ArrowArray at {@code src} (filled by the library; {@link
     * #loads} holds for {@code root}) into {@code root}, moving it out of {@code src}. Throws
     * {@link FerryException} EINVAL when the root's columns do not match the chunk's and EINTERNAL
     * on a malformed struct, both before anything is loaded and with {@code src} left for the
     * caller to release.
     */
    static void load(long src, VectorSchemaRoot root, BufferAllocator allocator) {
        List<FieldVector> vectors = root.getFieldVectors();
        int n = vectors.size();
        long length = MemoryUtil.getLong(src + LENGTH);
        long kids = MemoryUtil.getLong(src + CHILDREN);
        long nChildren = MemoryUtil.getLong(src + N_CHILDREN);
        if (nChildren != n) {
            throw wrongRoot("the chunk has " + nChildren + " columns, the output root " + n);
        }
        if (length < 0 || length > Integer.MAX_VALUE || MemoryUtil.getLong(src + OFFSET) != 0 || (n > 0 && kids == 0)) {
            throw malformed(length + " rows at offset " + MemoryUtil.getLong(src + OFFSET));
        }
        int rows = (int) length;
        long bitmap = (rows + 63L) >>> 6 << 3; // bytes of one all-valid bitmap, whole words
        int missing = 0; // columns without a validity buffer
        for (int i = 0; i < n; i++) {
            long kid = MemoryUtil.getLong(kids + 8L * i);
            FieldVector v = vectors.get(i);
            long want = v instanceof BaseVariableWidthVector ? 3 : 2;
            if (kid != 0 && MemoryUtil.getLong(kid + N_BUFFERS) != want) {
                throw wrongRoot("chunk column " + i + " has " + MemoryUtil.getLong(kid + N_BUFFERS)
                        + " buffers, the output root's vector " + v.getName() + " (" + v.getMinorType() + ") " + want);
            }
            long nulls = kid == 0 ? -1 : MemoryUtil.getLong(kid + NULL_COUNT);
            if (kid == 0 || MemoryUtil.getLong(kid + RELEASE) == 0 || MemoryUtil.getLong(kid + LENGTH) != length
                    || MemoryUtil.getLong(kid + OFFSET) != 0 || MemoryUtil.getLong(kid + N_CHILDREN) != 0
                    || MemoryUtil.getLong(kid + DICTIONARY) != 0 || MemoryUtil.getLong(kid + BUFFERS) == 0
                    || nulls < 0 || nulls > length) {
                throw malformed("column " + i + " is not an unreleased " + want + "-buffer array of " + length
                        + " rows with a null count in [0, " + length + "]");
            }
            long bufs = MemoryUtil.getLong(kid + BUFFERS);
            if (MemoryUtil.getLong(bufs) == 0) {
                if (nulls != 0) {
                    throw malformed("column " + i + " has " + nulls + " nulls and no validity buffer");
                }
                missing++;
            }
            for (int b = 1; b < want; b++) {
                if (rows > 0 && MemoryUtil.getLong(bufs + 8L * b) == 0 && (b == 1 || dataBytes(bufs, rows) > 0)) {
                    throw malformed("column " + i + " has no buffer " + b);
                }
            }
        }
        long size = ARRAY_SIZE + bitmap * missing;
        long block = MemoryUtil.allocateMemory(size);
        MemoryUtil.copyMemory(src, block, ARRAY_SIZE);
        MemoryUtil.putLong(src + RELEASE, 0); // moved: the chunk releases it
        OutputChunk chunk = new OutputChunk(block, allocator);
        try {
            long ones = block + ARRAY_SIZE;
            if (missing > 0) {
                MemoryUtil.setMemory(ones, bitmap * missing, (byte) 0);
            }
            long validityBytes = (rows + 7L) >>> 3;
            for (int i = 0; i < n; i++) {
                FieldVector v = vectors.get(i);
                long bufs = MemoryUtil.getLong(MemoryUtil.getLong(kids + 8L * i) + BUFFERS);
                long validity = MemoryUtil.getLong(bufs);
                if (validity == 0) {
                    validity = ones;
                    ones += bitmap;
                    MemoryUtil.setMemory(validity, rows >>> 3, (byte) 0xFF);
                    if ((rows & 7) != 0) {
                        MemoryUtil.putByte(validity + (rows >>> 3), (byte) ((1 << (rows & 7)) - 1));
                    }
                }
                ArrowBuf valid = chunk.wrap(validity, validityBytes);
                ArrowFieldNode node = new ArrowFieldNode(rows, MemoryUtil.getLong(MemoryUtil.getLong(kids + 8L * i) + NULL_COUNT));
                if (v instanceof BaseVariableWidthVector) {
                    ArrowBuf offsets = chunk.wrap(MemoryUtil.getLong(bufs + 8), rows == 0 ? 0 : 4L * (rows + 1));
                    ArrowBuf data = chunk.wrap(MemoryUtil.getLong(bufs + 16), dataBytes(bufs, rows));
                    v.loadFieldBuffers(node, List.of(valid, offsets, data));
                } else {
                    long bytes = v instanceof BitVector ? validityBytes : (long) rows * ((BaseFixedWidthVector) v).getTypeWidth();
                    v.loadFieldBuffers(node, List.of(valid, chunk.wrap(MemoryUtil.getLong(bufs + 8), bytes)));
                }
            }
            root.setRowCount(rows);
        } finally {
            chunk.release(); // the vectors hold the chunk from here
        }
    }

    /** Bytes of a variable-width column's data buffer: its last offset (0 without offsets). */
    private static long dataBytes(long bufs, int rows) {
        long offsets = MemoryUtil.getLong(bufs + 8);
        return rows == 0 || offsets == 0 ? 0 : Math.max(0, MemoryUtil.getInt(offsets + 4L * rows));
    }

    private static FerryException wrongRoot(String what) {
        return new FerryException(FerryException.EINVAL, "NativeOperator: the output root does not match the"
                + " operator's output schema: " + what);
    }

    private static FerryException malformed(String what) {
        return new FerryException(FerryException.EINTERNAL, "NativeOperator: malformed output chunk from the library: " + what);
    }

    /** A buffer of this chunk over {@code bytes} at {@code address}; the allocator's empty buffer when there are none. */
    private ArrowBuf wrap(long address, long bytes) {
        return address == 0 || bytes == 0 ? allocator.getEmpty() : new ArrowBuf(this, null, bytes, address);
    }

    @Override
    public int getRefCount() {
        return refs.get();
    }

    @Override
    public boolean release() {
        return release(1);
    }

    @Override
    public boolean release(int decrement) {
        if (decrement < 1) {
            throw new IllegalArgumentException("release by " + decrement);
        }
        int left = refs.addAndGet(-decrement);
        if (left < 0) {
            throw new IllegalStateException("Ferry output chunk released more often than retained");
        }
        if (left > 0) {
            return false;
        }
        FerryNative.releaseArray(block);
        MemoryUtil.freeMemory(block);
        return true;
    }

    @Override
    public void retain() {
        retain(1);
    }

    @Override
    public void retain(int increment) {
        if (increment < 1) {
            throw new IllegalArgumentException("retain by " + increment);
        }
        int r;
        do {
            r = refs.get();
            if (r <= 0) {
                throw new IllegalStateException("Ferry output chunk retained after its release");
            }
        } while (!refs.compareAndSet(r, r + increment));
    }

    @Override
    public ArrowBuf retain(ArrowBuf srcBuffer, BufferAllocator targetAllocator) {
        retain();
        return new ArrowBuf(this, null, srcBuffer.capacity(), srcBuffer.memoryAddress());
    }

    @Override
    public ArrowBuf deriveBuffer(ArrowBuf sourceBuffer, long index, long length) {
        return new ArrowBuf(this, null, length, sourceBuffer.memoryAddress() + index);
    }

    @Override
    public OwnershipTransferResult transferOwnership(ArrowBuf sourceBuffer, BufferAllocator targetAllocator) {
        ArrowBuf moved = retain(sourceBuffer, targetAllocator);
        return new OwnershipTransferResult() {
            @Override
            public boolean getAllocationFit() {
                return true;
            }

            @Override
            public ArrowBuf getTransferredBuffer() {
                return moved;
            }
        };
    }

    @Override
    public BufferAllocator getAllocator() {
        return allocator;
    }

    /** 0: the chunk's memory is Go's, counted by the library, not by an allocator. */
    @Override
    public long getSize() {
        return 0;
    }

    @Override
    public long getAccountedSize() {
        return 0;
    }
}
