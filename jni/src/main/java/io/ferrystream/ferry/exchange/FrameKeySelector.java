package io.ferrystream.ferry.exchange;

import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.table.data.RowData;

/**
 * The state key selector of an operator reading {@link FerryFrame}s: it makes Flink give the
 * operator a keyed state backend over its key groups (with the key type of Flink's own operator,
 * so savepoints keep Flink's shape), but a frame has no one key and Ferry's operators never ask
 * for one: the native side computes every row's key and checks its key group.
 */
public final class FrameKeySelector implements KeySelector<FerryFrame, RowData> {
    private static final long serialVersionUID = 1L;

    @Override
    public RowData getKey(FerryFrame frame) {
        throw new UnsupportedOperationException("a Ferry frame has no single key; " + frame);
    }
}
