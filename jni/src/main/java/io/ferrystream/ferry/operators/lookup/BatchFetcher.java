package io.ferrystream.ferry.operators.lookup;

import java.util.List;
import org.apache.flink.table.data.RowData;

/**
 * Looks a batch of key rows up at once. {@code keyRows} holds one key tuple per probe row to look
 * up, in the dimension table's key order, never containing NULL; the result holds, for each key
 * row in order, the dimension rows in the order the source returned them, as RowData of the
 * projected fields in Flink's internal data.
 */
public interface BatchFetcher {
    List<List<RowData>> fetch(List<RowData> keyRows) throws Exception;
}
