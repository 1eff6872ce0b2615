package io.ferrystream.ferry.operators;

import org.apache.flink.table.types.logical.RowType;

/**
 * The local half of Flink's two-phase aggregate ({@code MapBundleOperator} running {@code
 * MiniBatchLocalGroupAggFunction}) in Go: each bundle ({@code table.exec.mini-batch.size} input
 * rows, cut early by the mini-batch watermark, a checkpoint barrier and the end of input) is one
 * batch, and Go returns one +I partial row per key, Flink's partial row byte for byte. Not keyed:
 * it keeps nothing across a checkpoint, as Flink's flushes its bundle before every barrier.
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
