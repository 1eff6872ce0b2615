package io.ferrystream.ferry.nativelib;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.ArrowSchema;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.util.MemoryUtil;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;

/**
 * One native operator (a libferry.so operator handle). Not thread-safe: like a Flink operator it
 * is driven by one thread at a time.
 *
 * <p>Batches cross zero-copy over the Arrow C Data Interface:
 * <ul>
 *   <li>Input: {@link #process} exports the input root; Go reads its buffers in place and releases
 *       the export before the call returns, on success and on every error. The caller may therefore
 *       reset and refill the input vectors as soon as {@code process} returns.
 *   <li>Output: Go's output lives in C memory; it is imported into the caller's output root
 *       ({@code Data.importIntoVectorSchemaRoot}) without copying and freed when the root's
 *       vectors are cleared, reloaded or closed. The wrapped foreign memory is counted against the
 *       operator's allocator, which therefore needs headroom: an import failing on the allocator
 *       limit leaks the native batch in arrow-java 19.0.0 (apache/arrow-java#1239) and must fail
 *       the task.
 * </ul>
 *
 * <p>{@link #close()} is idempotent; a {@link Cleaner} closes handles of leaked operators.
 */
public final class NativeOperator implements AutoCloseable {
    private static final Cleaner CLEANER = Cleaner.create();
    /** Offset of {@code release} in struct ArrowArray (8 fields of 8 bytes precede it). */
    private static final long ARRAY_RELEASE_OFFSET = 64;

    private final Handle handle;
    private final Cleaner.Cleanable cleanable;
    private final BufferAllocator allocator;
    private final BufferAllocator exportAllocator;
    private final Schema inputSchema;
    private final ArrowArray in;
    private final ArrowArray out;
    private Schema outputSchema;
    private Schema checkedInputSchema;

    /**
     * The native handle and the memory it pins; the cleanup action, so it must not reference the
     * NativeOperator. Runs once: from {@link #close()} or, for a leaked operator, from the Cleaner.
     */
    private static final class Handle implements Runnable {
        final long value;
        final AtomicBoolean closed = new AtomicBoolean();
        final BufferAllocator exportAllocator;
        final ArrowArray in;
        final ArrowArray out;

        Handle(long value, BufferAllocator exportAllocator) {
            this.value = value;
            this.exportAllocator = exportAllocator;
            this.in = ArrowArray.allocateNew(exportAllocator);
            this.out = ArrowArray.allocateNew(exportAllocator);
        }

        @Override
        public void run() {
            if (closed.compareAndSet(false, true)) { // a leaked operator: the Cleaner backstop
                try {
                    FerryNative.close(value);
                } catch (FerryException e) {
                    // nobody to report to: the owner is gone
                }
            }
            in.close();
            out.close();
            exportAllocator.close();
        }
    }

    private NativeOperator(long h, BufferAllocator allocator, BufferAllocator exportAllocator, Schema inputSchema) {
        this.handle = new Handle(h, exportAllocator);
        this.allocator = allocator;
        this.exportAllocator = exportAllocator;
        this.inputSchema = inputSchema;
        this.in = handle.in;
        this.out = handle.out;
        this.cleanable = CLEANER.register(this, handle);
    }

    /**
     * Opens an operator from a JSON spec (docs/abi.md). When {@code inputSchema} is given (input
     * columns then the {@code $row_kind} TINYINT column, e.g. from
     * {@code ArrowTypes.schemaOf(rowType)}) the library checks it against the spec, and every
     * input root is checked against it before export.
     *
     * @param allocator allocator for imported output batches (needs headroom, see class doc); a
     *     child of it carries the export-side structures
     */
    public static NativeOperator open(String specJson, Schema inputSchema, BufferAllocator allocator) {
        if (specJson == null || allocator == null) {
            throw new NullPointerException("specJson and allocator must not be null");
        }
        NativeLibrary.load();
        BufferAllocator exportAllocator = allocator.newChildAllocator("ferry-export", 0, Long.MAX_VALUE);
        try {
            long h;
            if (inputSchema == null) {
                h = FerryNative.open(specJson, 0);
            } else {
                try (ArrowSchema s = ArrowSchema.allocateNew(exportAllocator)) {
                    Data.exportSchema(exportAllocator, inputSchema, null, s);
                    try {
                        h = FerryNative.open(specJson, s.memoryAddress());
                    } finally {
                        if (s.snapshot().release != 0) { // the ABI consumes it; never leak if not
                            s.release();
                        }
                    }
                }
            }
            try {
                return new NativeOperator(h, allocator, exportAllocator, inputSchema);
            } catch (RuntimeException | Error e) {
                FerryNative.close(h);
                throw e;
            }
        } catch (RuntimeException | Error e) {
            try {
                exportAllocator.close(); // reports what the failed export left allocated
            } catch (RuntimeException leak) {
                e.addSuppressed(leak); // never in place of the cause
            }
            throw e;
        }
    }

