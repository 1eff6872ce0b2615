package io.ferrystream.ferry.operators;

import org.apache.flink.table.types.logical.RowType;

/**
 * Flink's interval join ({@code RowTimeIntervalJoin} in a {@code
 * KeyedCoProcessOperatorWithWatermarkDelay}) running in Go. Its results depend on how the two
 * inputs interleave (a row joins the other side's rows cached before it arrived), so the rows of
 * both inputs reach Go in arrival order: a batch is a run of consecutive rows of one input. The
 * watermarks it forwards are held back by {@link IntervalJoinSpec#watermarkDelay()}, as Flink's.
 */
public class FerryIntervalJoinOperator extends TwoInputNativeOperator<IntervalJoinSpec> {
    private static final long serialVersionUID = 1L;

    /** @param outputType the join's output row type: the left row's fields, then the right row's */
    public FerryIntervalJoinOperator(IntervalJoinSpec spec, RowType outputType, Batching batching) {
        super(spec, outputType, batching, true, spec.watermarkDelay());
        if (!spec.rowTime()) {
            // the processing time of each row and processing-time timers do not reach Go yet
            throw new IllegalArgumentException("a processing-time interval join is not native yet");
        }
    }
}
