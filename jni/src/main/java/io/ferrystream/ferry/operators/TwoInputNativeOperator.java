package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.arrow.RowDataArrowWriter;

import org.apache.flink.streaming.api.operators.TwoInputStreamOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;

/**
 * The two-input native operator ({@link AbstractNativeOperator}), generic over the kind's spec:
 * one Arrow batch per input; {@link #processElement1} feeds input 0, {@link #processElement2}
 * input 1. A kind whose operator adds nothing to this runs this class itself.
 *
 * <p>Batches ({@link Batching#of}): an input's batch is processed alone when it holds {@code
 * batchSize} rows. Both inputs' pending batches are processed, the first input's (input 0 unless
 * the kind says otherwise) before the other's, when the oldest pending row has waited {@code
 * ferry.batch.max-delay}, before the combined watermark advances (Flink's {@code
 * processWatermark1/2} combine the two inputs' watermarks and call {@link #processWatermark} when
 * the minimum moves), before a checkpoint barrier and at the end of input.
 *
 * <p>Bundles ({@link Batching#bundles}), as Flink's {@code MiniBatchStreamingJoinOperator} with
 * its {@code CountCoBundleTrigger} cuts them: a bundle ends when the rows of both inputs together
 * reach the bundle size, and at every watermark of either input, combined or not, besides
 * barriers and the end of input. A bundle reaches the library as one batch per input, the first
 * input's first, followed by the library's flush (ferry_operator_flush), which ends the bundle:
 * a kind that queues a bundle's rows (the regular join's {@code mini_batch}) joins them there.
 *
 * <p>Arrival order (a kind whose results depend on how the two inputs interleave, such as the
 * interval join): both inputs' pending rows go to the library in one call with the runs of
 * consecutive rows of one input in the order they arrived (ferry_operator_process's runs), so the
 * library sees the rows of both inputs in exactly the order they arrived. They go when the two
 * inputs' pending rows together reach {@code batchSize}, and otherwise at the same moments as
 * the plain batches' (max delay, watermark, barrier, end of input, processing-time timers).
 *
 * @param <S> the kind's spec
 */
