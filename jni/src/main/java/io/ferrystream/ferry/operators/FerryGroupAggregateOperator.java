package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.arrow.ArrowRowDataReader;
import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.arrow.RowDataArrowWriter;
import io.ferrystream.ferry.nativelib.FerryException;
import io.ferrystream.ferry.nativelib.NativeOperator;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.flink.api.common.TaskInfo;
import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Gauge;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.runtime.checkpoint.CheckpointType;
import org.apache.flink.runtime.state.AbstractKeyedStateBackend;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.KeyGroupStatePartitionStreamProvider;
import org.apache.flink.runtime.state.KeyedStateCheckpointOutputStream;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.runtime.state.heap.HeapKeyedStateBackend;
import org.apache.flink.runtime.state.ttl.TtlTimeProvider;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.lang.reflect.Field;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.zip.CRC32C;

/**
 * Flink's single-phase group aggregate ({@code GroupAggFunction}) running in Go.
 *
 * <p>Rows are appended to an Arrow batch and handed to Go once per batch; Go emits exactly the
 * changelog Flink emits for those rows one by one, in order. A batch is processed when it is
 * full ({@code ferry.batch.size}), when its oldest row has waited {@code ferry.batch.max-delay},
 * before a watermark is forwarded, before a checkpoint barrier and at the end of input, so a
 * checkpoint never holds buffered rows.
 *
 * <p>State lives in Go and is checkpointed through Flink's raw keyed state as a sequence of
 * self-delimiting, checksummed, compressed chunks per non-empty key group (at most about 4 MiB of
 * state each), so Flink's rescaling redistributes it and no key group needs one huge buffer. The operator keeps Flink's state key
 * selector (the exchange and key groups stay Flink's) but never asks the framework to extract
 * keys per record: Go encodes and hashes keys itself.
 *
 * <p>Output rows are {@link org.apache.flink.table.data.binary.BinaryRowData}, one reused object
 * (like Flink's own operators, a row is valid until the next is emitted), written straight from
 * the Arrow batch Go returns, byte for byte what Flink's serializer would make of the row: a plain
 * heap row that any copier handles, including the generic (Kryo) copy of Flink's test harness.
 * The Arrow batch never escapes the operator.
 *
 * <p>Idle-state TTL reads the clock Flink's state TTL reads, the keyed state backend's {@link
 * TtlTimeProvider} (wall-clock time in a job; what {@code setStateTtlProcessingTime} drives in
 * Flink's test harness), so expiry happens at the same instants as in Flink's operator.
 */
