package io.ferrystream.ferry.exchange;

import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.keyselector.RowDataKeySelector;

/**
 * The state key selector of an operator behind Ferry's columnar exchange: it makes Flink give the
 * operator a keyed state backend over its key groups, with the key type of Flink's own operator
 * (so savepoints keep Flink's shape). A frame has no one key, and Ferry's operators never ask for
 * one: the native side computes every row's key and checks its key group. Handed a row instead
 * (a test driving the operator on rows, in Flink's harness), it is Flink's key selector.
 *
 * @param <T> {@link FerryFrame} on the exchange; typed loosely so a row reaches {@link #getKey}
 */
public final class FrameKeySelector<T> implements KeySelector<T, RowData> {
    private static final long serialVersionUID = 1L;

    private final RowDataKeySelector rows;

    /** @param rows Flink's key selector of the rows the frames carry */
    public FrameKeySelector(RowDataKeySelector rows) {
        this.rows = rows;
    }

    @Override
    public RowData getKey(T value) throws Exception {
        if (value instanceof FerryFrame) {
            throw new UnsupportedOperationException("a Ferry frame has no single key; " + value);
        }
        return rows.getKey((RowData) value);
    }
}
