package io.ferrystream.ferry.kinds.deduplicate;

import io.ferrystream.ferry.operators.Batching;
import io.ferrystream.ferry.operators.OneInputNativeOperator;

import org.apache.flink.metrics.Counter;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.StateInitializationContext;
import org.apache.flink.runtime.state.TestableKeyedStateBackend;
import org.apache.flink.runtime.state.heap.HeapKeyedStateBackend;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.operators.over.AbstractRowTimeUnboundedPrecedingOver;
import org.apache.flink.table.types.logical.utils.LogicalTypeChecks;

/**
 * Flink's deduplication ({@code StreamExecDeduplicate}'s functions) running in Go: the generic
 * one-input operator over the whole input row, with what only this kind adds:
 *
 * <ul>
 *   <li>Mini-batch: a batch is exactly one bundle of Flink's {@code KeyedMapBundleOperator}
 *       ({@link Batching#bundles}), whose results depend on where a bundle ends.
 *   <li>The stored row's kind: Flink's heap state backend keeps the row object, whose kind
 *       Flink's function sets after storing it; RocksDB and ForSt store its bytes as they were.
 *       The library's operator is opened for the backend this task runs on ({@link
 *       #specForTask}), whatever the planner assumed from the configuration.
 *   <li>Late rows of the insert-only first-row deduplication ({@code
 *       RowTimeDeduplicateKeepFirstRowFunction}): their row time is below the current watermark
 *       ({@code Long.MIN_VALUE} until the first one, also after a restore, as Flink's timer
 *       service's). Go drops them; this operator counts them on arrival in Flink's metric
 *       {@value AbstractRowTimeUnboundedPrecedingOver#LATE_ELEMENTS_DROPPED_METRIC_NAME}.
 *   <li>Flink's state across a savepoint ({@link FlinkDeduplicateState}): the insert-only first
 *       row's timers are read and written through this operator's timer service {@value
 *       FlinkDeduplicateState#TIMERS}, as Flink's {@code KeyedProcessOperator} keeps them.
 * </ul>
 */
public class FerryDeduplicateOperator extends OneInputNativeOperator<DeduplicateSpec> {
    private static final long serialVersionUID = 1L;

    private final int rowtimeIndex;
    private final int rowtimePrecision;

    private transient long watermark;
    /** Flink's late-row counter; null unless the spec is the insert-only first row. */
    private transient Counter lateRecordsDropped;
    private transient boolean storedRowKeepsKind;

    /**
     * @param batching {@link Batching#bundles} for a mini-batch spec, {@link Batching#of}
     *     otherwise
     */
    public FerryDeduplicateOperator(DeduplicateSpec spec, Batching batching) {
        super(spec, spec.type(), batching);
        if (spec.miniBatch() != batching.bundled()) {
            throw new IllegalArgumentException(spec.miniBatch()
                    ? "a mini-batch deduplication needs Flink's bundles as batches"
                    : "bundles are for a mini-batch deduplication only");
        }
        rowtimeIndex = spec.rowtimeIndex();
        rowtimePrecision = spec.rowtime() ? LogicalTypeChecks.getPrecision(spec.type().getTypeAt(rowtimeIndex)) : 3;
    }

    /** Flink's deduplicate state this operator imports and writes into savepoints, or null. */
    private FlinkDeduplicateState flinkDeduplicateState;

    /**
     * Declares Flink's deduplicate state ({@link FlinkDeduplicateState}), which reads and writes
     * Flink's timers (the insert-only first row's) through this operator's timer service. Returns
     * this operator.
     */
    public FerryDeduplicateOperator importingFlinkState(FlinkDeduplicateState state) {
        super.importingFlinkState(state);
        this.flinkDeduplicateState = state;
        return this;
    }

    @Override
    public void initializeState(StateInitializationContext context) throws Exception {
        if (flinkDeduplicateState != null) {
            flinkDeduplicateState.attach(this);
        }
        super.initializeState(context);
    }

    @Override
    protected DeduplicateSpec specForTask() {
        storedRowKeepsKind = keepsRowObjects(getKeyedStateBackend());
        return spec().withStoredRowKeepsKind(storedRowKeepsKind);
    }

    /** Whether {@code backend} (unwrapped from a changelog backend) keeps state as objects: the heap backend. */
    static boolean keepsRowObjects(KeyedStateBackend<?> backend) {
        KeyedStateBackend<?> b = backend;
        if (b instanceof TestableKeyedStateBackend) {
            b = ((TestableKeyedStateBackend<?>) b).getDelegatedKeyedStateBackend(true);
        }
        return b instanceof HeapKeyedStateBackend;
    }

    /** The {@code stored_row_keeps_kind} the library's operator was opened with. */
    public boolean storedRowKeepsKind() {
        return storedRowKeepsKind;
    }

    @Override
    public void open() throws Exception {
        super.open();
        watermark = Long.MIN_VALUE;
        if (spec().outputInsertOnly()) {
            lateRecordsDropped =
                    getMetricGroup().counter(AbstractRowTimeUnboundedPrecedingOver.LATE_ELEMENTS_DROPPED_METRIC_NAME);
        }
    }

    /** Counts a late row (Flink's comparison); every row goes to Go, which drops the late ones. */
    @Override
    protected boolean admit(RowData row) {
        if (lateRecordsDropped != null && rowtime(row) < watermark) {
            lateRecordsDropped.inc();
        }
        return true;
    }

    /** The row time as Flink's {@code RowData.getLong} reads it from a binary row: a NULL reads 0. */
    private long rowtime(RowData row) {
        return row.isNullAt(rowtimeIndex) ? 0 : row.getTimestamp(rowtimeIndex, rowtimePrecision).getMillisecond();
    }

    /** The late rows counted since open; 0 when the spec drops none. */
    public long lateRecordsDropped() {
        return lateRecordsDropped == null ? 0 : lateRecordsDropped.getCount();
    }

    @Override
    public void processWatermark(Watermark mark) throws Exception {
        super.processWatermark(mark);
        watermark = mark.getTimestamp();
    }
}
