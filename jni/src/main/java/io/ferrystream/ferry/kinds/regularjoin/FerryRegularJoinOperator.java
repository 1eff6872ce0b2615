package io.ferrystream.ferry.kinds.regularjoin;

import io.ferrystream.ferry.operators.Batching;
import io.ferrystream.ferry.operators.TwoInputNativeOperator;

import org.apache.flink.table.types.logical.RowType;

/**
 * Flink's {@code StreamingJoinOperator} running in Go. Its results depend on how the two inputs
 * interleave (a row joins the other side's rows stored before it arrived, and an outer row is
 * padded or retracts its padding by what the other side held then), so the rows of both inputs
 * reach Go in arrival order: a batch is a run of consecutive rows of one input. Watermarks pass
 * through, as Flink's operator forwards them.
 *
 * <p>A mini-batch spec is Flink's {@code MiniBatchStreamingJoinOperator}: its results depend on
 * where a bundle ends, not on how the inputs interleave within it, so it runs with {@link
 * Batching#bundles} (cut as Flink's {@code CountCoBundleTrigger} and watermarks cut them), each
 * bundle ended by the library's flush, which joins the rows Go queued per side.
 */
public class FerryRegularJoinOperator extends TwoInputNativeOperator<RegularJoinSpec> {
    private static final long serialVersionUID = 1L;

    /**
     * @param outputType the join's output row type: the left row's fields, then the right row's
     * @param batching {@link Batching#bundles} exactly for a mini-batch spec
     */
    public FerryRegularJoinOperator(RegularJoinSpec spec, RowType outputType, Batching batching) {
        super(spec, outputType, batching, !batching.bundled(), 0L);
        if (spec.miniBatch() != batching.bundled()) {
            throw new IllegalArgumentException(
                    (spec.miniBatch() ? "a mini-batch join needs bundles, not " : "a join without mini-batch takes no bundles: ")
                            + batching);
        }
    }
}
