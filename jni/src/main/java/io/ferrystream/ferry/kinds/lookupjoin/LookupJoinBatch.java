package io.ferrystream.ferry.kinds.lookupjoin;

import org.apache.flink.api.common.functions.Function;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.table.data.RowData;

import javax.annotation.Nullable;

import java.io.Serializable;
import java.util.List;

/**
 * How {@code FerryLookupJoinOperator} joins one batch of probe rows: Flink's sync runner row by
 * row ({@link SyncLookupBatch}), Flink's async function with overlapping requests ({@link
 * AsyncLookupBatch}), or one batched fetch for the whole batch ({@link FetchingLookupBatch}).
 * Every batch runs to its end inside {@link #run}: nothing is in flight after it returns.
 */
public interface LookupJoinBatch extends Serializable {
    /**
     * Flink's function (its runner), which the operator gives its runtime context, opens before
     * {@link #open} and closes after {@link #close}; null when there is none to open.
     */
    @Nullable
    Function function();

    /** After {@link #function()} is open; {@code context} is the operator's. */
    default void open(RuntimeContext context) throws Exception {}

    /**
     * Joins {@code probes} (in arrival order, owned by the batch) and emits each probe row's
     * output, probe row after probe row, through {@code out}; {@code context} is the probe context
     * of a sync runner's {@code processElement}.
     */
    void run(List<StreamRecord<RowData>> probes, ProbeContext context, ProbeOutput out) throws Exception;

    /** Before {@link #function()} is closed; also after a failed {@link #open}. */
    default void close() throws Exception {}

    /** How batches run, for the operator's name and logs, e.g. {@code "sync"}. */
    String mode();
}
