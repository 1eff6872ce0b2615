package io.ferrystream.ferry.nativelib;

import io.ferrystream.ferry.arrow.ArrowRowDataReader;
import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.arrow.RowDataArrowWriter;
import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.RowKind;

/** The docs/abi.md example operator: GROUP BY bidder, COUNT(*), SUM(price) with retraction. */
final class Bids {
    private Bids() {}

    static final RowType INPUT = RowType.of(new LogicalType[] {new BigIntType(), new IntType()},
            new String[] {"bidder", "price"});

    /** The spec JSON; extra, when not null, is appended to the header (e.g. "test":{...}). */
    static String spec(String extra) {
        return "{\"kind\":\"group_aggregate\",\"name\":\"GroupAggregate(groupBy=[bidder])\","
                + "\"inputs\":[{\"fields\":[{\"name\":\"bidder\",\"type\":\"BIGINT\"},"
                + "{\"name\":\"price\",\"type\":\"INT\"}],\"keys\":[0]}],\"max_parallelism\":128,"
                + "\"params\":{\"aggs\":[{\"func\":\"COUNT\",\"args\":[],\"name\":\"cnt\"},"
                + "{\"func\":\"SUM\",\"args\":[1],\"retract\":true,\"name\":\"total\"}],"
                + "\"need_retraction\":true,\"generate_update_before\":true}"
                + (extra == null ? "" : "," + extra) + "}";
    }

    static String spec() {
        return spec(null);
    }

    static NativeOperator open(BufferAllocator allocator) {
        return NativeOperator.open(spec(), ArrowTypes.schemaOf(INPUT), allocator);
    }

    static RowData row(RowKind kind, Long bidder, Integer price) {
        return GenericRowData.ofKind(kind, bidder, price);
    }

    static void write(RowDataArrowWriter w, long firstBidder, int n, int bidders) {
        for (int i = 0; i < n; i++) {
            w.write(row(RowKind.INSERT, firstBidder + (i % bidders), i));
        }
        w.finish();
    }

    /** "+I[1, 1, 10]" strings of an output batch (bidder, cnt, total). */
    static List<String> rows(ArrowRowDataReader r) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < r.rowCount(); i++) {
            RowData row = r.read(i);
            out.add(row.getRowKind().shortString() + "[" + (row.isNullAt(0) ? "null" : row.getLong(0)) + ", "
                    + row.getLong(1) + ", " + (row.isNullAt(2) ? "null" : row.getInt(2)) + "]");
        }
        return out;
    }
}