public class FerryGroupAggregateOperator extends AbstractStreamOperator<RowData>
        implements OneInputStreamOperator<RowData, RowData> {
    private static final long serialVersionUID = 1L;

    /** Bytes of a state chunk's header (snapshot/blob.go): flags at 6, stored length at 36. */
    private static final int CHUNK_HEADER = 48;

    private static final int FLAG_LAST = 1;

    /** Largest stored chunk the library writes: its 1 GiB payload limit plus zstd's overhead. */
    private static final long MAX_STORED = (1L << 30) + (1 << 20);

    /** Gauge: keys (groups) in the native state. */
    public static final String METRIC_STATE_KEYS = "ferryStateKeys";

    /** Gauge: estimated bytes of native memory the state owns (outside Flink's managed memory). */
    public static final String METRIC_STATE_BYTES = "ferryStateBytes";

    /** Counter: batches handed to Go. */
    public static final String METRIC_NATIVE_BATCHES = "ferryNativeBatches";

    /** Operators opened in this JVM (Ferry#nativeOperatorsOpened, for test reports). */
    private static final AtomicLong OPENED = new AtomicLong();

    private final GroupAggregateSpec spec;
    private final RowType outputType;
    private final int batchSize;
    private final long maxDelayMs;
    /** Mini-batch: a batch is a bundle of Flink's CountBundleTrigger, never cut by time. */
    private final boolean bundled;

    private transient BufferAllocator allocator;
    private transient NativeOperator nativeOp;
    private transient RowDataArrowWriter writer;
    private transient VectorSchemaRoot outRoot;
    private transient ArrowRowDataReader reader;
    private transient NativeInputRow inputRow;
    private transient TtlTimeProvider ttlClock;
    private transient StreamRecord<RowData> outRecord;
    private transient long[] stats;
    private transient volatile long stateKeys;
    private transient volatile long stateBytes;
    private transient Counter nativeBatches;
    private transient boolean timerPending;

    /**
     * @param outputType the aggregate's output row type (Flink's: the grouping keys, then one
     *     field per call), the layout of the rows this operator emits
     */
    public FerryGroupAggregateOperator(GroupAggregateSpec spec, RowType outputType, int batchSize, long maxDelayMs) {
        this(spec, outputType, batchSize, maxDelayMs, false);
    }

    private FerryGroupAggregateOperator(
            GroupAggregateSpec spec, RowType outputType, int batchSize, long maxDelayMs, boolean bundled) {
        if (batchSize < 1) {
            throw new IllegalArgumentException("ferry.batch.size must be at least 1, got " + batchSize);
        }
        this.spec = spec;
        this.outputType = outputType;
        this.batchSize = batchSize;
        this.maxDelayMs = Math.max(0, maxDelayMs);
        this.bundled = bundled;
    }

    /**
     * The mini-batch operator (Flink's KeyedMapBundleOperator with MiniBatchGroupAggFunction): Go
     * gets a batch exactly where Flink finishes a bundle, when {@code bundleSize} rows
     * ({@code table.exec.mini-batch.size}) have arrived, before a watermark is forwarded, before a
     * checkpoint barrier and at the end of input.
     */
    public static FerryGroupAggregateOperator bundled(GroupAggregateSpec spec, RowType outputType, long bundleSize) {
        if (!spec.miniBatch()) {
            throw new IllegalArgumentException("a bundled operator needs a mini-batch spec");
        }
        return new FerryGroupAggregateOperator(
                spec, outputType, (int) Math.min(Integer.MAX_VALUE, bundleSize), 0, true);
    }

    public GroupAggregateSpec spec() {
        return spec;
    }

    /** How many of these operators were opened in this JVM. */
    public static long openedCount() {
        return OPENED.get();
    }

    @Override
    protected boolean isUsingCustomRawKeyedState() {
        return true;
    }

    /** Go computes keys from the batch; the framework need not project one per record. */
    @Override
    public boolean hasKeyContext1() {
        return false;
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        checkBackend();
        if (context.isRestored()) {
            ForeignStateGuard.check(spec.name(), getKeyedStateBackend());
        }
        TaskInfo task = getRuntimeContext().getTaskInfo();
        int maxParallelism = task.getMaxNumberOfParallelSubtasks();
        KeyGroupRange range =
                KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(
                        maxParallelism, task.getNumberOfParallelSubtasks(), task.getIndexOfThisSubtask());
        ttlClock = ttlClock();
        allocator = new RootAllocator(Long.MAX_VALUE);
        nativeOp =
                NativeOperator.open(
                        spec.toJson(maxParallelism, range.getStartKeyGroup(), range.getEndKeyGroup()),
                        ArrowTypes.schemaOf(spec.inputType()),
                        allocator);
        for (KeyGroupStatePartitionStreamProvider p : context.getRawKeyedStateInputs()) {
            DataInputStream in = new DataInputStream(p.getStream());
            byte[] chunk;
            do {
                chunk = readChunk(in, p.getKeyGroupId());
                nativeOp.restore(p.getKeyGroupId(), chunk);
            } while ((chunk[6] & FLAG_LAST) == 0);
        }
    }

    /**
     * Native state rides raw keyed state, which Flink cannot share with timers written
     * synchronously into the same stream (RocksDB with heap timers; flink-semantics.md §3.3): such
     * a job would fail at its first checkpoint, so it fails now, saying what to change.
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
                            + " state.backend.rocksdb.timer-service.factory: ROCKSDB (Flink's default),"
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

    /** Reads one self-delimiting state chunk: the fixed header, then the bytes it announces. */
    private byte[] readChunk(DataInputStream in, int keyGroup) throws IOException {
        byte[] header = new byte[CHUNK_HEADER];
        try {
            in.readFully(header);
        } catch (EOFException e) {
            throw truncated(keyGroup, "in a chunk header", e);
        }
        // Trust the length only once the header is known to be Ferry's and intact: otherwise let
        // the library say what is wrong with it (magic, version, header checksum).
        CRC32C crc = new CRC32C();
        crc.update(header, 0, 44);
        if (header[0] != 'F' || header[1] != 'R' || header[2] != 'Y' || header[3] != 'S'
                || (int) crc.getValue() != le32(header, 44)) {
            nativeOp.restore(keyGroup, header); // throws FerryException(EDATA)
            throw new FerryException(FerryException.EDATA, "Ferry state of key group " + keyGroup + ": invalid chunk header");
        }
        long stored = le32(header, 36) & 0xffffffffL;
        if (stored > MAX_STORED) {
            throw new FerryException(FerryException.EDATA,
                    "Ferry state of key group " + keyGroup + ": chunk length " + stored + " is invalid");
        }
        byte[] chunk = new byte[CHUNK_HEADER + (int) stored];
        System.arraycopy(header, 0, chunk, 0, CHUNK_HEADER);
        try {
            in.readFully(chunk, CHUNK_HEADER, (int) stored);
        } catch (EOFException e) {
            throw truncated(keyGroup, "in a chunk of " + stored + " bytes", e);
        }
        return chunk;
    }

    private static int le32(byte[] b, int at) {
        return (b[at] & 0xff) | (b[at + 1] & 0xff) << 8 | (b[at + 2] & 0xff) << 16 | (b[at + 3] & 0xff) << 24;
    }

    private static FerryException truncated(int keyGroup, String where, EOFException e) {
        return new FerryException(FerryException.EDATA,
                "Ferry state of key group " + keyGroup + " is truncated: the stream ends " + where, e);
    }

    @Override
    public void open() throws Exception {
        super.open();
        OPENED.incrementAndGet();
        writer = RowDataArrowWriter.create(spec.inputType(), allocator, batchSize);
        outRoot = VectorSchemaRoot.create(nativeOp.outputSchema(), allocator);
        checkOutputSchema(outRoot.getSchema(), outputType);
        reader = new ArrowRowDataReader(outRoot);
        inputRow = new NativeInputRow(spec, getKeyedStateBackend() instanceof HeapKeyedStateBackend);
        outRecord = new StreamRecord<>(null);
        MetricGroup metrics = getMetricGroup();
        metrics.gauge(METRIC_STATE_KEYS, (Gauge<Long>) () -> stateKeys);
        metrics.gauge(METRIC_STATE_BYTES, (Gauge<Long>) () -> stateBytes);
        nativeBatches = metrics.counter(METRIC_NATIVE_BATCHES);
        stats = new long[2];
        refreshStats(); // restored state
    }

    /**
     * Reads the state's figures from Go for the gauges, on the task thread after each call that
     * can change the state (a reporter thread must not call into the operator).
     */
    private void refreshStats() {
        nativeOp.stats(stats);
        stateKeys = stats[0];
        stateBytes = stats[1];
    }

    /**
     * The reader writes each field as its Arrow type says and Flink reads it as the output type
     * says: they must agree column for column (a DECIMAL's precision decides its layout).
     */
    static void checkOutputSchema(Schema schema, RowType outputType) {
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

    @Override
    public void processElement(StreamRecord<RowData> element) throws Exception {
        writer.write(inputRow.of(element.getValue()));
        if (writer.count() >= batchSize) {
            processBatch();
        } else if (bundled) {
            return;
        } else if (writer.count() == 1 && maxDelayMs > 0 && !timerPending) {
            timerPending = true;
            long at = getProcessingTimeService().getCurrentProcessingTime() + maxDelayMs;
            getProcessingTimeService().registerTimer(at, t -> onMaxDelay());
        } else if (maxDelayMs == 0) {
            processBatch();
        }
    }

    private void onMaxDelay() throws Exception {
        timerPending = false;
        processBatch();
    }

    /** Hands the buffered rows to Go and emits the changelog they produce. */
    private void processBatch() throws Exception {
        if (writer.count() == 0) {
            return;
        }
        writer.finish();
        // The group aggregate emits one chunk per call; emitChunk runs once per chunk.
        nativeOp.process(0, writer.root(), now(), outRoot, this::emitChunk);
        writer.reset();
        nativeBatches.inc();
        refreshStats();
    }

    /** Emits one output chunk of the native operator, which it imported into outRoot. */
    private void emitChunk(VectorSchemaRoot chunk) {
        reader.load();
        int rows = reader.rowCount();
        for (int i = 0; i < rows; i++) {
            output.collect(outRecord.replace(reader.readBinary(i)));
        }
    }

    /** The time Go's idle-state TTL compares against: see {@link #ttlClock()}. */
    private long now() {
        return ttlClock.currentTimestamp();
    }

    @Override
    public void processWatermark(Watermark mark) throws Exception {
        processBatch();
        nativeOp.advance(mark.getTimestamp(), now(), outRoot, this::emitChunk);
        refreshStats();
        super.processWatermark(mark);
    }

    @Override
    public void prepareSnapshotPreBarrier(long checkpointId) throws Exception {
        processBatch();
        super.prepareSnapshotPreBarrier(checkpointId);
    }

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        KeyedStateCheckpointOutputStream out = context.getRawKeyedOperatorStateOutput();
        for (int keyGroup : out.getKeyGroupList()) {
            byte[] chunk = nativeOp.snapshot(keyGroup);
            if (chunk == null) {
                continue; // no state: nothing is written for this key group
            }
            out.startNewKeyGroup(keyGroup);
            do {
                out.write(chunk);
                chunk = nativeOp.snapshot(keyGroup);
            } while (chunk != null);
        }
    }

    @Override
    public void finish() throws Exception {
        processBatch();
        nativeOp.flush(now(), outRoot, this::emitChunk);
        super.finish();
    }

    @Override
    public void close() throws Exception {
        try {
            super.close();
        } finally {
            closeQuietly(writer);
            closeQuietly(outRoot);
            closeQuietly(nativeOp);
            closeQuietly(allocator);
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
