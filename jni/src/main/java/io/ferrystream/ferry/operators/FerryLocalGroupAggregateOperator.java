package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.exchange.ExchangeTarget;
import io.ferrystream.ferry.exchange.FerryFrame;

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
 * ({@link ExchangeTarget}); the operator emits the frames, not rows ({@link
 * AbstractNativeOperator#emit}).
 */
public class FerryLocalGroupAggregateOperator extends OneInputNativeOperator<LocalGroupAggregateSpec> {
    private static final long serialVersionUID = 1L;

    /**
     * @param outputType Flink's output row type of the local aggregate (the grouping fields, then
     *     every call's accumulator fields)
     * @param bundleSize {@code table.exec.mini-batch.size}
     */
    public FerryLocalGroupAggregateOperator(LocalGroupAggregateSpec spec, RowType outputType, long bundleSize) {
        super(spec, outputType, Batching.bundles(bundleSize));
    }
}
