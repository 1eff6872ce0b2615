package io.ferrystream.ferry.kinds.groupaggregate;

import io.ferrystream.ferry.operators.Batching;
import io.ferrystream.ferry.operators.OneInputNativeOperator;

import org.apache.flink.table.types.logical.RowType;

/**
 * Flink's single-phase group aggregate ({@code GroupAggFunction}) running in Go, and its one-phase
 * mini-batch form ({@code MiniBatchGroupAggFunction}): Go emits exactly the changelog Flink emits
 * for a batch's rows one by one, in order. Everything but the spec is {@link
 * OneInputNativeOperator}'s: batching, state, metrics, emission.
 */
public class FerryGroupAggregateOperator extends OneInputNativeOperator<GroupAggregateSpec> {
    private static final long serialVersionUID = 2L;

    /**
     * @param outputType the aggregate's output row type (Flink's: the grouping keys, then one
     *     field per call), the layout of the rows this operator emits
     * @param batchSize {@code ferry.batch.size}
     * @param maxDelayMs {@code ferry.batch.max-delay}
     */
    public FerryGroupAggregateOperator(GroupAggregateSpec spec, RowType outputType, int batchSize, long maxDelayMs) {
        this(spec, outputType, Batching.of(batchSize, maxDelayMs));
    }

    /**
     * @param batching {@link Batching#bundles} for a mini-batch spec, whose results depend on where
     *     a batch ends
     */
    public FerryGroupAggregateOperator(GroupAggregateSpec spec, RowType outputType, Batching batching) {
        super(spec, outputType, batching);
        if (spec.miniBatch() && !batching.bundled()) {
            throw new IllegalArgumentException("a mini-batch spec needs Flink's bundles as batches");
        }
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
        return new FerryGroupAggregateOperator(spec, outputType, Batching.bundles(bundleSize));
    }
}
