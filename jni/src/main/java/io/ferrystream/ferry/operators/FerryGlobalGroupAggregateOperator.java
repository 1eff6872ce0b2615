package io.ferrystream.ferry.operators;

import org.apache.flink.table.types.logical.RowType;

/**
 * The global half of Flink's two-phase aggregate ({@code KeyedMapBundleOperator} running {@code
 * MiniBatchGlobalGroupAggFunction}) in Go: each bundle of partial rows ({@code
 * table.exec.mini-batch.size} rows, cut early by watermarks, checkpoint barriers and the end of
 * input) is one batch, merged into the keyed state Go holds, and Go returns the changelog Flink
 * emits for it. Keyed by Flink's key selector over the partial rows' grouping fields; its state
 * is checkpointed as raw keyed state, per key group.
 */
public class FerryGlobalGroupAggregateOperator extends OneInputNativeOperator<GlobalGroupAggregateSpec> {
    private static final long serialVersionUID = 1L;

    /**
     * @param outputType Flink's output row type of the aggregate (the grouping fields, then one
     *     field per call of the query)
     * @param bundleSize {@code table.exec.mini-batch.size}
     */
    public FerryGlobalGroupAggregateOperator(GlobalGroupAggregateSpec spec, RowType outputType, long bundleSize) {
        super(spec, outputType, Batching.bundles(bundleSize));
    }
}