    /** The operator's output schema: its output columns, then {@code $row_kind}. Cached. */
    public Schema outputSchema() {
        ensureOpen();
        if (outputSchema == null) {
            try (ArrowSchema s = ArrowSchema.allocateNew(exportAllocator)) {
                FerryNative.outputSchema(handle.value, s.memoryAddress());
                outputSchema = Data.importSchema(allocator, s, null); // releases the C schema
            } finally {
                Reference.reachabilityFence(this);
            }
        }
        return outputSchema;
    }

    /**
     * Processes one input batch (columns in spec order, then {@code $row_kind}) at processing
     * time {@code nowMs}. Returns true when the operator produced rows, which were imported into
     * {@code output} (a root of {@link #outputSchema()}); false leaves {@code output} unchanged.
     * The input is released by the library before this returns, also when it throws.
     */
    public boolean process(VectorSchemaRoot input, long nowMs, VectorSchemaRoot output) {
        ensureOpen();
        checkInput(input);
        long inAddr = in.memoryAddress();
        Data.exportVectorSchemaRoot(exportAllocator, input, null, in);
        try {
            return importOutput(FerryNative.process(handle.value, inAddr, nowMs, out.memoryAddress()), output);
        } finally {
            if (MemoryUtil.getLong(inAddr + ARRAY_RELEASE_OFFSET) != 0) { // contract: never happens
                in.release();
            }
            Reference.reachabilityFence(this);
        }
    }

    /** Advances event time to {@code watermarkMs} and processing time to {@code nowMs}. */
    public boolean advance(long watermarkMs, long nowMs, VectorSchemaRoot output) {
        ensureOpen();
        try {
            return importOutput(FerryNative.advance(handle.value, watermarkMs, nowMs, out.memoryAddress()), output);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Emits everything the operator buffers (before a checkpoint barrier, at end of input). */
    public boolean flush(long nowMs, VectorSchemaRoot output) {
        ensureOpen();
        try {
            return importOutput(FerryNative.flush(handle.value, nowMs, out.memoryAddress()), output);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    private boolean importOutput(boolean filled, VectorSchemaRoot output) {
        if (!filled) {
            return false;
        }
        try {
            Data.importIntoVectorSchemaRoot(allocator, out, output, null, false);
        } finally {
            out.release(); // no-op once imported (the importer moved it); frees it if import failed
        }
        return true;
    }

    /** The serialised state of one key group, or null when it holds no state. */
    public byte[] snapshot(int keyGroup) {
        ensureOpen();
        try {
            return FerryNative.snapshot(handle.value, keyGroup);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Restores one key group from a {@link #snapshot} blob; the key group must be empty. */
    public void restore(int keyGroup, byte[] blob) {
        if (blob == null) {
            throw new NullPointerException("blob");
        }
        ensureOpen();
        try {
            FerryNative.restore(handle.value, keyGroup, blob);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Fills {@code out} with the figures of the operator's state: {@code out[0]} keys (groups),
     * {@code out[1]} estimated bytes of native memory the state owns. Not concurrently with
     * another call on this operator.
     */
    public void stats(long[] out) {
        ensureOpen();
        try {
            FerryNative.stats(handle.value, out);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Whether {@link #close()} has run. */
    public boolean isClosed() {
        return handle.closed.get();
    }

    /**
     * Closes the native operator and frees its state. Idempotent. Output batches already imported
     * stay valid until their roots are closed.
     */
    @Override
    public void close() {
        if (!handle.closed.compareAndSet(false, true)) {
            return;
        }
        FerryException failure = null;
        try {
            FerryNative.close(handle.value);
        } catch (FerryException e) {
            failure = e; // e.g. EPOISONED: the handle is lost with the library
        }
        cleanable.clean(); // frees the export structures and deregisters the backstop
        if (failure != null) {
            throw failure;
        }
    }

    /** The raw handle, for tests that drive {@link FerryNative} directly. */
    long nativeHandle() {
        return handle.value;
    }

    /** The child allocator that carries export-side structures, for tests. */
    BufferAllocator exportAllocator() {
        return exportAllocator;
    }

    private void ensureOpen() {
        if (handle.closed.get()) {
            throw new FerryException(FerryException.EINVAL, "NativeOperator: operator is closed");
        }
    }

    /** Arrow types of the input root against the schema given at open; cached per schema object. */
    private void checkInput(VectorSchemaRoot input) {
        Schema s = input.getSchema();
        if (inputSchema == null || s == checkedInputSchema) {
            return;
        }
        List<Field> want = inputSchema.getFields();
        List<Field> got = s.getFields();
        if (got.size() != want.size()) {
            throw new FerryException(FerryException.EDATA, "NativeOperator.process: input has " + got.size()
                    + " columns, the operator was opened with " + want.size());
        }
        for (int i = 0; i < want.size(); i++) {
            if (!got.get(i).getType().equals(want.get(i).getType())) {
                throw new FerryException(FerryException.EDATA, "NativeOperator.process: input column " + i + " ("
                        + got.get(i).getName() + ") has Arrow type " + got.get(i).getType()
                        + ", the operator was opened with " + want.get(i).getType());
            }
        }
        checkedInputSchema = s;
    }
}
