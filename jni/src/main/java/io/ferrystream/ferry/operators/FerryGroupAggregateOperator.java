package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.arrow.ArrowRowDataReader;
import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.arrow.RowDataArrowWriter;
import io.ferrystream.ferry.nativelib.NativeOperator;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.flink.api.common.TaskInfo;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.KeyGroupStatePartitionStreamProvider;
import org.apache.flink.runtime.state.KeyedStateCheckpointOutputStream;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.utils.ProjectedRowData;

import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;

/**
 * Flink's single-phase group aggregate ({@code GroupAggFunction}) running in Go.
 *
 * <p>Rows are appended to an Arrow batch and handed to Go once per batch; Go emits exactly the
 * changelog Flink emits for those rows one by one, in order. A batch is processed when it is
 * full ({@code ferry.batch.size}), when its oldest row has waited {@code ferry.batch.max-delay},
 * before a watermark is forwarded, before a checkpoint barrier and at the end of input, so a
 * checkpoint never holds buffered rows.
 *
 * <p>State lives in Go and is checkpointed as one blob per non-empty key group through Flink's
 * raw keyed state, so Flink's rescaling redistributes it. The operator keeps Flink's state key
 * selector (the exchange and key groups stay Flink's) but never asks the framework to extract
 * keys per record: Go encodes and hashes keys itself.
 */
public class FerryGroupAggregateOperator extends AbstractStreamOperator<RowData>
        implements OneInputStreamOperator<RowData, RowData> {
    private static final long serialVersionUID = 1L;

    /** Bytes of the blob header before the payload (snapshot/blob.go). */
    private static final int BLOB_HEADER = 40;

    private final GroupAggregateSpec spec;
    private final int batchSize;
    private final long maxDelayMs;

    private transient BufferAllocator allocator;
    private transient NativeOperator nativeOp;
    private transient RowDataArrowWriter writer;
    private transient VectorSchemaRoot outRoot;
    private transient ArrowRowDataReader reader;
    private transient ProjectedRowData projected;
    private transient StreamRecord<RowData> outRecord;
    private transient boolean timerPending;

    public FerryGroupAggregateOperator(GroupAggregateSpec spec, int batchSize, long maxDelayMs) {
        if (batchSize < 1) {
            throw new IllegalArgumentException("ferry.batch.size must be at least 1, got " + batchSize);
        }
        this.spec = spec;
        this.batchSize = batchSize;
        this.maxDelayMs = Math.max(0, maxDelayMs);
    }

    public GroupAggregateSpec spec() {
        return spec;
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
        TaskInfo task = getRuntimeContext().getTaskInfo();
        int maxParallelism = task.getMaxNumberOfParallelSubtasks();
        KeyGroupRange range =
                KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(
                        maxParallelism, task.getNumberOfParallelSubtasks(), task.getIndexOfThisSubtask());
        allocator = new RootAllocator(Long.MAX_VALUE);
        nativeOp =
                NativeOperator.open(
                        spec.toJson(maxParallelism, range.getStartKeyGroup(), range.getEndKeyGroup()),
                        ArrowTypes.schemaOf(spec.inputType()),
                        allocator);
        for (KeyGroupStatePartitionStreamProvider p : context.getRawKeyedStateInputs()) {
            byte[] blob = readBlob(p.getStream(), p.getKeyGroupId());
            nativeOp.restore(p.getKeyGroupId(), blob);
        }
    }

    /** Reads one self-delimiting state blob: the fixed header, then the payload it announces. */
    private static byte[] readBlob(InputStream in, int keyGroup) throws IOException {
        DataInputStream data = new DataInputStream(in);
        byte[] header = new byte[BLOB_HEADER];
        try {
            data.readFully(header);
            long payload = 0;
            for (int i = 7; i >= 0; i--) {
                payload = (payload << 8) | (header[28 + i] & 0xff);
            }
            if (payload < 0 || payload > Integer.MAX_VALUE - BLOB_HEADER) {
                throw new IOException(
                        "Ferry state of key group " + keyGroup + ": payload length " + payload + " is invalid");
            }
            byte[] blob = new byte[BLOB_HEADER + (int) payload];
            System.arraycopy(header, 0, blob, 0, BLOB_HEADER);
            data.readFully(blob, BLOB_HEADER, (int) payload);
            return blob;
        } catch (EOFException e) {
            throw new IOException("Ferry state of key group " + keyGroup + " is truncated", e);
        }
    }

    @Override
    public void open() throws Exception {
        super.open();
        writer = RowDataArrowWriter.create(spec.inputType(), allocator, batchSize);
        outRoot = VectorSchemaRoot.create(nativeOp.outputSchema(), allocator);
        reader = new ArrowRowDataReader(outRoot);
        projected = ProjectedRowData.from(spec.projection());
        outRecord = new StreamRecord<>(null);
    }

    @Override
    public void processElement(StreamRecord<RowData> element) throws Exception {
        writer.write(projected.replaceRow(element.getValue()));
        if (writer.count() >= batchSize) {
            processBatch();
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
        boolean produced = nativeOp.process(writer.root(), now(), outRoot);
        writer.reset();
        if (produced) {
            emit();
        }
    }

    private void emit() {
        reader.load();
        int rows = reader.rowCount();
        for (int i = 0; i < rows; i++) {
            output.collect(outRecord.replace(reader.read(i)));
        }
    }

    private long now() {
        return getProcessingTimeService().getCurrentProcessingTime();
    }

    @Override
    public void processWatermark(Watermark mark) throws Exception {
        processBatch();
        if (nativeOp.advance(mark.getTimestamp(), now(), outRoot)) {
            emit();
        }
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
            byte[] blob = nativeOp.snapshot(keyGroup);
            if (blob != null) {
                out.startNewKeyGroup(keyGroup);
                out.write(blob);
            }
        }
    }

    @Override
    public void finish() throws Exception {
        processBatch();
        if (nativeOp.flush(now(), outRoot)) {
            emit();
        }
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
