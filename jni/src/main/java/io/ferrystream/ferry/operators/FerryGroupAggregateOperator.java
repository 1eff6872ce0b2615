package io.ferrystream.ferry.operators;

import org.apache.flink.table.types.logical.RowType;

/**
 * Flink's single-phase group aggregate ({@code GroupAggFunction}) running in Go, and its one-phase
 * mini-batch form ({@code MiniBatchGroupAggFunction}): Go emits exactly the changelog Flink emits
 * for a batch's rows one by one, in order. Everything but the spec is {@link
 * OneInputNativeOperator}'s: batching, state, metrics, emission.
 */
public class FerryGroupAggregateOperator extends OneInputNativeOperator<GroupAggregateSpec> {
    private static final long serialVersionUID = 2L;

    /** Gauge: keys (groups) in the native state. */
    public static final String METRIC_STATE_KEYS = AbstractNativeOperator.METRIC_STATE_KEYS;

    /** Gauge: estimated bytes of native memory the state owns (outside Flink's managed memory). */
    public static final String METRIC_STATE_BYTES = AbstractNativeOperator.METRIC_STATE_BYTES;

    /** Counter: batches handed to Go. */
    public static final String METRIC_NATIVE_BATCHES = AbstractNativeOperator.METRIC_NATIVE_BATCHES;

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
     *     a batch ends; either policy otherwise
     */
    public FerryGroupAggregateOperator(GroupAggregateSpec spec, RowType outputType, Batching batching) {
        super(spec, outputType, batching);
        if (spec.miniBatch() != batching.bundled()) {
            throw new IllegalArgumentException(spec.miniBatch()
                    ? "a mini-batch spec needs Flink's bundles as batches"
                    : "bundles are for a mini-batch spec");
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
