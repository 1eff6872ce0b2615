package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.exchange.ExchangeTarget;
import io.ferrystream.ferry.exchange.FerryFrame;
import io.ferrystream.ferry.nativelib.NativeOperator;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.streaming.api.operators.Output;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.table.types.logical.RowType;

/**
 * The local half of Flink's two-phase aggregate ({@code MapBundleOperator} running {@code
 * MiniBatchLocalGroupAggFunction}) in Go: each bundle ({@code table.exec.mini-batch.size} input
 * rows, cut early by the mini-batch watermark, a checkpoint barrier and the end of input) is one
 * batch, and Go returns one +I partial row per key, Flink's partial row byte for byte. Not keyed:
 * it keeps nothing across a checkpoint, as Flink's flushes its bundle before every barrier.
 *
 * <p>Feeding the columnar exchange ({@link #writesFrames}), Go returns the bundle's partial rows
 * as {@link FerryFrame}s instead, one or more per destination channel, routed for the consumer's
 * parallelism and max parallelism as the network stack reports them when the task starts
 * ({@link ExchangeTarget}); the operator emits the frames, not rows.
 */
public class FerryLocalGroupAggregateOperator extends OneInputNativeOperator<LocalGroupAggregateSpec> {
    private static final long serialVersionUID = 1L;

    private final boolean frames;

    private transient StreamRecord<FerryFrame> frameRecord;

    /**
     * @param outputType Flink's output row type of the local aggregate (the grouping fields, then
     *     every call's accumulator fields)
     * @param bundleSize {@code table.exec.mini-batch.size}
     */
    public FerryLocalGroupAggregateOperator(LocalGroupAggregateSpec spec, RowType outputType, long bundleSize) {
        super(spec, outputType, Batching.bundles(bundleSize));
        this.frames = false;
    }

    private FerryLocalGroupAggregateOperator(LocalGroupAggregateSpec spec, long bundleSize) {
        super(spec, FerryFrame.ROW_TYPE, Batching.bundles(bundleSize));
        this.frames = true;
    }

    /** The operator feeding Ferry's columnar exchange: it emits {@link FerryFrame}s. */
    public static FerryLocalGroupAggregateOperator writingFrames(LocalGroupAggregateSpec spec, long bundleSize) {
        return new FerryLocalGroupAggregateOperator(spec, bundleSize);
    }

    /** Whether the operator emits frames of the columnar exchange rather than rows. */
    public boolean writesFrames() {
        return frames;
    }

    @Override
    protected NativeOperator openNative(int maxParallelism, KeyGroupRange range, BufferAllocator allocator) {
        if (!frames) {
            return super.openNative(maxParallelism, range, allocator);
        }
        ExchangeTarget target = ExchangeTarget.of(this);
        frameRecord = new StreamRecord<>(null);
        return spec().forExchange(target.parallelism).open(target.maxParallelism, 0, target.maxParallelism - 1, allocator);
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    @Override
    protected void emit(VectorSchemaRoot chunk) {
        if (!frames) {
            super.emit(chunk);
            return;
        }
        // The transformation's output type is FerryFrame (the planner built it so); Flink's
        // operator base types the output by the rows every other native operator emits.
        Output out = output;
        VarBinaryVector column = (VarBinaryVector) chunk.getVector(0);
        for (int i = 0, n = chunk.getRowCount(); i < n; i++) {
            out.collect(frameRecord.replace(new FerryFrame(column.get(i))));
        }
    }
}
