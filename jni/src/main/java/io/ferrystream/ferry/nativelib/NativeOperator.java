package io.ferrystream.ferry.nativelib;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
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
 * <p>Batches cross zero-copy over the Arrow C Data Interface, without Arrow Java's C Data
 * exporter and importer (whose per-buffer allocator bookkeeping cost ~13 µs per call):
 * <ul>
 *   <li>Input: {@link #process} fills a reusable C struct tree ({@link InputExport}, one per
 *       input, allocated once) with the addresses of the input root's own buffers; nothing is
 *       retained. Go reads the buffers in place and releases the struct before the call returns,
 *       on success and on every error. The caller may therefore reset and refill the input
 *       vectors as soon as {@code process} returns.
 *   <li>Output: Go's output lives in C memory and comes in chunks: a call may produce several
 *       (ferry_operator_next), each loaded into the caller's output root ({@link OutputChunk}:
 *       Go's buffers wrapped in {@code ArrowBuf}s sharing one reference count per chunk) without
 *       copying and handed to the caller's chunk consumer, before the next chunk replaces it. The
 *       memory is freed (Go's release callback) when the last of the chunk's buffers is released:
 *       the root's vectors cleared, reloaded or closed, or vectors transferred out of it closed
 *       in turn. It is counted by the library ({@link NativeLibrary#outstandingBytes}), not by
 *       an Arrow allocator.
 * </ul>
 *
 * <p>Roots with vectors other than fixed- and variable-width ones, and every operator opened
 * while the system property {@value #ARROW_JAVA_CDATA_PROPERTY} is "true", use Arrow Java's
 * {@code Data.exportVectorSchemaRoot} and {@code Data.importIntoVectorSchemaRoot} instead, with
 * the same lifetimes; that import is counted against the operator's allocator, which therefore
 * needs headroom: an import failing on the allocator limit leaks the native batch in arrow-java
 * 19.0.0 (apache/arrow-java#1239) and must fail the task.
 *
 * <p>{@link #close()} is idempotent; a {@link Cleaner} closes handles of leaked operators.
 */
public final class NativeOperator implements AutoCloseable {
    private static final Cleaner CLEANER = Cleaner.create();
    /**
     * System property, read when an operator opens: "true" moves batches with Arrow Java's C Data
     * exporter and importer ({@code Data.exportVectorSchemaRoot}, {@code
     * Data.importIntoVectorSchemaRoot}) instead of {@link InputExport} and {@link OutputChunk}.
     * For benchmarks and differential tests of the two paths.
     */
    public static final String ARROW_JAVA_CDATA_PROPERTY = "ferry.cdata.arrow-java";

    private final Handle handle;
    private final Cleaner.Cleanable cleanable;
    private final BufferAllocator allocator;
    private final BufferAllocator exportAllocator;
    private final List<Schema> inputSchemas; // per input; null entries (or an empty list): unchecked
    private final Schema[] checkedInputSchemas;
    private final ArrowArray in;
    private final ArrowArray out;
    /** Whether batches cross with Arrow Java's exporter and importer ({@link #ARROW_JAVA_CDATA_PROPERTY}). */
    private final boolean arrowJava;
    private Schema outputSchema;
    /** {@link #processRuns}: the exported batches' addresses, one per input (0: none). */
    private long[] addrs = new long[0];

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
        /** {@link #process}: the reusable input tree. */
        final InputExport input = new InputExport();
        /** {@link #processRuns}: one export structure per input, made at its first call. */
        ArrowArray[] ins = new ArrowArray[0];
        /** {@link #processRuns}: one reusable input tree per input, likewise. */
        InputExport[] inputs = new InputExport[0];

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
            for (ArrowArray a : ins) {
                a.close();
            }
            input.close();
            for (InputExport e : inputs) {
                e.close();
            }
            exportAllocator.close();
        }
    }

    private NativeOperator(long h, BufferAllocator allocator, BufferAllocator exportAllocator,
            List<Schema> inputSchemas) {
        this.handle = new Handle(h, exportAllocator);
        this.allocator = allocator;
        this.exportAllocator = exportAllocator;
        this.inputSchemas = inputSchemas;
        this.checkedInputSchemas = new Schema[inputSchemas.size()];
        this.in = handle.in;
        this.out = handle.out;
        this.arrowJava = Boolean.getBoolean(ARROW_JAVA_CDATA_PROPERTY);
        this.cleanable = CLEANER.register(this, handle);
    }

    /**
     * Opens an operator of one input from a JSON spec (docs/abi.md). When {@code inputSchema} is
     * given (input columns then the {@code $row_kind} TINYINT column, e.g. from
     * {@code ArrowTypes.schemaOf(rowType)}) the library checks it against the spec, and every
     * input root is checked against it before export.
     *
     * @param allocator allocator of the vectors' empty buffers and, on Arrow Java's path, of
     *     imported output batches (needs headroom, see class doc); a child of it carries the
     *     export-side structures of that path
     */
    public static NativeOperator open(String specJson, Schema inputSchema, BufferAllocator allocator) {
        return openInputs(specJson, inputSchema == null ? List.of() : List.of(inputSchema), allocator);
    }

    /**
     * Opens an operator from a JSON spec (docs/abi.md) with the schemas of its inputs, in the
     * spec's input order: an empty list checks nothing, otherwise the list has one entry per input
     * (null: that input is not checked).
     */
    public static NativeOperator openInputs(String specJson, List<Schema> inputSchemas, BufferAllocator allocator) {
        return openInputs(specJson, null, inputSchemas, allocator);
    }

    /** Whether {@link #recordSpecs} is on. */
    private static volatile boolean recording;
    /** The spec JSONs opened while recording. */
    private static final Set<String> RECORDED = ConcurrentHashMap.newKeySet();

    /**
     * Starts (and empties) or stops the record of every spec JSON this JVM opens, the planner's
     * spec checks included: the JVM's spec writers as the library read them (for the spec
     * conformance test). Off by default.
     */
    public static void recordSpecs(boolean on) {
        if (on) {
            RECORDED.clear();
        }
        recording = on;
    }

    /** The spec JSONs opened since {@link #recordSpecs} turned recording on. */
    public static Set<String> recordedSpecs() {
        return Set.copyOf(RECORDED);
    }

    /**
     * Opens an operator of a function kind with its secrets (ferry_operator_open's
     * {@code secrets_json}: what the function takes beside its spec, e.g. the lookup's connection
     * string and credentials; no message contains them), checking {@code inputSchema} as {@link
     * #open} does. A function opened with secrets connects to its external system here: {@link
     * FerryException#EEXTERNAL} when that fails.
     */
    public static NativeOperator openFunction(String specJson, String secretsJson, Schema inputSchema, BufferAllocator allocator) {
        if (secretsJson == null) {
            throw new NullPointerException("secretsJson");
        }
        return openInputs(specJson, secretsJson, inputSchema == null ? List.of() : List.of(inputSchema), allocator);
    }

    private static NativeOperator openInputs(String specJson, String secretsJson, List<Schema> inputSchemas,
            BufferAllocator allocator) {
        if (specJson == null || allocator == null || inputSchemas == null) {
            throw new NullPointerException("specJson, inputSchemas and allocator must not be null");
        }
        if (recording) {
            RECORDED.add(specJson);
        }
        NativeLibrary.load();
        List<Schema> schemas = Collections.unmodifiableList(new ArrayList<>(inputSchemas));
        BufferAllocator exportAllocator = allocator.newChildAllocator("ferry-export", 0, Long.MAX_VALUE);
        try {
            long h;
            List<ArrowSchema> exported = new ArrayList<>();
            try {
                long[] addrs = new long[schemas.size()];
                for (int i = 0; i < addrs.length; i++) {
                    if (schemas.get(i) != null) {
                        ArrowSchema s = ArrowSchema.allocateNew(exportAllocator);
                        exported.add(s);
                        Data.exportSchema(exportAllocator, schemas.get(i), null, s);
                        addrs[i] = s.memoryAddress();
                    }
                }
                h = FerryNative.open(specJson, secretsJson, addrs.length == 0 ? null : addrs);
            } finally {
                for (ArrowSchema s : exported) {
                    if (s.snapshot().release != 0) { // the ABI consumes them; never leak if not
                        s.release();
                    }
                    s.close();
                }
            }
            try {
                return new NativeOperator(h, allocator, exportAllocator, schemas);
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
     * Processes one batch of input {@code input} (its columns in spec order, then
     * {@code $row_kind}) at processing time {@code nowMs}. Each chunk of output the call produces
     * is imported into {@code output} (a root of {@link #outputSchema()}) and handed to
     * {@code onChunk} before the next one replaces it; returns the number of chunks (0 leaves
     * {@code output} unchanged). The input is released by the library before this returns, also
     * when it throws. An exception from {@code onChunk} leaves the rest of the output pending in
     * the library, where every later call but {@link #close()} fails: the operator must be closed.
     */
    public int process(int input, VectorSchemaRoot in, long nowMs, VectorSchemaRoot output,
            Consumer<VectorSchemaRoot> onChunk) {
        ensureOpen();
        checkInput(input, in);
        long inAddr = export(in, handle.input, this.in);
        try {
            return drain(FerryNative.process(handle.value, input, inAddr, nowMs, out.memoryAddress()), output, onChunk);
        } finally {
            releaseIfLive(inAddr); // contract: the library already did
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Processes the rows of every input in one call, in the order they arrived
     * (ferry_operator_process with runs): {@code ins[i]} holds input i's rows (null or empty: none),
     * and {@code runs[0 .. 2 * nRuns)} the (input, rows) pairs, each the next rows of its input,
     * in arrival order; they use every input's rows exactly once. Output chunks as in {@link
     * #process}. Every input is released by the library before this returns, also when it throws.
     */
    public int processRuns(VectorSchemaRoot[] ins, int[] runs, int nRuns, long nowMs, VectorSchemaRoot output,
            Consumer<VectorSchemaRoot> onChunk) {
        ensureOpen();
        if (handle.ins.length != ins.length) {
            for (ArrowArray a : handle.ins) {
                a.close();
            }
            for (InputExport e : handle.inputs) {
                e.close();
            }
            handle.ins = new ArrowArray[ins.length];
            handle.inputs = new InputExport[ins.length];
            for (int i = 0; i < ins.length; i++) {
                handle.ins[i] = ArrowArray.allocateNew(exportAllocator);
                handle.inputs[i] = new InputExport();
            }
            addrs = new long[ins.length];
        }
        for (int i = 0; i < ins.length; i++) {
            addrs[i] = 0;
            if (ins[i] != null && ins[i].getRowCount() > 0) {
                checkInput(i, ins[i]);
            }
        }
        try {
            for (int i = 0; i < ins.length; i++) {
                if (ins[i] != null && ins[i].getRowCount() > 0) {
                    addrs[i] = export(ins[i], handle.inputs[i], handle.ins[i]);
                }
            }
            return drain(FerryNative.processRuns(handle.value, addrs, runs, nRuns, nowMs, out.memoryAddress()),
                    output, onChunk);
        } finally {
            for (int i = 0; i < ins.length; i++) {
                releaseIfLive(addrs[i]); // contract: the library already did
            }
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Advances event time to {@code watermarkMs} and processing time to {@code nowMs}; output
     * chunks as in {@link #process}.
     */
    public int advance(long watermarkMs, long nowMs, VectorSchemaRoot output, Consumer<VectorSchemaRoot> onChunk) {
        ensureOpen();
        try {
            return drain(FerryNative.advance(handle.value, watermarkMs, nowMs, out.memoryAddress()), output, onChunk);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Emits everything the operator buffers (before a checkpoint barrier, at end of input);
     * output chunks as in {@link #process}.
     */
    public int flush(long nowMs, VectorSchemaRoot output, Consumer<VectorSchemaRoot> onChunk) {
        ensureOpen();
        try {
            return drain(FerryNative.flush(handle.value, nowMs, out.memoryAddress()), output, onChunk);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Exports {@code root} into {@code tree} and returns the struct's address; with Arrow Java's
     * exporter into {@code fallback} when the operator uses it or the tree cannot take the root's
     * vectors.
     */
    private long export(VectorSchemaRoot root, InputExport tree, ArrowArray fallback) {
        long addr = arrowJava ? 0 : tree.fill(root);
        if (addr == 0) {
            Data.exportVectorSchemaRoot(exportAllocator, root, null, fallback);
            addr = fallback.memoryAddress();
        }
        return addr;
    }

    /** Calls the release callback of the struct ArrowArray at {@code addr} (0: none) if it is set. */
    private static void releaseIfLive(long addr) {
        if (addr != 0 && MemoryUtil.getLong(addr + InputExport.RELEASE) != 0) {
            FerryNative.releaseArray(addr);
        }
    }

    /**
     * Hands the chunk of an output call (flags from FerryNative) and every chunk that follows
     * (ferry_operator_next) to onChunk; returns how many there were.
     */
    private int drain(int flags, VectorSchemaRoot output, Consumer<VectorSchemaRoot> onChunk) {
        int chunks = 0;
        while (true) {
            if ((flags & FerryNative.FILLED) != 0) {
                long outAddr = out.memoryAddress();
                try {
                    if (!arrowJava && OutputChunk.loads(output)) {
                        OutputChunk.load(outAddr, output, allocator);
                    } else {
                        Data.importIntoVectorSchemaRoot(allocator, out, output, null, false);
                    }
                } finally {
                    releaseIfLive(outAddr); // no-op once loaded (moved out); frees it if loading failed
                }
                chunks++;
                onChunk.accept(output);
            }
            if ((flags & FerryNative.MORE) == 0) {
                return chunks;
            }
            flags = FerryNative.next(handle.value, out.memoryAddress());
        }
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

    /**
     * Freezes the state for a checkpoint written later, on any thread, while this operator keeps
     * being called ({@link #snapshotView}); returns the view's id. The view stays open until
     * {@link #releaseView} or {@link #close()}.
     */
    public long freeze() {
        ensureOpen();
        try {
            return FerryNative.freeze(handle.value);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * {@link #snapshot} for a view {@link #freeze} returned: the chunks the snapshot held at the
     * freeze, key group by key group. Any thread, also while other calls run; fails once the
     * view is released or the operator closed.
     */
    public byte[] snapshotView(long view, int keyGroup) {
        ensureOpen();
        try {
            return FerryNative.snapshotView(handle.value, view, keyGroup);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /** Ends a view {@link #freeze} returned, written or not; any thread. Nothing once closed. */
    public void releaseView(long view) {
        if (handle.closed.get()) {
            return; // closing released it
        }
        try {
            FerryNative.releaseView(handle.value, view);
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
     * Hands the operator keyed state Flink's own operator left in a checkpoint or savepoint
     * (ferry_operator_import; docs/state.md, "Switching Ferry on or off"): {@code rows} holds one
     * row per key in the operator kind's import layout, then {@code $row_kind}. Fails, keeping no
     * key of the batch, on a key that holds state already and on state Ferry would not hold
     * exactly as Flink did. {@code rows} stays the caller's.
     */
    public void importState(VectorSchemaRoot rows) {
        ensureOpen();
        try (ArrowSchema schema = ArrowSchema.allocateNew(exportAllocator);
                ArrowArray array = ArrowArray.allocateNew(exportAllocator)) {
            Data.exportVectorSchemaRoot(exportAllocator, rows, null, array, schema);
            try {
                FerryNative.importState(handle.value, schema.memoryAddress(), array.memoryAddress());
            } finally {
                array.release(); // no-ops once the library released them
                schema.release();
            }
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Writes the operator's keyed state in the form Flink's own operator keeps
     * (ferry_operator_export; docs/state.md, "Switching Ferry on or off"): each chunk of rows, in
     * the operator kind's export layout, is imported into {@code output} (a root of that layout)
     * and handed to {@code onChunk}; returns the number of chunks.
     */
    public int exportState(VectorSchemaRoot output, Consumer<VectorSchemaRoot> onChunk) {
        ensureOpen();
        try {
            return drain(FerryNative.exportState(handle.value, out.memoryAddress()), output, onChunk);
        } finally {
            Reference.reachabilityFence(this);
        }
    }

    /**
     * Fills {@code out} with the figures of the operator's state: {@code out[0]} keys (groups),
     * {@code out[1]} estimated bytes of native memory the state owns, {@code out[2]} the earliest
     * pending processing-time timer (epoch ms; {@code Long.MAX_VALUE} when none). Not concurrently
     * with another call on this operator.
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
            failure = e; // e.g. EPOISONED of a library a panic outside any operator poisoned
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

    /**
     * Arrow types of the root of input {@code index} against the schema given at open; cached per
     * schema object. The library checks the index itself.
     */
    private void checkInput(int index, VectorSchemaRoot input) {
        Schema s = input.getSchema();
        if (index < 0 || index >= inputSchemas.size()) {
            return;
        }
        Schema inputSchema = inputSchemas.get(index);
        if (inputSchema == null || s == checkedInputSchemas[index]) {
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
        checkedInputSchemas[index] = s;
    }
}
