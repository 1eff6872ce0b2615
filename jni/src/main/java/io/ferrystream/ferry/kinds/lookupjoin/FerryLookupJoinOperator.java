package io.ferrystream.ferry.kinds.lookupjoin;

import io.ferrystream.ferry.operators.AbstractNativeOperator;
import io.ferrystream.ferry.operators.Batching;

import org.apache.flink.api.common.functions.DefaultOpenContext;
import org.apache.flink.api.common.functions.Function;
import org.apache.flink.api.common.functions.util.FunctionUtils;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.BoundedOneInput;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.table.data.RowData;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

/**
 * Ferry's lookup join operator: Flink's lookup join (sync {@code ProcessOperator(LookupJoinRunner
 * …)} or {@code AsyncWaitOperator(AsyncLookupJoinRunner …)}) for append-only probes, running
 * Flink's own runner on batches of probe rows ({@link LookupJoinBatch}). Stateless, no native
 * handle: for a connector's Java lookup function nothing runs in Go; the join core (keys, NULL-key
 * skip, the connector call, calc, residual condition, pre-filter, LEFT padding, output RowKind) is
 * Flink's generated code.
 *
 * <p>Probe rows are buffered (copied with the input serializer when object reuse is on, as
 * Flink's {@code AsyncWaitOperator} copies them) and a batch runs when it holds {@code
 * ferry.batch.size} rows, when its oldest row waited {@code ferry.batch.max-delay}, before a
 * watermark is forwarded, before a checkpoint barrier ({@link #prepareSnapshotPreBarrier}) and at
 * the end of input: no row and no request is ever in flight across a barrier or the end of input,
 * so the operator has no state. Output rows keep their probe row's StreamRecord timestamp.
 *
 * <p>Flink's function gets the operator's runtime context and is opened in {@link #open} and
 * closed in {@link #close}; when opening fails it is closed at once, the close's exception
 * suppressed into the first.
 */
public final class FerryLookupJoinOperator extends AbstractStreamOperator<RowData>
        implements OneInputStreamOperator<RowData, RowData>, BoundedOneInput {
    private static final long serialVersionUID = 1L;

    /** The kind's name, the key of Ferry's per-kind counters. */
    public static final String KIND = "lookup_join";

    /** Counter: batches run. */
    public static final String METRIC_BATCHES = "ferryLookupBatches";
    /** Counter: probe rows received. */
    public static final String METRIC_ROWS_IN = "ferryLookupRowsIn";
    /** Counter: joined (and padded) rows emitted. */
    public static final String METRIC_ROWS_OUT = "ferryLookupRowsOut";

    private final LookupJoinBatch lookup;
    private final Batching batching;
    private final String name;

    private transient TypeSerializer<RowData> inputSerializer;
    private transient boolean copyInput;
    private transient List<StreamRecord<RowData>> pending;
    private transient boolean timerPending;
    private transient long currentWatermark;
    private transient ProbeContext context;
    private transient ProbeOutput out;
    private transient Counter batches;
    private transient Counter rowsIn;
    /** Whether the function and the batch still need closing. */
    private transient boolean open;

    /**
     * @param lookup how a batch runs (Flink's runner inside)
     * @param batching {@code ferry.batch.size} and {@code ferry.batch.max-delay}; not bundles
     * @param name the plan node's description (the key of Ferry's per-node counters)
     */
    public FerryLookupJoinOperator(LookupJoinBatch lookup, Batching batching, String name) {
        this.lookup = Objects.requireNonNull(lookup, "lookup");
        this.batching = Objects.requireNonNull(batching, "batching");
        if (batching.bundled()) {
            throw new IllegalArgumentException("a lookup join batches by ferry.batch.size, not by bundles");
        }
        this.name = Objects.requireNonNull(name, "name");
    }

    public LookupJoinBatch lookup() {
        return lookup;
    }

    public Batching batching() {
        return batching;
    }

    @Override
    public void open() throws Exception {
        super.open();
        AbstractNativeOperator.countOpened(KIND, name);
        inputSerializer = getOperatorConfig().getTypeSerializerIn(0, getUserCodeClassloader());
        copyInput = getExecutionConfig().isObjectReuseEnabled();
        pending = new ArrayList<>();
        currentWatermark = Long.MIN_VALUE;
        batches = getMetricGroup().counter(METRIC_BATCHES);
        rowsIn = getMetricGroup().counter(METRIC_ROWS_IN);
        out = new ProbeOutput(output, getMetricGroup().counter(METRIC_ROWS_OUT));
        context = new ProbeContext(getProcessingTimeService(), () -> currentWatermark, output);
        open = true;
        Function function = lookup.function();
        try {
            if (function != null) {
                FunctionUtils.setFunctionRuntimeContext(function, getRuntimeContext());
                FunctionUtils.openFunction(function, DefaultOpenContext.INSTANCE);
            }
            lookup.open(getRuntimeContext());
        } catch (Throwable t) {
            try {
                closeLookup();
            } catch (Throwable c) {
                t.addSuppressed(c);
            }
            throw t;
        }
    }

    @Override
    public void processElement(StreamRecord<RowData> element) throws Exception {
        RowData row = copyInput ? inputSerializer.copy(element.getValue()) : element.getValue();
        pending.add(element.copy(row));
        rowsIn.inc();
        if (pending.size() >= batching.size() || batching.maxDelayMs() == 0) {
            runBatch();
        } else if (!timerPending) {
            timerPending = true;
            long at = getProcessingTimeService().getCurrentProcessingTime() + batching.maxDelayMs();
            getProcessingTimeService().registerTimer(at, t -> {
                timerPending = false;
                runBatch();
            });
        }
    }

    /** Joins every pending probe row (task thread); returns with nothing in flight. */
    private void runBatch() throws Exception {
        if (pending == null || pending.isEmpty()) {
            return;
        }
        List<StreamRecord<RowData>> batch = pending;
        pending = new ArrayList<>(Math.min(batch.size(), batching.size()));
        batches.inc();
        lookup.run(batch, context, out);
    }

    @Override
    public void processWatermark(Watermark mark) throws Exception {
        runBatch();
        currentWatermark = mark.getTimestamp();
        super.processWatermark(mark);
    }

    @Override
    public void prepareSnapshotPreBarrier(long checkpointId) throws Exception {
        runBatch();
        super.prepareSnapshotPreBarrier(checkpointId);
    }

    @Override
    public void endInput() throws Exception {
        runBatch();
    }

    @Override
    public void finish() throws Exception {
        runBatch();
        super.finish();
    }

    @Override
    public void close() throws Exception {
        Closing.closeAll(this::closeLookup, super::close);
    }

    /** Closes the batch, then Flink's function, once; keeps the first exception. */
    private void closeLookup() throws Exception {
        if (!open) {
            return;
        }
        open = false;
        Function function = lookup.function();
        Closing.closeAll(lookup::close, function == null ? null : () -> FunctionUtils.closeFunction(function));
    }

    @Override
    public String toString() {
        return "FerryLookupJoinOperator[" + lookup.mode() + ", " + batching + "]";
    }
}
