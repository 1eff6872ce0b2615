package io.ferrystream.ferry.kinds.lookupjoin;

import org.apache.flink.streaming.api.TimerService;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.api.operators.Output;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.runtime.tasks.ProcessingTimeService;
import org.apache.flink.table.data.RowData;
import org.apache.flink.util.OutputTag;

import java.util.function.LongSupplier;

/**
 * The {@link ProcessFunction.Context} a sync runner's {@code processElement} gets, as Flink's
 * {@code ProcessOperator} builds it: the probe row's timestamp, processing time, the last
 * forwarded watermark, side outputs; timers are refused with Flink's message (not a keyed
 * stream). Java makes it an inner object of some {@link ProcessFunction}; Flink's context uses
 * nothing of that function, so one no-op instance serves every runner.
 */
public final class ProbeContext extends ProcessFunction<RowData, RowData>.Context implements TimerService {
    private final ProcessingTimeService time;
    private final LongSupplier watermark;
    private final Output<StreamRecord<RowData>> output;
    private StreamRecord<RowData> element;

    private static final ProcessFunction<RowData, RowData> OUTER = new ProcessFunction<>() {
        @Override
        public void processElement(RowData value, Context ctx, org.apache.flink.util.Collector<RowData> out) {
            throw new UnsupportedOperationException();
        }
    };

    public ProbeContext(ProcessingTimeService time, LongSupplier watermark, Output<StreamRecord<RowData>> output) {
        OUTER.super();
        this.time = time;
        this.watermark = watermark;
        this.output = output;
    }

    /** The probe row being processed. */
    public void setElement(StreamRecord<RowData> element) {
        this.element = element;
    }

    @Override
    public Long timestamp() {
        return element.hasTimestamp() ? element.getTimestamp() : null;
    }

    @Override
    public TimerService timerService() {
        return this;
    }

    @Override
    public <X> void output(OutputTag<X> outputTag, X value) {
        if (outputTag == null) {
            throw new IllegalArgumentException("OutputTag must not be null.");
        }
        output.collect(outputTag, new StreamRecord<>(value, element.getTimestamp()));
    }

    @Override
    public long currentProcessingTime() {
        return time.getCurrentProcessingTime();
    }

    @Override
    public long currentWatermark() {
        return watermark.getAsLong();
    }

    @Override
    public void registerProcessingTimeTimer(long t) {
        throw new UnsupportedOperationException(UNSUPPORTED_REGISTER_TIMER_MSG);
    }

    @Override
    public void registerEventTimeTimer(long t) {
        throw new UnsupportedOperationException(UNSUPPORTED_REGISTER_TIMER_MSG);
    }

    @Override
    public void deleteProcessingTimeTimer(long t) {
        throw new UnsupportedOperationException(UNSUPPORTED_DELETE_TIMER_MSG);
    }

    @Override
    public void deleteEventTimeTimer(long t) {
        throw new UnsupportedOperationException(UNSUPPORTED_DELETE_TIMER_MSG);
    }
}
