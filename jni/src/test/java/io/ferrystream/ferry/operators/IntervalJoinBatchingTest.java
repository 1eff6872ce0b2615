package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.kinds.intervaljoin.FerryIntervalJoinOperator;
import io.ferrystream.ferry.operators.IntervalJoinDifferentialTest.Planned;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedTwoInputStreamOperatorTestHarness;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;

import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

/**
 * The interval join's arrival-order batching ({@link TwoInputNativeOperator}): interleaved rows of
 * both inputs reach the library in one call per batch (ferry_operator_process_runs), not one call
 * per run of one input, and the output is still Flink's, row for row.
 */
class IntervalJoinBatchingTest {

    static RowData row(RowDataSerializer s, long k, long t, String v) {
        GenericRowData row = new GenericRowData(IntervalJoinDifferentialTest.FIELDS);
        row.setField(0, k);
        row.setField(1, StringData.fromString("s"));
        row.setField(2, TimestampData.fromEpochMillis(t));
        row.setField(3, StringData.fromString(v));
        return s.toBinaryRow(row).copy();
    }

    /** Feeds rows {@code from .. from + n} of a stream of runs of two left rows and one right row. */
    static void feed(KeyedTwoInputStreamOperatorTestHarness<RowData, RowData, RowData, RowData> h, Planned p, int from, int n)
            throws Exception {
        RowDataSerializer left = new RowDataSerializer(p.leftType());
        RowDataSerializer right = new RowDataSerializer(p.rightType());
        for (int i = from; i < from + n; i++) {
            long k = i % 7;
            long t = 10_000 + i * 10L;
            if (i % 3 == 1) { // runs of two left rows and one right row
                h.processElement2(new StreamRecord<>(row(right, k, t, "r" + i)));
            } else {
                h.processElement1(new StreamRecord<>(row(left, k, t, "l" + i)));
            }
        }
    }

    static List<String> output(KeyedTwoInputStreamOperatorTestHarness<RowData, RowData, RowData, RowData> h, Planned p) {
        List<String> out = new ArrayList<>();
        IntervalJoinDifferentialTest.collect(h, p.outputType(), out);
        return out;
    }

    @Test
    void oneNativeCallPerBatchOfBothInputs() throws Exception {
        String cond = "L.k = R.k AND R.rt BETWEEN L.rt - INTERVAL '1' SECOND AND L.rt + INTERVAL '1' SECOND";
        Planned ferry = IntervalJoinDifferentialTest.plan("LEFT", cond, true, 64);
        Planned flink = IntervalJoinDifferentialTest.plan("LEFT", cond, false, 64);
        var fh = IntervalJoinDifferentialTest.harness(ferry, null);
        var sh = IntervalJoinDifferentialTest.harness(flink, null);
        AbstractNativeOperator<?> join = (FerryIntervalJoinOperator) fh.getOperator();

        // 63 rows in 42 runs of one input: nothing is due yet (no watermark, the max delay is an hour).
        feed(fh, ferry, 0, 63);
        feed(sh, flink, 0, 63);
        assertEquals(0, join.nativeBatches(), "rows pending");
        // The 64th row fills the batch: one call for all 43 runs.
        feed(fh, ferry, 63, 1);
        feed(sh, flink, 63, 1);
        assertEquals(1, join.nativeBatches(), "one call for a full batch of both inputs");
        // 10 more rows, then a watermark of both inputs: one more call, then the watermark.
        feed(fh, ferry, 64, 10);
        feed(sh, flink, 64, 10);
        for (var h : List.of(fh, sh)) {
            h.processWatermark1(new Watermark(10_500));
            h.processWatermark2(new Watermark(10_500));
        }
        assertEquals(2, join.nativeBatches(), "the pending rows of both inputs in one call before the watermark");
        List<String> got = output(fh, ferry);
        List<String> want = output(sh, flink);
        assertEquals(want, got);
        assertEquals(true, want.size() > 50, "an output worth comparing: " + want.size());
        fh.close();
        sh.close();
    }
}
