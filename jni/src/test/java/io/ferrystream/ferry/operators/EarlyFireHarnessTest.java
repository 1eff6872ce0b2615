package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.kinds.intervaljoin.FerryIntervalJoinOperator;
import io.ferrystream.ferry.operators.IntervalJoinDifferentialTest.Planned;

import static io.ferrystream.ferry.operators.IntervalJoinDifferentialTest.harness;
import static io.ferrystream.ferry.operators.IntervalJoinDifferentialTest.plan;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;

import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedTwoInputStreamOperatorTestHarness;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

/**
 * The {@code EARLY_FIRE} hint's runtime (Flink's master branch; Flink 2.3 has no early fire, so
 * there is no Flink operator to compare with): the planned native operator in Flink's two-input
 * harness against the worked examples of master's tests, written out by hand
 * (docs/operators/interval-join.md#early_fire). Bounds as in those examples: a left row at lt
 * matches a right row at rt when {@code rt - 5 <= lt <= rt + 9} (milliseconds), so left rows are
 * cleaned up at t + 6, right rows at t + 10, and the output watermark lags by 9.
 */
class EarlyFireHarnessTest {
    private static final String ROW_TIME = "L.k = R.k AND L.rt BETWEEN R.rt - INTERVAL '0.005' SECOND"
            + " AND R.rt + INTERVAL '0.009' SECOND";
    private static final String PROC_TIME = "L.k = R.k AND L.pt BETWEEN R.pt - INTERVAL '0.005' SECOND"
            + " AND R.pt + INTERVAL '0.009' SECOND";

    private static Planned planned(String joinType, String hint, boolean proctime) throws Exception {
        Planned p = plan(joinType, proctime ? PROC_TIME : ROW_TIME, true, 1024, proctime, false, hint);
        assertInstanceOf(FerryIntervalJoinOperator.class, p.operator());
        return p;
    }

    /**
     * Runs a script through the operator: {@code L10} / {@code R12} a row of key 1 at that time
     * ({@code L10b}: key 2), {@code W13} a watermark on both inputs, {@code P3} the processing
     * time, {@code S} a snapshot and restore. Output: {@code kind[lt,lk,rt,rk]} and {@code WM n}.
     */
    private static List<String> run(Planned p, String script) throws Exception {
        RowDataSerializer left = new RowDataSerializer(p.leftType());
        RowDataSerializer right = new RowDataSerializer(p.rightType());
        List<String> out = new ArrayList<>();
        KeyedTwoInputStreamOperatorTestHarness<RowData, RowData, RowData, RowData> h = harness(p, null);
        long clock = 0;
        long cp = 0;
        for (String step : script.trim().split("\\s+")) {
            char c = step.charAt(0);
            String arg = step.substring(1);
            long key = arg.endsWith("b") ? 2 : 1;
            arg = arg.replace("b", "");
            switch (c) {
                case 'L':
                case 'R': {
                    GenericRowData row = new GenericRowData(p.leftType().getFieldCount());
                    row.setField(0, key);
                    row.setField(2, TimestampData.fromEpochMillis(Long.parseLong(arg)));
                    if (c == 'L') {
                        h.processElement1(new StreamRecord<>(left.toBinaryRow(row).copy()));
                    } else {
                        h.processElement2(new StreamRecord<>(right.toBinaryRow(row).copy()));
                    }
                    break;
                }
                case 'W': {
                    long t = arg.equals("MAX") ? Long.MAX_VALUE : Long.parseLong(arg);
                    h.processWatermark1(new Watermark(t));
                    h.processWatermark2(new Watermark(t));
                    break;
                }
                case 'P':
                    clock = Long.parseLong(arg);
                    h.setProcessingTime(clock);
                    break;
                case 'S': {
                    h.prepareSnapshotPreBarrier(++cp);
                    OperatorSubtaskState state = h.snapshot(cp, cp);
                    collect(h, p, out);
                    h.close();
                    h = harness(p, state);
                    h.setProcessingTime(clock);
                    break;
                }
                default:
                    throw new IllegalArgumentException(step);
            }
            // the operator batches rows: what a step produces shows after a barrier's flush
            h.prepareSnapshotPreBarrier(++cp);
            collect(h, p, out);
        }
        h.close();
        return out;
    }

    private static void collect(
            KeyedTwoInputStreamOperatorTestHarness<RowData, RowData, RowData, RowData> h, Planned p, List<String> out) {
        int right = p.leftType().getFieldCount();
        for (Object o : h.getOutput()) {
            if (o instanceof Watermark) {
                out.add("WM " + ((Watermark) o).getTimestamp());
            } else if (o instanceof StreamRecord) {
                RowData r = (RowData) ((StreamRecord<?>) o).getValue();
                out.add(r.getRowKind().shortString() + "[" + time(r, 2) + "," + (r.isNullAt(0) ? "null" : r.getLong(0))
                        + "," + time(r, right + 2) + "," + (r.isNullAt(right) ? "null" : r.getLong(right)) + "]");
            }
        }
        h.getOutput().clear();
    }

    private static String time(RowData r, int i) {
        return r.isNullAt(i) ? "null" : String.valueOf(r.getTimestamp(i, 3).getMillisecond());
    }

