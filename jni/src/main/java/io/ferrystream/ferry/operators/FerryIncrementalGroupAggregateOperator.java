package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.exchange.FerryFrame;

import org.apache.flink.table.types.logical.RowType;

/**
 * The incremental aggregate of a split DISTINCT ({@code KeyedMapBundleOperator} running {@code
 * MiniBatchIncrementalGroupAggFunction}) in Go: each bundle of partial rows is one batch; Go
 * merges the DISTINCT maps into the keyed state it holds per partial key and returns, per final
 * key, the accumulators of what the bundle added. Keyed by Flink's key selector over the partial
 * grouping fields; its state is checkpointed as raw keyed state, per key group.
 *
 * <p>Feeding Ferry's columnar exchange ({@link #writesFrames}), Go returns each bundle's output
 * rows as {@link FerryFrame}s routed by the final key; behind one ({@link #readsFrames}) it reads
 * frames of the partial rows.
 */
public class FerryIncrementalGroupAggregateOperator extends OneInputNativeOperator<IncrementalGroupAggregateSpec> {
    private static final long serialVersionUID = 1L;

    /**
     * @param outputType Flink's output row type (the final grouping fields, then the final
     *     aggregate's accumulator fields)
     * @param bundleSize {@code table.exec.mini-batch.size}
     */
    public FerryIncrementalGroupAggregateOperator(IncrementalGroupAggregateSpec spec, RowType outputType, long bundleSize) {
        super(spec, outputType, Batching.bundles(bundleSize));
    }
}
