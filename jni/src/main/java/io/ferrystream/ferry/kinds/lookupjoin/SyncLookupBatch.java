package io.ferrystream.ferry.kinds.lookupjoin;

import org.apache.flink.api.common.functions.Function;
import org.apache.flink.streaming.api.functions.ProcessFunction;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.table.data.RowData;

import java.util.List;
import java.util.Objects;

/**
 * A batch through Flink's own sync runner ({@code LookupJoinRunner} or {@code
 * LookupJoinWithCalcRunner}, with the connector's function, cache and retries inside its
 * generated fetcher): {@code processElement} per probe row in arrival order, exactly as Flink's
 * {@code ProcessOperator} calls it.
 */
public final class SyncLookupBatch implements LookupJoinBatch {
    private static final long serialVersionUID = 1L;

    private final ProcessFunction<RowData, RowData> runner;

    public SyncLookupBatch(ProcessFunction<RowData, RowData> runner) {
        this.runner = Objects.requireNonNull(runner, "runner");
    }

    /** Flink's runner. */
    public ProcessFunction<RowData, RowData> runner() {
        return runner;
    }

    @Override
    public Function function() {
        return runner;
    }

    @Override
    public void run(List<StreamRecord<RowData>> probes, ProbeContext context, ProbeOutput out) throws Exception {
        for (StreamRecord<RowData> probe : probes) {
            context.setElement(probe);
            out.setProbe(probe);
            runner.processElement(probe.getValue(), context, out);
        }
    }

    @Override
    public String mode() {
        return "sync";
    }
}
