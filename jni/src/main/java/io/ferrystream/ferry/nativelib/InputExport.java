package io.ferrystream.ferry.nativelib;

import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.util.MemoryUtil;
import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.VectorSchemaRoot;

/**
 * A reusable C {@code struct ArrowArray} tree for exporting input roots without Arrow Java's C
 * Data exporter: one struct array (no validity buffer) with one child per column, allocated once
 * off-heap (grown when a root has more columns) and refilled by every {@link #fill} with the
 * vectors' own buffer addresses, lengths and null counts. Nothing is retained: the vectors stay
 * owned by Java, which is sound because libferry.so releases every input before the call returns
 * (include/ferry.h). The {@code release} callback of the root and of every child is the JNI
 * glue's {@code release_java_input}, which only sets {@code release} to NULL.
 *
 * <p>Handles the vector classes of Ferry's column types ({@link BaseFixedWidthVector},
 * {@link BaseVariableWidthVector}); {@link #fill} returns 0 for any other, and the caller uses
 * Arrow Java's exporter (whose result the library then checks and rejects as it always did).
 * Not thread-safe; {@link #close} frees the tree.
 */
final class InputExport implements AutoCloseable {
    /** Size of struct ArrowArray and the offsets of its fields. */
    static final long ARRAY_SIZE = 80;
    static final long LENGTH = 0;
    static final long NULL_COUNT = 8;
    static final long OFFSET = 16;
    static final long N_BUFFERS = 24;
    static final long N_CHILDREN = 32;
    static final long BUFFERS = 40;
    static final long CHILDREN = 48;
    static final long DICTIONARY = 56;
    static final long RELEASE = 64;
    static final long PRIVATE_DATA = 72;

    private static final long RELEASE_CALLBACK = FerryNative.inputRelease();

    /** The tree: root struct, its buffer pointer, the child pointers, the children, their buffer pointers. */
    private long base;
    /** Columns the tree has room for. */
    private int capacity;

    /** The root struct's address (valid until the next {@link #fill} that grows the tree, or {@link #close}). */
    long address() {
        return base;
    }

    /**
     * Fills the tree with {@code root}'s vectors and returns the root struct's address, or 0 when a
     * vector is not of a class this export handles. Throws {@link FerryException} EDATA when a
     * vector's value count exceeds its buffers (the library would read past them).
     */
    long fill(VectorSchemaRoot root) {
        List<FieldVector> vectors = root.getFieldVectors();
        int n = vectors.size();
        for (int i = 0; i < n; i++) {
            FieldVector v = vectors.get(i);
            if (!(v instanceof BaseFixedWidthVector) && !(v instanceof BaseVariableWidthVector)) {
                return 0;
            }
        }
        if (n > capacity || base == 0) {
            grow(n);
        }
        long kidPtrs = base + ARRAY_SIZE + 8;
        long kids = kidPtrs + 8L * capacity;
        long kidBufs = kids + ARRAY_SIZE * capacity;
        for (int i = 0; i < n; i++) {
            FieldVector v = vectors.get(i);
            long kid = kids + ARRAY_SIZE * i;
            long bufs = kidBufs + 24L * i;
            int count = v.getValueCount();
            if (count > v.getValueCapacity()) {
                throw overrun(i, v, count, v.getValueCapacity() + " values");
            }
            MemoryUtil.putLong(bufs, address(v.getValidityBuffer()));
            long nBuffers = 2;
            if (v instanceof BaseVariableWidthVector) {
                ArrowBuf offsets = v.getOffsetBuffer();
                ArrowBuf data = v.getDataBuffer();
                if (count > 0) {
                    int end = offsets.getInt(4L * count);
                    if (offsets.getInt(0) < 0 || end < 0 || end > data.capacity()) {
                        throw overrun(i, v, count, "offsets up to " + end + " over " + data.capacity() + " bytes");
                    }
                }
                MemoryUtil.putLong(bufs + 8, address(offsets));
                MemoryUtil.putLong(bufs + 16, address(data));
                nBuffers = 3;
            } else {
                MemoryUtil.putLong(bufs + 8, address(v.getDataBuffer()));
            }
            MemoryUtil.putLong(kidPtrs + 8L * i, kid);
            MemoryUtil.putLong(kid + LENGTH, count);
            MemoryUtil.putLong(kid + NULL_COUNT, v.getNullCount());
            MemoryUtil.putLong(kid + OFFSET, 0);
            MemoryUtil.putLong(kid + N_BUFFERS, nBuffers);
            MemoryUtil.putLong(kid + N_CHILDREN, 0);
            MemoryUtil.putLong(kid + BUFFERS, bufs);
            MemoryUtil.putLong(kid + CHILDREN, 0);
            MemoryUtil.putLong(kid + DICTIONARY, 0);
            MemoryUtil.putLong(kid + RELEASE, RELEASE_CALLBACK);
            MemoryUtil.putLong(kid + PRIVATE_DATA, 0);
        }
        MemoryUtil.putLong(base + ARRAY_SIZE, 0); // the struct's validity buffer: none
        MemoryUtil.putLong(base + LENGTH, root.getRowCount());
        MemoryUtil.putLong(base + NULL_COUNT, 0);
        MemoryUtil.putLong(base + OFFSET, 0);
        MemoryUtil.putLong(base + N_BUFFERS, 1);
        MemoryUtil.putLong(base + N_CHILDREN, n);
        MemoryUtil.putLong(base + BUFFERS, base + ARRAY_SIZE);
        MemoryUtil.putLong(base + CHILDREN, kidPtrs);
        MemoryUtil.putLong(base + DICTIONARY, 0);
        MemoryUtil.putLong(base + RELEASE, RELEASE_CALLBACK);
        MemoryUtil.putLong(base + PRIVATE_DATA, 0);
        return base;
    }

    /** Whether the library released the tree (the root's release is NULL); true before any fill. */
    boolean released() {
        return base == 0 || MemoryUtil.getLong(base + RELEASE) == 0;
    }

    /** Marks the tree released, as the library would have (never needed while it keeps the ABI). */
    void release() {
        if (!released()) {
            FerryNative.releaseArray(base);
        }
    }

    @Override
    public void close() {
        if (base != 0) {
            MemoryUtil.freeMemory(base);
            base = 0;
            capacity = 0;
        }
    }

    private void grow(int columns) {
        close();
        int cap = Math.max(columns, 1);
        base = MemoryUtil.allocateMemory(ARRAY_SIZE + 8 + (8 + ARRAY_SIZE + 24) * cap);
        capacity = cap;
        MemoryUtil.putLong(base + RELEASE, 0);
    }

    private static long address(ArrowBuf b) {
        return b == null || b.capacity() == 0 ? 0 : b.memoryAddress();
    }

    private static FerryException overrun(int column, FieldVector v, int count, String what) {
        return new FerryException(FerryException.EDATA, "NativeOperator.process: input column " + column + " ("
                + v.getName() + ") has " + count + " values but its buffers hold " + what);
    }
}
