package io.ferrystream.ferry.operators;

import org.apache.flink.table.types.logical.RowType;

/**
 * Flink's window join ({@code WindowJoinOperator}) running in Go. The join stores every row
 * until the watermark passes its window's end and emits nothing before, so its rows reach Go in
 * batches ({@link Batching#of}) cut at the latest at every watermark: all rows that arrived
 * before a watermark are stored before it fires their windows, as in Flink.
 */
public class FerryWindowJoinOperator extends TwoInputNativeOperator<WindowJoinSpec> {
    private static final long serialVersionUID = 1L;

    /** @param outputType the join's output row type: the left row's fields, then the right row's (SEMI, ANTI: the left row's) */
    public FerryWindowJoinOperator(WindowJoinSpec spec, RowType outputType, Batching batching) {
        super(spec, outputType, batching);
    }
}
