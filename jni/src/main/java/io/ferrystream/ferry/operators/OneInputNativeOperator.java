package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.arrow.RowDataArrowWriter;

import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;

/**
 * The one-input native operator ({@link AbstractNativeOperator}), generic over the kind's spec:
 * every row goes to the Arrow batch of the spec's only input, which is processed when it holds
 * {@code batchSize} rows, when its first row has waited {@code ferry.batch.max-delay}, before a
 * watermark is forwarded, before a checkpoint barrier and at the end of input; in mini-batch mode
 * ({@link Batching#bundles}) exactly where Flink's {@code CountBundleTrigger} would end a bundle.
 * Keyed or not as its transformation says; a kind whose operator adds nothing to this (the local,
 * global and incremental aggregates) runs this class itself.
 *
 * <p>Between two native stages its input may be frames of Ferry's columnar exchange instead of
 * rows ({@link #readsFrames}), and its output frames of its output rows, routed for the consumer's
 * parallelism and max parallelism as the network stack reports them when the task starts
 * ({@link #writesFrames}).
 *
 * @param <S> the kind's spec
 */
public class OneInputNativeOperator<S extends NativeSpec> extends AbstractNativeOperator<S>
        implements OneInputStreamOperator<RowData, RowData> {
    private static final long serialVersionUID = 1L;

    private transient RowDataArrowWriter writer;
    private transient NativeInputRow inputRow;

    /**
     * @param spec the kind's spec, with one input
     * @param outputType the layout of the rows this operator emits
     */
    public OneInputNativeOperator(S spec, RowType outputType, Batching batching) {
        super(spec, outputType, batching, 0);
    }

    /** Go computes keys from the batch; the framework need not project one per record. */
    @Override
    public boolean hasKeyContext1() {
        return false;
    }

    @Override
    public void open() throws Exception {
        super.open();
        writer = writers[0];
        inputRow = inputRows[0];
    }

    /**
     * Whether a row goes to the library at all, seen on arrival before it is batched: a kind whose
     * Flink operator looks at each row as it arrives does that here (the deduplication counts late
     * rows in Flink's metric). All rows by default.
     */
    protected boolean admit(RowData row) {
        return true;
    }

    /** A row, or a frame of the columnar exchange when the operator {@link #readsFrames}. */
    @Override
    public final void processElement(StreamRecord<RowData> element) throws Exception {
        if (readsFrames()) {
            processFrame(((StreamRecord<?>) element).getValue());
            return;
        }
        RowData row = element.getValue();
        if (!admit(row)) {
            return;
        }
        inputRow.writeTo(writer, row);
        if (writer.count() >= batchSize) {
            processInput(0);
        } else if (bundled) {
            return;
        } else if (writer.count() == 1 && maxDelayMs > 0) {
            startDelayTimer();
        } else if (maxDelayMs == 0) {
            processInput(0);
        }
    }
}
