package io.ferrystream.ferry.operators;

import org.apache.flink.metrics.Counter;
import org.apache.flink.metrics.Meter;
import org.apache.flink.metrics.MeterView;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.util.TimeWindowUtil;
import org.apache.flink.table.types.logical.RowType;

import java.time.ZoneId;

/**
 * Flink's window join ({@code WindowJoinOperator}) running in Go. The join stores every row
 * until the watermark passes its window's end and emits nothing before, so its rows reach Go in
 * batches ({@link Batching#of}) cut at the latest at every watermark: all rows that arrived
 * before a watermark are stored before it fires their windows, as in Flink.
 *
 * <p>Late rows (their window fired at the current watermark) are dropped on arrival, before
 * they are batched, with Flink's own test ({@code TimeWindowUtil.isWindowFired}, its conversion
 * of the window end cached) and counted in Flink's metrics: {@code leftNumLateRecordsDropped},
 * {@code leftLateRecordsDroppedRate} and their {@code right} twins. The current watermark is Flink's timer service's: {@code
 * Long.MIN_VALUE} until the first watermark, also after a restore.
 */
public class FerryWindowJoinOperator extends TwoInputNativeOperator<WindowJoinSpec> {
    private static final long serialVersionUID = 1L;

    private final int[] windowEndIndex;
    private final ZoneId shiftTimeZone;

    private transient long watermark;
    private transient Meter[] lateDropped;
    /**
     * The last window end a row carried and its trigger time ({@code isWindowFired}'s
     * {@code toEpochMillsForTimer(windowEnd - 1)}): rows mostly share their window, and the
     * conversion compares zones each time.
     */
    private transient long lastWindowEnd;
    private transient long lastTriggerTime;

    /** @param outputType the join's output row type: the left row's fields, then the right row's (SEMI, ANTI: the left row's) */
    public FerryWindowJoinOperator(WindowJoinSpec spec, RowType outputType, Batching batching) {
        super(spec, outputType, batching);
        this.windowEndIndex = new int[] {spec.leftWindowEndIndex(), spec.rightWindowEndIndex()};
        this.shiftTimeZone = spec.shiftTimeZone();
    }

    @Override
    public void open() throws Exception {
        super.open();
        watermark = Long.MIN_VALUE;
        lastWindowEnd = Long.MAX_VALUE; // no window end converted yet
        lastTriggerTime = Long.MAX_VALUE;
        lateDropped = new Meter[2];
        String[] sides = {"left", "right"};
        for (int i = 0; i < 2; i++) {
            Counter c = getMetricGroup().counter(sides[i] + "NumLateRecordsDropped");
            lateDropped[i] = getMetricGroup().meter(sides[i] + "LateRecordsDroppedRate", new MeterView(c));
        }
    }

    @Override
    protected boolean admit(int input, RowData row) {
        long windowEnd = row.getTimestamp(windowEndIndex[input], 3).getMillisecond();
        // TimeWindowUtil.isWindowFired, its conversion cached (Long.MAX_VALUE: never fired)
        if (windowEnd != lastWindowEnd && windowEnd != Long.MAX_VALUE) {
            lastWindowEnd = windowEnd;
            lastTriggerTime = TimeWindowUtil.toEpochMillsForTimer(windowEnd - 1, shiftTimeZone);
        }
        if (windowEnd != Long.MAX_VALUE && watermark >= lastTriggerTime) {
            lateDropped[input].markEvent();
            return false;
        }
        return true;
    }

    /** The late rows of input (0 left, 1 right) dropped since open ({@code *NumLateRecordsDropped}). */
    long lateRecordsDropped(int input) {
        return lateDropped[input].getCount();
    }

    @Override
    public void processWatermark(Watermark mark) throws Exception {
        super.processWatermark(mark);
        watermark = mark.getTimestamp();
    }
}
