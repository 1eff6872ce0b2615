package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.exchange.FerryFrame;

import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A one-input native operator reading {@link FerryFrame}s of Ferry's columnar exchange instead of
 * rows (the global or incremental aggregate behind a native producer); built with {@link
 * FerryFrame#ROW_TYPE} as its output type it writes frames too ({@link #writesFrames}). Each frame goes to Go as it arrives; Go
 * checks it, queues its rows and cuts the bundles itself (docs/abi.md#frames), so the operator
 * only hands over frames and, where Flink's bundle operator ends a bundle on other grounds,
 * Go's queued rows: before a watermark (the library's advance), before a checkpoint barrier and
 * at the end of input (its flush).
 *
 * <p>Keyed, with Flink's key type ({@link io.ferrystream.ferry.exchange.FrameKeySelector}), but
 * never with a per-record key: a frame holds many keys, whose key groups Go checks against the
 * subtask's range.
 *
 * @param <S> the kind's spec, reading frames ({@link NativeSpec#batchType})
 */
public class FrameInputNativeOperator<S extends NativeSpec> extends AbstractNativeOperator<S>
        implements OneInputStreamOperator<FerryFrame, RowData> {
    private static final long serialVersionUID = 1L;

    /** Frames read by every such operator of this JVM (for tests and reports). */
    private static final AtomicLong FRAMES_READ = new AtomicLong();
    /** The same, per spec kind. */
    private static final Map<String, AtomicLong> FRAMES_READ_BY_KIND = new ConcurrentHashMap<>();

    private transient AtomicLong framesReadOfKind;

    private transient GenericRowData frameRow;

    /**
     * @param spec the kind's spec, whose input's batches are frames
     * @param outputType the layout of the rows this operator emits ({@link FerryFrame#ROW_TYPE}:
     *     frames)
     */
    public FrameInputNativeOperator(S spec, RowType outputType) {
        super(spec, outputType, Batching.of(1, 0), 0);
        if (!spec.batchType(0).equals(FerryFrame.ROW_TYPE)) {
            throw new IllegalArgumentException("spec " + spec.name() + " does not read frames: its batches are " + spec.batchType(0));
        }
    }

    /** Frames read by every frame-reading native operator of this JVM so far. */
    public static long framesRead() {
        return FRAMES_READ.get();
    }

    /** Frames read so far by the frame-reading native operators of spec kind {@code kind}. */
    public static long framesRead(String kind) {
        AtomicLong n = FRAMES_READ_BY_KIND.get(kind);
        return n == null ? 0 : n.get();
    }

    @Override
    public void open() throws Exception {
        super.open();
        frameRow = new GenericRowData(1);
        framesReadOfKind = FRAMES_READ_BY_KIND.computeIfAbsent(spec().kind(), k -> new AtomicLong());
    }

    /** Go computes and checks every row's key; the framework must not look for one per frame. */
    @Override
    public boolean hasKeyContext1() {
        return false;
    }

    /** A frame has no single key (Flink's test harnesses call this per record). */
    @SuppressWarnings("rawtypes")
    @Override
    public void setKeyContextElement1(StreamRecord record) {}

    @Override
    public void processElement(StreamRecord<FerryFrame> element) throws Exception {
        frameRow.setField(0, element.getValue().bytes());
        writers[0].write(frameRow);
        processInput(0);
        FRAMES_READ.incrementAndGet();
        framesReadOfKind.incrementAndGet();
    }

    /** Go's queued rows are one bundle before a barrier, as Flink's bundle operator ends one. */
    @Override
    public void prepareSnapshotPreBarrier(long checkpointId) throws Exception {
        processPending();
        flushNative();
        super.prepareSnapshotPreBarrier(checkpointId);
    }
}
