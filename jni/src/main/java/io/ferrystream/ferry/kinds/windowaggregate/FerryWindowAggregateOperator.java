package io.ferrystream.ferry.kinds.windowaggregate;

import io.ferrystream.ferry.operators.Batching;
import io.ferrystream.ferry.operators.OneInputNativeOperator;

import org.apache.flink.api.common.state.ListState;
import org.apache.flink.api.common.state.ListStateDescriptor;
import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.StateSnapshotContext;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.table.types.logical.RowType;

import java.util.Collections;

/**
 * Flink's {@code WindowAggOperator} (single-phase, row time) running in Go. What it adds to the
 * one-input operator is Flink's operator's own: the watermark it has seen, kept in the union list
 * operator state {@code watermark} as Flink's operator keeps it (a restore takes the smallest, and
 * Go's event time starts there, firing nothing), a watermark not above it forwarded as that
 * watermark and not passed to Go, and the window buffer's flush before every checkpoint barrier
 * ({@code prepareSnapshotPreBarrier}), where Flink's buffer registers its windows' timers.
 */
public class FerryWindowAggregateOperator extends OneInputNativeOperator<WindowAggregateSpec> {
    private static final long serialVersionUID = 1L;

    private transient ListState<Long> watermarkState;
    private transient long currentWatermark;

    /** @param outputType the aggregate's output row type: keys, the calls' results, the window properties */
    public FerryWindowAggregateOperator(WindowAggregateSpec spec, RowType outputType, Batching batching) {
        super(spec, outputType, batching);
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        super.initializeState(context);
        currentWatermark = Long.MIN_VALUE;
        watermarkState = context.getOperatorStateStore()
                .getUnionListState(new ListStateDescriptor<>("watermark", LongSerializer.INSTANCE));
        if (context.isRestored()) {
            long min = Long.MAX_VALUE;
            for (Long w : watermarkState.get()) {
                min = Math.min(min, w);
            }
            if (min != Long.MAX_VALUE) {
                currentWatermark = min;
            }
        }
    }

    @Override
    public void open() throws Exception {
        super.open();
        if (currentWatermark != Long.MIN_VALUE) {
            advanceNative(currentWatermark);
        }
    }

    @Override
    public void snapshotState(StateSnapshotContext context) throws Exception {
        super.snapshotState(context);
        watermarkState.update(Collections.singletonList(currentWatermark));
    }

    /** Flink's processWatermark: a watermark above the last advances; any other forwards the last. */
    @Override
    public void processWatermark(Watermark mark) throws Exception {
        if (mark.getTimestamp() > currentWatermark) {
            currentWatermark = mark.getTimestamp();
            super.processWatermark(mark);
        } else {
            super.processWatermark(new Watermark(currentWatermark));
        }
    }

    @Override
    protected boolean flushesBeforeBarrier() {
        return true;
    }
}
