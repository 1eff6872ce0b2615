package io.ferrystream.ferry.kinds.lookupjoin;

import org.apache.flink.metrics.Counter;
import org.apache.flink.streaming.api.operators.Output;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.table.data.RowData;
import org.apache.flink.util.Collector;

/**
 * The lookup join's output collector: emits joined rows with the current probe row's StreamRecord
 * timestamp (or none), as Flink's {@code TimestampedCollector} (sync) and {@code AsyncWaitOperator}
 * (async) do, and counts them. One object, reused for every row; not thread-safe (task thread).
 */
public final class ProbeOutput implements Collector<RowData> {
    private final Output<StreamRecord<RowData>> output;
    private final Counter rowsOut;
    private final StreamRecord<RowData> reuse = new StreamRecord<>(null);

    public ProbeOutput(Output<StreamRecord<RowData>> output, Counter rowsOut) {
        this.output = output;
        this.rowsOut = rowsOut;
    }

    /** Rows collected from now on belong to {@code probe}: they get its timestamp. */
    public void setProbe(StreamRecord<RowData> probe) {
        if (probe.hasTimestamp()) {
            reuse.setTimestamp(probe.getTimestamp());
        } else {
            reuse.eraseTimestamp();
        }
    }

    @Override
    public void collect(RowData row) {
        rowsOut.inc();
        output.collect(reuse.replace(row));
    }

    @Override
    public void close() {
        output.close();
    }
}