    private static void check(String joinType, String hint, String script, String... want) throws Exception {
        assertEquals(List.of(want), run(planned(joinType, hint, false), script), script);
    }

    private static final String DELAY_3 = "EARLY_FIRE('delay'='3ms')";

    @Test
    void unmatchedRowIsPaddedOnceAtItsDelay() throws Exception {
        // no hint (Flink 2.3): padded at cleanup
        check("LEFT", null, "L10 W13 W20", "WM 4", "+I[10,1,null,null]", "WM 11");
        // fired at 13, not padded again at cleanup
        check("LEFT", DELAY_3, "L10 W13 W20", "+I[10,1,null,null]", "WM 4", "WM 11");
    }

    @Test
    void matchAfterTheFireRetractsThePad() throws Exception {
        check("LEFT", DELAY_3, "L10 W13 R12 W30",
                "+I[10,1,null,null]", "WM 4", "-U[10,1,null,null]", "+U[10,1,12,1]", "WM 21");
        // a second match is a plain insert
        check("LEFT", DELAY_3, "L10 W13 R12 R14 W30",
                "+I[10,1,null,null]", "WM 4", "-U[10,1,null,null]", "+U[10,1,12,1]", "+I[10,1,14,1]", "WM 21");
        // a match before the fire: the fire finds the row matched
        check("LEFT", DELAY_3, "L10 R12 W13 W30", "+I[10,1,12,1]", "WM 4", "WM 21");
        // right side padded and corrected
        check("RIGHT", DELAY_3, "R12 W15 L10 W40",
                "+I[null,null,12,1]", "WM 6", "-U[null,null,12,1]", "+U[10,1,12,1]", "WM 31");
    }

    @Test
    void fullJoinFiresBothSides() throws Exception {
        check("FULL", DELAY_3, "L10 R40 W13 R12 W43 W60",
                "+I[10,1,null,null]", "WM 4", "-U[10,1,null,null]", "+U[10,1,12,1]",
                "+I[null,null,40,1]", "WM 34", "WM 51");
    }

    @Test
    void delayBeyondTheCleanupPadsOnceAtCleanup() throws Exception {
        check("LEFT", "EARLY_FIRE('delay'='20ms')", "L10 W35", "+I[10,1,null,null]", "WM 26");
        // the delay equal to the cleanup offset (6): one pad
        check("LEFT", "EARLY_FIRE('delay'='6ms')", "L10 W20", "+I[10,1,null,null]", "WM 11");
    }

    @Test
    void fireTimeAlreadyPassedFiresAtTheNextWatermark() throws Exception {
        check("LEFT", DELAY_3, "W14 L10 W15 W20", "WM 5", "+I[10,1,null,null]", "WM 6", "WM 11");
    }

    @Test
    void lateRowsArePaddedAtOnce() throws Exception {
        check("LEFT", DELAY_3, "W20 L2 W40", "WM 11", "+I[2,1,null,null]", "WM 31");
    }

    @Test
    void innerJoinsIgnoreTheHint() throws Exception {
        check("INNER", DELAY_3, "L10 W13 R12 W30", "WM 4", "+I[10,1,12,1]", "WM 21");
    }

    @Test
    void endOfInputPadsEveryUnfiredRowOnce() throws Exception {
        // the final watermark expires everything: the fired row is not padded again, the other once
        check("LEFT", DELAY_3, "L10 L100 W13 R100b WMAX",
                "+I[10,1,null,null]", "WM 4", "+I[100,1,null,null]", "WM " + (Long.MAX_VALUE - 9));
    }

    @Test
    void firedBitsAndPendingFiresSurviveSnapshots() throws Exception {
        // snapshot after the fire: the match still retracts the pad
        check("LEFT", DELAY_3, "L10 W13 S R12 W30",
                "+I[10,1,null,null]", "WM 4", "-U[10,1,null,null]", "+U[10,1,12,1]", "WM 21");
        // snapshot before the fire: it fires once after the restore
        check("LEFT", DELAY_3, "L10 S W13 W30", "+I[10,1,null,null]", "WM 4", "WM 21");
    }

    @Test
    void processingTimeJoinFiresOnProcessingTime() throws Exception {
        // row times are only shown: the join's time is the arrival processing time
        assertEquals(List.of("+I[10,1,null,null]", "-U[10,1,null,null]", "+U[10,1,14,1]"),
                run(planned("LEFT", DELAY_3, true), "P10 L10 P13 P14 R14 P40"));
    }

    @Test
    void processingTimeEarlyFireOnARowTimeJoin() throws Exception {
        Planned p = planned("LEFT", "EARLY_FIRE('delay'='3ms', 'time-mode'='proctime')", false);
        // fired on processing time, with no watermark
        assertEquals(List.of("+I[10,1,null,null]", "-U[10,1,null,null]", "+U[10,1,12,1]", "WM 21"),
                run(p, "P0 L10 P3 R12 W30"));
        // a snapshot before the fire keeps it pending
        assertEquals(List.of("+I[10,1,null,null]", "WM 21"), run(p, "P0 L10 S P3 W30"));
        // event-time cleanup pads the row when the fire has not come yet, and the fire is then a no-op
        assertEquals(List.of("+I[10,1,null,null]", "WM 11", "WM 21"), run(p, "P0 L10 W20 W30 P5"));
    }
}
