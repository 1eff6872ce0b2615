package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.arrow.ArrowRowDataReader;
import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.arrow.RowDataArrowWriter;
import io.ferrystream.ferry.exchange.ExchangeTarget;
import io.ferrystream.ferry.exchange.FerryFrame;
import io.ferrystream.ferry.exchange.FerryFrameSerializer;
import io.ferrystream.ferry.nativelib.FerryException;
import io.ferrystream.ferry.nativelib.NativeLibrary;
import io.ferrystream.ferry.nativelib.NativeOperator;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.flink.table.api.TableRuntimeException;
import org.apache.flink.api.common.TaskInfo;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.CheckpointType;
import org.apache.flink.runtime.state.AbstractKeyedStateBackend;
import org.apache.flink.runtime.state.CheckpointStreamFactory;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.runtime.state.heap.HeapKeyedStateBackend;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.streaming.api.graph.StreamConfig;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OperatorSnapshotFutures;
import org.apache.flink.streaming.api.operators.Output;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * What every native operator does, whatever its kind: a Flink operator whose rows are appended to
 * Arrow batches, one per input, handed to the library once per batch, and whose output is the
 * changelog the library returns. A kind runs the generic operator of its shape, {@link
 * OneInputNativeOperator} or {@link TwoInputNativeOperator}, with its {@link NativeSpec}, and
 * extends it only where it behaves differently.
 *
 * <p>The lifecycle, for every kind:
 *
 * <ol>
 *   <li>{@link #initializeState}: refuses a state backend that cannot checkpoint raw keyed state
 *       (RocksDB with heap timers), refuses to restore managed keyed state of Flink's own
 *       operator ({@link ForeignStateGuard}), reserves the operator's share of the slot's managed
 *       memory ({@link ManagedMemoryBudget}), opens the library's operator with the spec and the
 *       subtask's key-group range ({@link NativeSpec#open}), and restores the subtask's key
 *       groups from raw keyed state ({@link RawKeyedState}).
 *   <li>{@link #open}: the Arrow writer of each input, the output batch and its reader, the
 *       metrics {@value #METRIC_STATE_KEYS}, {@value #METRIC_STATE_BYTES} and {@value
 *       #METRIC_NATIVE_BATCHES}, and the count of operators opened per kind.
 *   <li>Rows: the form's {@code processElement} appends the row to its input's batch (the only
 *       per-row work: the input projection and the RowData→Arrow write); the batch goes to the
 *       library as {@link Batching} says.
 *   <li>{@link #processWatermark}: every pending batch, then the watermark to the library (which
 *       may emit), then downstream. {@link #prepareSnapshotPreBarrier}: every pending batch, so a
 *       checkpoint never holds buffered rows. {@link #snapshotState}: the state of each key group
 *       into raw keyed state. {@link #finish}: every pending batch, then the library's flush.
 *   <li>{@link #close}: frees the batches, the library's operator and the allocator, on every
 *       exit path.
 * </ol>
 *
 * <p>Pending batches are processed in the form's input order (two inputs: input 0's, then input
 * 1's, unless the kind says the second input goes first, as some of Flink's mini-batch joins
 * do). A full batch is processed alone (the other input's rows stay pending); rows of one input
 * always reach the library in arrival order. The order the library sees the two inputs in is
 * therefore one Flink's own two-input operator could see (its inputs are independent channels),
 * and no row is held across a watermark, a barrier or the end of input.
 *
 * <p>Between two native aggregation stages the planner may type an edge {@link FerryFrame}
 * (Ferry's columnar exchange): the operator then writes frames of its output rows instead of
 * rows, or reads frames instead of rows, deciding from its output and input serializers when it
 * initializes ({@link #writesFrames}, {@link #readsFrames}); everywhere else it runs on rows.
 *
 * <p>Output rows are {@link org.apache.flink.table.data.binary.BinaryRowData}, one reused object
 * (like Flink's own operators, a row is valid until the next is emitted), written straight from
 * the Arrow batch Go returns, byte for byte what Flink's serializer would make of the row: a plain
 * heap row that any copier handles, including the generic (Kryo) copy of Flink's test harness.
 * The Arrow batch never escapes the operator. Output rows carry no StreamRecord timestamp.
 *
 * <p>The operator keeps Flink's state key selectors (the exchange and key groups stay Flink's) but
 * never asks the framework to extract keys per record: Go encodes and hashes keys itself.
 * Idle-state TTL reads the clock Flink's state TTL reads, the keyed state backend's {@link
 * TtlTimeProvider} (wall-clock time in a job; what {@code setStateTtlProcessingTime} drives in
 * Flink's test harness), so expiry happens at the same instants as in Flink's operators.
 *
 * @param <S> the kind's spec
 */
public abstract class AbstractNativeOperator<S extends NativeSpec> extends AbstractStreamOperator<RowData> {
    private static final long serialVersionUID = 1L;

    /** Gauge: keys (groups) in the native state. */
    public static final String METRIC_STATE_KEYS = "ferryStateKeys";

    /** Gauge: estimated bytes of native memory the state owns, checked against its budget ({@link ManagedMemoryBudget}). */
    public static final String METRIC_STATE_BYTES = "ferryStateBytes";

    /** Gauge: bytes of the slot's managed memory the operator reserved (0: unbudgeted). */
    public static final String METRIC_MEMORY_BUDGET = "ferryMemoryBudgetBytes";

    /** Gauge, process-wide: bytes the Go runtime holds (ferry_runtime_memory's in_use_bytes). */
    public static final String METRIC_GO_MEMORY = "ferryGoMemoryBytes";

    /** Gauge, process-wide: the Go runtime's soft memory limit (Long.MAX_VALUE: none). */
    public static final String METRIC_GO_MEMORY_LIMIT = "ferryGoMemoryLimitBytes";

    /** Counter: batches handed to Go. */
    public static final String METRIC_NATIVE_BATCHES = "ferryNativeBatches";

    private static final Logger LOG = LoggerFactory.getLogger(AbstractNativeOperator.class);

    /** Operators opened in this JVM per kind (Ferry#nativeOperatorsOpened, for test reports). */
    private static final Map<String, AtomicLong> OPENED = new ConcurrentHashMap<>();

    /** Operators opened in this JVM per spec name, i.e. per plan node (Ferry#nativeOperatorsOpenedForNode). */
    private static final Map<String, AtomicLong> OPENED_BY_NAME = new ConcurrentHashMap<>();

    /** Frames of the columnar exchange read by the native operators of this JVM, per spec kind. */
    private static final Map<String, AtomicLong> FRAMES_READ = new ConcurrentHashMap<>();

    private static final int PROCESS = 0;
    private static final int ADVANCE = 1;
    private static final int FLUSH = 2;
    private static final int PROCESS_RUNS = 3;

    private final S spec;
    private final RowType outputType;
    private final Batching batching;
    /** The inputs in the order their pending batches are processed. */
    private final int[] inputOrder;
    /** The keyed state Flink's operator keeps in this one's place, to import; null: none. */
    private FlinkState flinkState;
    /** The batching policy's fields, read per row by the forms. */
    protected final int batchSize;
    final long maxDelayMs;
    final boolean bundled;

    private transient BufferAllocator allocator;
    /** The operator's share of the slot's managed memory, reserved until it closes. */
    private transient ManagedMemoryBudget budget;
    /** The operator and subtask, for the budget's messages. */
    private transient String subtaskName;
    private transient NativeOperator nativeOp;
    /** During a savepoint in Flink's form: the keys written into Flink's state; else null. */
    private transient List<RowData> flinkFormKeys;
    /** Per input: its Arrow batch, and its rows as Go reads them. */
    protected transient RowDataArrowWriter[] writers;
    transient NativeInputRow[] inputRows;
    /** Per input: its writer's root ({@link #processRuns}). */
    private transient VectorSchemaRoot[] roots;
    /** {@link #processRuns}: the runs of the call in progress. */
    private transient int[] runs;
    private transient int runCount;
    private transient VectorSchemaRoot outRoot;
    private transient ArrowRowDataReader reader;
    private transient TtlTimeProvider ttlClock;
    private transient StreamRecord<RowData> outRecord;
    private transient StreamRecord<FerryFrame> frameRecord;
    /** Input 0 is frames of Ferry's columnar exchange (the input serializer says so). */
    private transient boolean framesIn;
    /** The output is frames of Ferry's columnar exchange (the output serializer says so). */
    private transient boolean framesOut;
    /** The spec the library's operator was opened with: {@link #spec}, or its frame-reading form. */
    private transient NativeSpec wireSpec;
    /** A frame's row, reused: its one field, the frame's bytes. */
    private transient GenericRowData frameRow;
    private transient AtomicLong framesReadOfKind;
    /** {@link #emit}, made once: the library calls back with every output chunk. */
    private transient Consumer<VectorSchemaRoot> emitChunk;
    private transient long[] stats;
    private transient volatile long stateKeys;
    private transient volatile long stateBytes;
    private transient Counter nativeBatches;
    private transient boolean timerPending;
    /** A processing-time driven kind: the processing time the pending batches' rows arrived at. */
    private transient long batchTimeMs;
    /** The library's earliest processing-time timer a callback is registered for; MAX_VALUE: none. */
    private transient long timerCallbackMs;

    /**
     * @param outputType the layout of the rows this operator emits (Flink's output row type of the
     *     operator it replaces), also when it writes them as frames ({@link #writesFrames})
     * @param inputOrder the form's inputs (the spec must have as many), in the order their
     *     pending batches are processed
     */
    AbstractNativeOperator(S spec, RowType outputType, Batching batching, int... inputOrder) {
        this(spec, outputType, batching, 0L, inputOrder);
    }

    /**
     * @param watermarkDelay milliseconds every forwarded watermark is held back by (0: none), as
     *     Flink's {@code OutputAdjustment.delayedWatermarkOutput} holds back those of operators
     *     whose output lags their input (the row-time interval join)
     */
    AbstractNativeOperator(S spec, RowType outputType, Batching batching, long watermarkDelay, int... inputOrder) {
        super(null, watermarkDelay == 0
                ? OutputAdjustment.noAdjustment()
                : OutputAdjustment.delayedWatermarkOutput(watermarkDelay));
        // a kind may declare inputs beyond its data inputs (the window join's rows for a
        // snapshot), which it processes itself
        if (spec.inputs().size() < inputOrder.length) {
            throw new IllegalArgumentException("spec " + spec.name() + " has " + spec.inputs().size()
                    + " inputs, the operator " + inputOrder.length);
        }
        this.spec = spec;
        this.outputType = outputType;
        this.batching = batching;
        this.inputOrder = inputOrder.clone();
        this.batchSize = batching.size();
        this.maxDelayMs = batching.maxDelayMs();
        this.bundled = batching.bundled();
    }

    public S spec() {
        return spec;
    }

    public Batching batching() {
        return batching;
    }

    /**
     * Counts one opened operator subtask of {@code kind} for the plan node {@code name}: every Ferry
     * operator, native or not (the lookup join runs no Go), reports its opens here, and logs them
     * at INFO on the TaskManager.
     */
    public static void countOpened(String kind, String name) {
        LOG.info("Ferry operator {} opened: {}", kind, name);
        OPENED.computeIfAbsent(kind, k -> new AtomicLong()).incrementAndGet();
        OPENED_BY_NAME.computeIfAbsent(name, k -> new AtomicLong()).incrementAndGet();
    }

    /** How many native operators of {@code kind} ({@link NativeSpec#kind()}) were opened in this JVM. */
    public static long openedCount(String kind) {
        AtomicLong n = OPENED.get(kind);
        return n == null ? 0 : n.get();
    }

    /** How many native operators whose spec is named {@code name} ({@link NativeSpec#name()}) were opened in this JVM. */
    public static long openedCountForName(String name) {
        AtomicLong n = OPENED_BY_NAME.get(name);
        return n == null ? 0 : n.get();
    }

    /** {@link #openedCountForName} of every name opened so far, a copy. */
    public static Map<String, Long> openedCountsByName() {
        Map<String, Long> out = new HashMap<>();
        OPENED_BY_NAME.forEach((name, n) -> out.put(name, n.get()));
        return out;
    }

    /** Frames of Ferry's columnar exchange the native operators of {@code kind} read in this JVM. */
    public static long framesRead(String kind) {
        AtomicLong n = FRAMES_READ.get(kind);
        return n == null ? 0 : n.get();
    }

    /** Frames of Ferry's columnar exchange the native operators of this JVM read, of every kind. */
    public static long framesRead() {
        long sum = 0;
        for (AtomicLong n : FRAMES_READ.values()) {
            sum += n.get();
        }
        return sum;
    }

    /** How many native operators were opened in this JVM, of every kind. */
    public static long openedCount() {
        long sum = 0;
        for (AtomicLong n : OPENED.values()) {
            sum += n.get();
        }
        return sum;
    }

    @Override
    protected final boolean isUsingCustomRawKeyedState() {
        return true;
    }

    // ---- state and opening ---------------------------------------------------------------------

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        checkBackend();
        boolean keyed = isKeyed();
        FlinkState importing = null;
        if (context.isRestored() && keyed) {
            importing = ForeignStateGuard.importable(spec.name(), spec.kind(), getKeyedStateBackend(), flinkState);
        }
        TaskInfo task = getRuntimeContext().getTaskInfo();
        int maxParallelism = task.getMaxNumberOfParallelSubtasks();
        // A keyed operator owns its subtask's key groups; one that is not keyed (the local
        // aggregate) may see any key, and keeps nothing across a checkpoint.
        KeyGroupRange range =
                keyed
                        ? KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(
                                maxParallelism, task.getNumberOfParallelSubtasks(), task.getIndexOfThisSubtask())
                        : new KeyGroupRange(0, maxParallelism - 1);
        keyGroupRange = range;
        ttlClock = ttlClock();
        subtaskName = spec.name() + " (subtask " + (task.getIndexOfThisSubtask() + 1) + " of "
                + task.getNumberOfParallelSubtasks() + ")";
        budget = ManagedMemoryBudget.reserve(this, subtaskName, getContainingTask().getEnvironment(), getOperatorConfig());
        allocator = new RootAllocator(Long.MAX_VALUE);
        ClassLoader cl = getUserCodeClassloader();
        framesOut = (Object) getOperatorConfig().getTypeSerializerOut(cl) instanceof FerryFrameSerializer;
        StreamConfig.InputConfig[] in = getOperatorConfig().getInputs(cl);
        framesIn = in.length > 0
                && in[0] instanceof StreamConfig.NetworkInputConfig
                && ((StreamConfig.NetworkInputConfig) in[0]).getTypeSerializer() instanceof FerryFrameSerializer;
        nativeOp = openNative(maxParallelism, range, allocator);
        if (keyed) {
            RawKeyedState.restore(context.getRawKeyedStateInputs(), nativeOp);
        }
        if (importing != null) {
            long keys = importing.importInto(nativeOp, getKeyedStateBackend(), allocator);
            LOG.info("Ferry operator {} imported {} keys of Flink's {}", spec.name(), keys, String.join(", ", importing.names()));
            ForeignStateGuard.check(spec.name(), spec.kind(), getKeyedStateBackend()); // the import cleared what it read
        }
    }

    /**
     * Declares the keyed state Flink's own operator keeps in this operator's place, which a restore
     * from a checkpoint or savepoint taken with Ferry off imports ({@link FlinkState}).
     * Returns this operator.
     */
    public AbstractNativeOperator<S> importingFlinkState(FlinkState state) {
        this.flinkState = state;
        return this;
    }

    /**
     * The spec the library's operator opens with, once the task's keyed state backend is known:
     * {@link #spec()} by default. A kind whose parameters depend on the backend the task runs on
     * (the deduplication: whether stored rows are kept as objects) returns it adjusted; its inputs
     * must stay {@link #spec()}'s.
     */
    protected S specForTask() {
        return spec;
    }

    /**
     * Opens the library's operator for this subtask: the spec for {@code range} of {@code
     * maxParallelism} key groups (the task's); reading frames, its frame-reading form; writing
     * frames, for the consumer's channels and key groups as the network stack reports them when
     * the task starts ({@link ExchangeTarget}).
     */
    private NativeOperator openNative(int maxParallelism, KeyGroupRange range, BufferAllocator allocator) {
        wireSpec = specForTask();
        if (framesIn) {
            wireSpec = frameCapable(wireSpec, FrameReadingSpec.class, "read").withFrames(batchSize);
        }
        if (framesOut) {
            return frameCapable(wireSpec, FrameWritingSpec.class, "write")
                    .openWritingFrames(ExchangeTarget.of(this), maxParallelism, range, allocator);
        }
        return wireSpec.open(maxParallelism, range.getStartKeyGroup(), range.getEndKeyGroup(), allocator);
    }

    /** {@code s} as a spec that can read or write frames; a clear error when its kind cannot. */
    private static <T> T frameCapable(NativeSpec s, Class<T> form, String verb) {
        if (!form.isInstance(s)) {
            throw new IllegalStateException("Ferry's native operator " + s.name() + " is wired to " + verb
                    + " frames of the columnar exchange, which its kind " + s.kind() + " cannot");
        }
        return form.cast(s);
    }

    /**
     * Whether the operator writes Ferry's columnar exchange: the planner typed its output {@link
     * FerryFrame}s, so it emits frames of its rows, one or more per channel per bundle. Known once
     * the operator is initialized; an operator run outside such an exchange (Flink's test harness
     * on rows) emits rows.
     */
    public final boolean writesFrames() {
        return framesOut;
    }

    /**
     * Whether the operator reads Ferry's columnar exchange: its input is {@link FerryFrame}s, each
     * handed to the library as it arrives; the library queues their rows and cuts the bundles
     * (docs/abi.md#frames). Known once the operator is initialized.
     */
    public final boolean readsFrames() {
        return framesIn;
    }

    /**
     * Whether Flink runs this operator keyed (its transformation has a state key selector, so it
     * has a keyed state backend). Only a keyed operator has raw keyed state to restore and
     * snapshot; the library's operator of a kind that is not keyed keeps no state across calls.
     */
    private boolean isKeyed() {
        return getKeyedStateBackend() != null;
    }

    /**
     * Native state rides raw keyed state, which Flink cannot share with timers written
     * synchronously into the same stream (RocksDB or ForSt with heap timers): such a job would fail at its
     * first checkpoint, so it fails now, saying what to change.
     */
    private void checkBackend() {
        Object backend = getKeyedStateBackend();
        if (backend instanceof AbstractKeyedStateBackend
                && ((AbstractKeyedStateBackend<?>) backend)
                        .requiresLegacySynchronousTimerSnapshots(CheckpointType.CHECKPOINT)) {
            throw new IllegalStateException(
                    "Ferry's native operator "
                            + spec.name()
                            + " keeps its state in raw keyed state, which the state backend "
                            + backend.getClass().getSimpleName()
                            + " cannot checkpoint next to heap timers. Set"
                            + " state.backend.rocksdb.timer-service.factory: ROCKSDB (RocksDB's default)"
                            + " or state.backend.forst.timer-service.factory: ForStDB (ForSt's default),"
                            + " or ferry.enabled: false for this job.");
        }
    }

    /**
     * The keyed state backend's TTL clock, the one Flink's state TTL reads. Flink 2.3 keeps it in
     * a protected field of {@link AbstractKeyedStateBackend} without a getter; a backend that is
     * not one (e.g. the changelog wrapper) gives the processing-time service, which in a job reads
     * the same wall clock as {@link TtlTimeProvider#DEFAULT}.
     */
    private TtlTimeProvider ttlClock() {
        Object backend = getKeyedStateBackend();
        if (backend instanceof AbstractKeyedStateBackend) {
            try {
                Field f = AbstractKeyedStateBackend.class.getDeclaredField("ttlTimeProvider");
                f.setAccessible(true);
                Object clock = f.get(backend);
                if (clock instanceof TtlTimeProvider) {
                    return (TtlTimeProvider) clock;
                }
            } catch (ReflectiveOperationException | RuntimeException e) {
                // not Flink 2.3's field: use processing time, below
            }
        }
        return () -> getProcessingTimeService().getCurrentProcessingTime();
    }

    @Override
    public void open() throws Exception {
        super.open();
        countOpened(spec.kind(), spec.name());
        int inputs = spec.inputs().size();
        // Only a state backend that keeps live objects lets Java Strings reach Flink's state; an
        // operator that is not keyed keeps its rows on the heap (Flink's bundle operators do)
        boolean heap = !isKeyed() || getKeyedStateBackend() instanceof HeapKeyedStateBackend;
        writers = new RowDataArrowWriter[inputs];
        inputRows = new NativeInputRow[inputs];
        for (int i = 0; i < inputs; i++) {
            writers[i] = RowDataArrowWriter.create(wireSpec.batchType(i), allocator, framesIn && i == 0 ? 1 : batchSize);
            inputRows[i] = new NativeInputRow(spec.input(i), heap);
        }
        roots = new VectorSchemaRoot[inputs];
        for (int i = 0; i < inputs; i++) {
            roots[i] = writers[i].root();
        }
        outRoot = VectorSchemaRoot.create(nativeOp.outputSchema(), allocator);
        RowType emitted = framesOut ? FerryFrame.ROW_TYPE : outputType;
        checkOutputSchema(outRoot.getSchema(), emitted);
        reader = new ArrowRowDataReader(outRoot, emitted);
        outRecord = new StreamRecord<>(null);
        frameRecord = new StreamRecord<>(null);
        frameRow = new GenericRowData(1);
        framesReadOfKind = FRAMES_READ.computeIfAbsent(spec.kind(), k -> new AtomicLong());
        emitChunk = this::emit;
        MetricGroup metrics = getMetricGroup();
        metrics.gauge(METRIC_STATE_KEYS, (Gauge<Long>) () -> stateKeys);
        metrics.gauge(METRIC_STATE_BYTES, (Gauge<Long>) () -> stateBytes);
        long budgetBytes = budget.bytes();
        metrics.gauge(METRIC_MEMORY_BUDGET, (Gauge<Long>) () -> budgetBytes);
        metrics.gauge(METRIC_GO_MEMORY, (Gauge<Long>) () -> NativeLibrary.runtimeMemory()[0]);
        metrics.gauge(METRIC_GO_MEMORY_LIMIT, (Gauge<Long>) () -> NativeLibrary.runtimeMemory()[2]);
        nativeBatches = metrics.counter(METRIC_NATIVE_BATCHES);
        stats = new long[3];
        batchTimeMs = Long.MIN_VALUE;
        timerCallbackMs = Long.MAX_VALUE;
        refreshStats(); // restored state, and its processing-time timers
    }

    /**
     * The reader writes each field as its Arrow type says and Flink reads it as the output type
     * says: they must agree column for column (a DECIMAL's precision decides its layout).
     */
    public static void checkOutputSchema(Schema schema, RowType outputType) {
        List<org.apache.arrow.vector.types.pojo.Field> fields = schema.getFields();
        boolean same = fields.size() == outputType.getFieldCount() + 1;
        for (int i = 0; same && i < outputType.getFieldCount(); i++) {
            same = ArrowTypes.arrowTypeOf(outputType.getTypeAt(i)).equals(fields.get(i).getType());
        }
        if (!same) {
            throw new IllegalStateException(
                    "libferry's output schema " + schema + " does not match Flink's output type " + outputType);
        }
    }

    /** The {@code ferryStateKeys} gauge: the keys the state held after the last call. */
    public long stateKeys() {
        return stateKeys;
    }

    /** The {@code ferryStateBytes} gauge: Go's estimate of the state's bytes after the last call. */
    public long stateBytes() {
        return stateBytes;
    }

    /**
     * Reads the state's figures from Go for the gauges, on the task thread after each call that
     * can change the state (a reporter thread must not call into the operator), and fails the
     * task when the state outgrew the operator's managed-memory budget.
     */
    private void refreshStats() {
        nativeOp.stats(stats);
        stateKeys = stats[0];
        stateBytes = stats[1];
        budget.check(subtaskName, stateKeys, stateBytes, allocator.getAllocatedMemory());
        scheduleProcessingTimer(stats[2]);
    }

    /**
     * Whether the kind runs on processing time (the processing-time interval join): each row's
     * time is the processing time of its arrival, so a batch holds rows of one arrival time
     * ({@link #beforeRow}), which Go gets as the batch's time; Go's processing-time timers fire
     * through Flink's processing-time service ({@link #scheduleProcessingTimer}); and a watermark
     * means nothing to Go (Flink's operator only forwards it). False: Go's time is the TTL clock.
     */
    protected boolean processingTimeDriven() {
        return false;
    }

    /**
     * Whether watermarks reach Go: every kind but one driven by processing time alone (a
     * row-time interval join with processing-time early fire is driven by both).
     */
    protected boolean watermarksReachNative() {
        return !processingTimeDriven();
    }

    /**
     * Called by the forms before a row is buffered: for a processing-time driven kind, the
     * pending rows go to Go first when the processing time moved since they arrived, so every
     * batch carries the one time its rows arrived at, as Flink's operator reads it per row. The
     * rows must also reach Go before any timer they create can be due: a callback at the next
     * millisecond hands them over (a timer lies at least 1 ms after the rows that set it).
     */
    final void beforeRow() {
        if (!processingTimeDriven()) {
            return;
        }
        long now = getProcessingTimeService().getCurrentProcessingTime();
        if (now != batchTimeMs) {
            processPending();
            batchTimeMs = now;
            scheduleProcessingTimer(now + 1);
        }
    }

    /**
     * Go keeps a kind's processing-time timers (in its state, so in its snapshots) and reports the
     * earliest after every call; one callback of Flink's processing-time service waits for it,
     * registered again after each call and after a restore. The processing-time service is the
     * one Flink's timer service fires its processing-time timers from.
     */
    private void scheduleProcessingTimer(long next) {
        if (next == Long.MAX_VALUE || next >= timerCallbackMs) {
            return;
        }
        timerCallbackMs = next;
        getProcessingTimeService().registerTimer(next, this::onProcessingTimer);
    }

    /**
     * The library's earliest processing-time timer (or the hand-over of pending rows) is due: the
     * rows that arrived before go first, then Go fires every timer due at the current processing
     * time, in its timer order (Flink's timer service fires them in one pass when the service's
     * time jumps past several). A callback superseded by an earlier one does nothing. Go is told it
     * is a processing-time pass by the watermark {@code Long.MIN_VALUE} (docs/abi.md).
     */
    private void onProcessingTimer(long time) {
        if (time != timerCallbackMs) {
            return;
        }
        timerCallbackMs = Long.MAX_VALUE;
        processPending();
        callNative(ADVANCE, -1, null, Long.MIN_VALUE);
    }

    // ---- batches and the calls into Go ---------------------------------------------------------

    /** Batches handed to Go by this instance: the {@value #METRIC_NATIVE_BATCHES} count. */
    final long nativeBatches() {
        return nativeBatches.getCount();
    }

    /** Hands input {@code input}'s buffered rows to Go and emits the changelog they produce. */
    protected final void processInput(int input) {
        RowDataArrowWriter w = writers[input];
        if (w.count() == 0) {
            return;
        }
        w.finish();
        callNative(PROCESS, input, w.root(), 0);
        w.reset();
        nativeBatches.inc();
    }

    /**
     * Hands the buffered rows of every input to Go in one call, in arrival order: {@code
     * runs[0 .. 2 * runCount)} are (input, rows) pairs that use every input's buffered rows once,
     * in order (ferry_operator_process's runs). The caller owns {@code runs} and resets it after.
     */
    final void processRuns(int[] runs, int runCount) {
        if (runCount == 0) {
            return;
        }
        for (RowDataArrowWriter w : writers) {
            w.finish();
        }
        this.runs = runs;
        this.runCount = runCount;
        callNative(PROCESS_RUNS, -1, null, 0);
        for (RowDataArrowWriter w : writers) {
            w.reset();
        }
        nativeBatches.inc();
    }

    /** Hands every input's buffered rows to Go, in the form's input order. */
    void processPending() {
        for (int input : inputOrder) {
            processInput(input);
        }
    }

    /** Starts the {@code ferry.batch.max-delay} timer for the pending rows, unless it runs. */
    final void startDelayTimer() {
        if (timerPending) {
            return;
        }
        timerPending = true;
        long at = getProcessingTimeService().getCurrentProcessingTime() + maxDelayMs;
        getProcessingTimeService().registerTimer(at, t -> onMaxDelay());
    }

    private void onMaxDelay() {
        timerPending = false;
        processPending();
    }

    /**
     * The operator's one way into the library for rows and time, and the one way back: processes
     * {@code batch} of input {@code input} ({@link #PROCESS}), advances event time to {@code
     * watermark} ({@link #ADVANCE}) or flushes ({@link #FLUSH}), at the TTL clock's time; emits
     * each chunk of output the call produces, in order, as it arrives (the library hands out the
     * next one only after the previous one was emitted); then refreshes the state gauges.
     */
    private void callNative(int call, int input, VectorSchemaRoot batch, long watermark) {
        long now;
        if (!processingTimeDriven()) {
            now = ttlClock.currentTimestamp();
        } else if (call == PROCESS || call == PROCESS_RUNS) {
            now = batchTimeMs;
        } else {
            now = getProcessingTimeService().getCurrentProcessingTime();
        }
        try {
            switch (call) {
                case PROCESS:
                    nativeOp.process(input, batch, now, outRoot, emitChunk);
                    break;
                case PROCESS_RUNS:
                    nativeOp.processRuns(roots, runs, runCount, now, outRoot, emitChunk);
                    break;
                case ADVANCE:
                    nativeOp.advance(watermark, now, outRoot, emitChunk);
                    break;
                default:
                    nativeOp.flush(now, outRoot, emitChunk);
            }
        } catch (FerryException e) {
            if (e.code() == FerryException.EQUERY) {
                // the query's own failure (SINGLE_VALUE's second row): Flink's exception, as its
                // generated code throws it
                throw new TableRuntimeException(e.getMessage());
            }
            throw e;
        }
        refreshStats();
    }

    /**
     * Hands one frame of the columnar exchange (the value of a record of input 0, when {@link
     * #readsFrames}) to the library at once: it checks the frame and queues its rows, running
     * every bundle they complete.
     */
    final void processFrame(Object value) {
        frameRow.setField(0, ((FerryFrame) value).bytes());
        writers[0].write(frameRow);
        processInput(0);
        framesReadOfKind.incrementAndGet();
    }

    /** Hands Go's buffered rows on: its flush (ferry_operator_flush), emitting what it returns. */
    final void flushNative() {
        callNative(FLUSH, -1, null, 0);
    }

    /**
     * Advances Go's event time to {@code watermark} (ferry_operator_advance), emitting what it
     * returns, without forwarding a watermark: for a kind whose Flink operator restores its
     * watermark from operator state (the window aggregate).
     */
    protected final void advanceNative(long watermark) {
        callNative(ADVANCE, -1, null, watermark);
    }

    /**
     * Whether the library's flush runs before every checkpoint barrier: a kind whose Go operator
     * ends a bundle there as Flink's operator does (the window aggregate's window buffer). Reading
     * frames, it always does.
     */
    protected boolean flushesBeforeBarrier() {
        return false;
    }

    /**
     * Emits the rows of the output chunk Go returned last ({@code chunk}, read through the
     * reader of the output type), or its frames when the operator {@link #writesFrames}. A kind
     * whose library output is not its rows (the window join's handles) reads it itself.
     */
    @SuppressWarnings({"unchecked", "rawtypes"})
    protected void emit(VectorSchemaRoot chunk) {
        if (framesOut) {
            // The transformation's output type is FerryFrame (the planner built it so); Flink's
            // operator base types the output by the rows every other native operator emits.
            Output out = output;
            VarBinaryVector column = (VarBinaryVector) chunk.getVector(0);
            for (int i = 0, n = chunk.getRowCount(); i < n; i++) {
                out.collect(frameRecord.replace(new FerryFrame(column.get(i))));
            }
            return;
        }
        reader.load();
        int rows = reader.rowCount();
        for (int i = 0; i < rows; i++) {
            output.collect(outRecord.replace(reader.readBinary(i)));
        }
    }

    // ---- watermarks, checkpoints, end of input ---------------------------------------------------

    /**
     * Every pending batch, then the watermark to Go (two inputs: their combined watermark) unless
     * {@link #watermarksReachNative} says no, then downstream.
     */
    @Override
    public void processWatermark(Watermark mark) throws Exception {
        processPending();
        if (watermarksReachNative()) {
            callNative(ADVANCE, -1, null, mark.getTimestamp());
        }
        super.processWatermark(mark);
    }

    /**
     * Every pending batch; reading frames, the library's queued rows too, as one bundle (Flink's
     * bundle operator ends one before every barrier), and the library's flush where the kind
     * {@link #flushesBeforeBarrier}.
     */
    @Override
    public void prepareSnapshotPreBarrier(long checkpointId) throws Exception {
        processPending();
        if (framesIn || flushesBeforeBarrier()) {
            flushNative();
        }
        super.prepareSnapshotPreBarrier(checkpointId);
    }

    /**
     * A savepoint of an operator whose state Flink's own operator can read ({@link FlinkState})
     * holds that state in Flink's form and no raw keyed state, so the job restores with Ferry off
     * too; it is cleared again once the backend's synchronous phase has taken its copy, or at once
     * when the export fails.
     */
    @Override
    public OperatorSnapshotFutures snapshotState(long checkpointId, long timestamp, CheckpointOptions options,
            CheckpointStreamFactory factory) throws Exception {
        if (isKeyed() && !options.getCheckpointType().isSavepoint()) {
            return checkpointAsync(checkpointId, timestamp, options, factory);
        }
        if (flinkState == null || flinkState.refusal() != null || !isKeyed() || !options.getCheckpointType().isSavepoint()) {
            return super.snapshotState(checkpointId, timestamp, options, factory);
        }
        List<RowData> written = new ArrayList<>();
        try {
            flinkState.exportFrom(nativeOp, getKeyedStateBackend(), allocator, written);
        } catch (Exception | Error e) {
            // a savepoint that fails need not fail the task: leave nothing for later checkpoints
            try {
                flinkState.clear(getKeyedStateBackend(), written);
            } catch (Exception c) {
                e.addSuppressed(c);
            }
            throw e;
        }
        flinkFormKeys = written;
        try {
            return super.snapshotState(checkpointId, timestamp, options, factory);
        } finally {
            List<RowData> keys = flinkFormKeys;
            flinkFormKeys = null;
            flinkState.clear(getKeyedStateBackend(), keys);
            LOG.info("Ferry operator {} wrote {} keys into savepoint {} as Flink's {}", spec.name(), keys.size(),
                    checkpointId, String.join(", ", flinkState.names()));
        }
    }

    /**
     * A checkpoint (not a savepoint) of a keyed operator: the synchronous phase only freezes the
     * state, and Flink's asynchronous phase writes the frozen view as the raw keyed state the
     * synchronous path writes, while the task goes on (docs/state.md, "Checkpoints without a
     * stall").
     */
    private OperatorSnapshotFutures checkpointAsync(long checkpointId, long timestamp, CheckpointOptions options,
            CheckpointStreamFactory factory) throws Exception {
        OperatorSnapshotFutures futures;
        rawStateAsync = true;
        try {
            futures = super.snapshotState(checkpointId, timestamp, options, factory);
        } finally {
            rawStateAsync = false;
        }
        beforeNativeSnapshot();
        long view = nativeOp.freeze();
        try {
            futures.setKeyedStateRawFuture(RawKeyedState.writeAsync(nativeOp, view, factory,
                    keyGroupRange, getContainingTask().getCancelables()));
        } catch (Exception | Error e) {
            nativeOp.releaseView(view);
            throw e;
        }
        return futures;
    }

    /** Set while {@link #checkpointAsync} runs Flink's synchronous phase: no raw stream then. */
    private boolean rawStateAsync;

    /** The subtask's key groups, those of its keyed state backend. */
    private KeyGroupRange keyGroupRange;

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        if (isKeyed() && flinkFormKeys == null && !rawStateAsync) {
            beforeNativeSnapshot();
            RawKeyedState.snapshot(context.getRawKeyedOperatorStateOutput(), nativeOp);
        }
    }

    /**
     * Runs right before the library writes this operator's state into a checkpoint: a kind that
     * holds part of its state in the JVM hands it to the library here. Nothing by default.
     */
    protected void beforeNativeSnapshot() {}

    @Override
    public void finish() throws Exception {
        processPending();
        flushNative();
        super.finish();
    }

    @Override
    public void close() throws Exception {
        try {
            super.close();
        } finally {
            if (writers != null) {
                for (RowDataArrowWriter w : writers) {
                    closeQuietly(w);
                }
            }
            closeQuietly(outRoot);
            closeQuietly(nativeOp);
            closeQuietly(allocator);
            if (budget != null) {
                budget.release();
            }
        }
    }

    private static void closeQuietly(AutoCloseable c) {
        if (c == null) {
            return;
        }
        try {
            c.close();
        } catch (Exception e) {
            // close() runs on every exit path; the first failure is already propagating
        }
    }
}
