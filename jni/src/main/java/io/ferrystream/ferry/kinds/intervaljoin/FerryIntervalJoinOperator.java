package io.ferrystream.ferry.kinds.intervaljoin;

import io.ferrystream.ferry.operators.Batching;
import io.ferrystream.ferry.operators.TwoInputNativeOperator;

import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.table.types.logical.RowType;

/**
 * Flink's interval join ({@code RowTimeIntervalJoin} in a {@code
 * KeyedCoProcessOperatorWithWatermarkDelay}, or {@code ProcTimeIntervalJoin} in a {@code
 * KeyedCoProcessOperator}) running in Go. Its results depend on how the two
 * inputs interleave (a row joins the other side's rows cached before it arrived), so the rows of
 * both inputs reach Go in arrival order: a batch is a run of consecutive rows of one input. The
 * watermarks it forwards are held back by {@link IntervalJoinSpec#watermarkDelay()}, as Flink's.
 */
public class FerryIntervalJoinOperator extends TwoInputNativeOperator<IntervalJoinSpec> {
    private static final long serialVersionUID = 1L;

    /** @param outputType the join's output row type: the left row's fields, then the right row's */
    public FerryIntervalJoinOperator(IntervalJoinSpec spec, RowType outputType, Batching batching) {
        super(spec, outputType, batching, true, spec.watermarkDelay());
    }

    /**
     * A processing-time join ({@code ProcTimeIntervalJoin} in a {@code KeyedCoProcessOperator}):
     * each row's time is the processing time it arrived at, and the cleanup timers are
     * processing-time timers, kept in Go and fired through Flink's processing-time service. A
     * row-time join with processing-time early fire is driven by processing time too (a row's
     * early fire is due its delay after it arrived) and by watermarks (row times and cleanup).
     */
    @Override
    protected boolean processingTimeDriven() {
        return !spec().rowTime() || spec().processingTimeEarlyFireOnRowTime();
    }

    /** Flink's interval join state this operator imports and writes into savepoints, or null. */
    private FlinkIntervalJoinState flinkIntervalJoinState;

    /**
     * Declares Flink's interval join state ({@link FlinkIntervalJoinState}), which reads and
     * writes Flink's timers through this operator's timer services. Returns this operator.
     */
    public FerryIntervalJoinOperator importingFlinkState(FlinkIntervalJoinState state) {
        super.importingFlinkState(state);
        this.flinkIntervalJoinState = state;
        return this;
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        if (flinkIntervalJoinState != null) {
            flinkIntervalJoinState.attach(this);
        }
        super.initializeState(context);
    }

    @Override
    protected boolean watermarksReachNative() {
        return spec().rowTime();
    }
}
