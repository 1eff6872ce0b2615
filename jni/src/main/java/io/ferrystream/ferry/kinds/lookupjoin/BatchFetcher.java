package io.ferrystream.ferry.kinds.lookupjoin;

import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.table.data.RowData;

import java.io.Serializable;
import java.util.List;

/**
 * Fetches the dimension rows of a whole batch of lookup keys at once, for {@link
 * FetchingLookupBatch}: the place where a connector's per-row lookups become one batched request
 * (e.g. one SQL statement per batch).
 *
 * <p>Contract: for every key row (Flink's lookup key row: the key values in ascending dim-column
 * order, internal data, never NULL, as the connector's {@code LookupFunction.lookup} gets it) the
 * rows the connector's {@code lookup} would return for it, in its order; {@code null} or an empty
 * list for none. The returned rows are the raw rows of the (projected) source, before the calc on
 * the temporal table. Key rows may repeat; each is answered.
 */
public interface BatchFetcher extends Serializable {
    /** Opened by the operator (task thread) before the first fetch. */
    default void open(RuntimeContext context) throws Exception {}

    /**
     * @param keyRows the batch's key rows, in probe order
     * @return one list of rows per key row, in the same order, of the same size
     */
    List<List<RowData>> fetch(List<RowData> keyRows) throws Exception;

    /** Closed by the operator; also after a failed open. */
    default void close() throws Exception {}
}