public class TwoInputNativeOperator<S extends NativeSpec> extends AbstractNativeOperator<S>
        implements TwoInputStreamOperator<RowData, RowData, RowData> {
    private static final long serialVersionUID = 1L;

    /** Rows of both inputs reach the library in arrival order (see the class comment). */
    private final boolean arrivalOrder;

    private transient RowDataArrowWriter writer0;
    private transient RowDataArrowWriter writer1;
    private transient NativeInputRow inputRow0;
    private transient NativeInputRow inputRow1;
    /** Arrival order: the pending rows' runs, (input, rows) pairs, and how many pairs there are. */
    private transient int[] runs;
    private transient int runCount;
    /** Bundles: rows handed to the library since its last flush (the bundle in progress). */
    private transient long bundleRows;

    /**
     * @param spec the kind's spec, with two inputs
     * @param outputType the layout of the rows this operator emits
     * @param firstInput the input (0 or 1) whose pending batch is processed first
     */
    public TwoInputNativeOperator(S spec, RowType outputType, Batching batching, int firstInput) {
        super(spec, outputType, batching, order(firstInput));
        this.arrivalOrder = false;
    }

    /**
     * @param arrivalOrder rows of both inputs reach the library in the order they arrived (see the
     *     class comment); excludes {@link Batching#bundles}
     * @param watermarkDelay milliseconds every forwarded watermark is held back by (0: none)
     */
    protected TwoInputNativeOperator(
            S spec, RowType outputType, Batching batching, boolean arrivalOrder, long watermarkDelay) {
        super(spec, outputType, batching, watermarkDelay, 0, 1);
        if (arrivalOrder && batching.bundled()) {
            throw new IllegalArgumentException("arrival order across inputs and mini-batch bundles exclude each other");
        }
        this.arrivalOrder = arrivalOrder;
    }

    /** Input 0's pending batch is processed first. */
    public TwoInputNativeOperator(S spec, RowType outputType, Batching batching) {
        this(spec, outputType, batching, 0);
    }

    private static int[] order(int firstInput) {
        if (firstInput != 0 && firstInput != 1) {
            throw new IllegalArgumentException("the first input is 0 or 1, not " + firstInput);
        }
        return firstInput == 0 ? new int[] {0, 1} : new int[] {1, 0};
    }

    /** Go computes keys from the batch; the framework need not project one per record. */
    @Override
    public boolean hasKeyContext1() {
        return false;
    }

    @Override
    public boolean hasKeyContext2() {
        return false;
    }

    @Override
    public void open() throws Exception {
        super.open();
        writer0 = writers[0];
        writer1 = writers[1];
        inputRow0 = inputRows[0];
        inputRow1 = inputRows[1];
        runs = arrivalOrder ? new int[2 * batchSize] : null;
    }

    @Override
    public final void processElement1(StreamRecord<RowData> element) throws Exception {
        if (!admit(0, element.getValue())) {
            return;
        }
        beforeRow();
        write(0, element.getValue());
        afterRow(writer0, 0);
    }

    @Override
    public final void processElement2(StreamRecord<RowData> element) throws Exception {
        if (!admit(1, element.getValue())) {
            return;
        }
        beforeRow();
        write(1, element.getValue());
        afterRow(writer1, 1);
    }

    /**
     * Whether a row of {@code input} (0 or 1) goes to the library at all: a kind whose Flink
     * operator drops some rows on arrival before touching state (the window join's late rows)
     * drops and counts them here, as Flink does, before they are batched. All rows by default.
     */
    protected boolean admit(int input, RowData row) {
        return true;
    }

    /**
     * Appends admitted {@code row} of {@code input} (0 or 1) to the input's batch: its projection
     * by default; a kind that keeps rows in the JVM writes what Go needs of it.
     */
    protected void write(int input, RowData row) {
        if (input == 0) {
            inputRow0.writeTo(writer0, row);
        } else {
            inputRow1.writeTo(writer1, row);
        }
    }

    private void afterRow(RowDataArrowWriter writer, int input) {
        if (arrivalOrder) {
            if (runCount > 0 && runs[2 * runCount - 2] == input) {
                runs[2 * runCount - 1]++;
            } else {
                runs[2 * runCount] = input;
                runs[2 * runCount + 1] = 1;
                runCount++;
            }
            if (writer0.count() + writer1.count() >= batchSize || maxDelayMs == 0) {
                processPending();
            } else {
                startDelayTimer();
            }
        } else if (bundled) {
            if (writer0.count() + writer1.count() >= batchSize) {
                endBundle();
            }
        } else if (writer.count() >= batchSize || maxDelayMs == 0) {
            processInput(input);
        } else {
            startDelayTimer();
        }
    }

    /** Arrival order: both inputs' pending rows in one call; otherwise input by input. */
    @Override
    void processPending() {
        if (!arrivalOrder) {
            bundleRows += writer0.count() + writer1.count();
            super.processPending();
            return;
        }
        processRuns(runs, runCount);
        runCount = 0;
    }

    /**
     * Ends the bundle in progress ({@code MiniBatchStreamingJoinOperator.finishBundle}): every
     * pending row to the library, then its flush, if the bundle had any row.
     */
    private void endBundle() {
        processPending();
        if (bundleRows > 0) {
            bundleRows = 0;
            flushNative();
        }
    }

    /** A bundle ends at every watermark of either input (then Flink combines them). */
    @Override
    public void processWatermark1(Watermark mark) throws Exception {
        if (bundled) {
            endBundle();
        }
        super.processWatermark1(mark);
    }

    @Override
    public void processWatermark2(Watermark mark) throws Exception {
        if (bundled) {
            endBundle();
        }
        super.processWatermark2(mark);
    }

    /** Bundles: one ends before every barrier, so no row is queued outside the snapshot. */
    @Override
    public void prepareSnapshotPreBarrier(long checkpointId) throws Exception {
        if (bundled) {
            endBundle();
        }
        super.prepareSnapshotPreBarrier(checkpointId);
    }
}
