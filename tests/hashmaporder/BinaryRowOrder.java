import java.util.*;
import org.apache.flink.table.data.*;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.writer.BinaryRowWriter;

/**
 * A golden vector of java.util.HashMap<RowData, ?>'s iteration order over BinaryRowData keys
 * (rows of BIGINT, BIGINT NOT NULL, STRING, with NULLs and strings inline and out of line), as
 * the regular join's no_unique_key state keeps them: random puts and remove(key). One JSON object:
 * the operations ("p"/"d" and the row's values) and the final iteration order (the rows' second
 * field). Ferry's regularjoin/order_test.go replays it.
 *
 * Regenerate from the repository root with JDK 17 and Flink 2.3's jars (M = ~/.m2/repository):
 *   java -cp $M/org/apache/flink/flink-table-runtime/2.3.0/flink-table-runtime-2.3.0.jar:\
 *     $M/org/apache/flink/flink-table-common/2.3.0/flink-table-common-2.3.0.jar:\
 *     $M/org/apache/flink/flink-core/2.3.0/flink-core-2.3.0.jar:<flink-core-api, flink-annotations, slf4j-api jars> \
 *     tests/hashmaporder/BinaryRowOrder.java > regularjoin/testdata/binaryrow-hashmap-order.json
 */
public class BinaryRowOrder {
    static BinaryRowData row(Long k, long id, String v) {
        BinaryRowData r = new BinaryRowData(3);
        BinaryRowWriter w = new BinaryRowWriter(r);
        if (k == null) w.setNullAt(0); else w.writeLong(0, k);
        w.writeLong(1, id);
        if (v == null) w.setNullAt(2); else w.writeString(2, StringData.fromString(v));
        w.complete();
        return r;
    }
    public static void main(String[] a) {
        Random r = new Random(7);
        Map<RowData, Integer> m = new HashMap<>();
        List<String> ops = new ArrayList<>();
        List<BinaryRowData> present = new ArrayList<>();
        for (int i = 0; i < 300; i++) {
            if (present.isEmpty() || r.nextInt(100) < 75) {
                Long k = r.nextInt(10) == 0 ? null : (long) r.nextInt(3);
                long id = r.nextInt(500) - 250;
                String v = r.nextInt(5) == 0 ? null : "v" + "xxxxxxxxxxxx".substring(0, r.nextInt(12)) + r.nextInt(100);
                BinaryRowData row = row(k, id, v);
                if (m.put(row, i) == null) present.add(row);
                ops.add("[\"p\"," + (k == null ? "null" : k) + "," + id + "," + (v == null ? "null" : "\"" + v + "\"") + "]");
            } else {
                BinaryRowData row = present.remove(r.nextInt(present.size()));
                m.remove(row);
                ops.add("[\"d\"," + (row.isNullAt(0) ? "null" : row.getLong(0)) + "," + row.getLong(1) + "," + (row.isNullAt(2) ? "null" : "\"" + row.getString(2) + "\"") + "]");
            }
        }
        StringBuilder o = new StringBuilder();
        for (RowData k : m.keySet()) {
            if (o.length() > 0) o.append(',');
            o.append(k.getLong(1));
        }
        System.out.println("{\"ops\":[" + String.join(",", ops) + "],\"order\":[" + o + "]}");
    }
}
