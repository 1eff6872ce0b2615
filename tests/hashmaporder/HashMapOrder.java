import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Golden vectors of java.util.HashMap<Long, ?>'s iteration order, which Ferry reproduces
 * (internal/javamap, for the interval and regular joins): random puts and removals, with keys that collide
 * in bin 0 (so bins become red-black trees, split and shrink) mixed with spread ones, maps created
 * with the default capacity and with the capacities Flink restores maps with. One JSON object per
 * line: the initial capacity (0: new HashMap<>()), the operations ("p" key: put; "r" m r: remove,
 * through an iterator, every key k with floorMod(k, m) == r; "d" key: remove(key), in scenarios
 * 42 and later, which grow tree bins in bin 0 and take single keys out of them) and the
 * iteration order after every operation.
 *
 * Regenerate from the repository root with JDK 17:
 *   java tests/hashmaporder/HashMapOrder.java > internal/javamap/testdata/hashmap-order.jsonl
 */
public class HashMapOrder {
    public static void main(String[] args) {
        StringBuilder out = new StringBuilder();
        int[] capacities = {0, 1, 2, 4, 16, 64, 128};
        for (int scenario = 0; scenario < 42; scenario++) {
            Random r = new Random(scenario);
            int capacity = capacities[scenario % capacities.length];
            Map<Long, Integer> map = capacity == 0 ? new HashMap<>() : new HashMap<>(capacity, 0.75f);
            List<String> ops = new ArrayList<>();
            List<String> orders = new ArrayList<>();
            int colliding = 0;
            int n = 150 + r.nextInt(250);
            for (int i = 0; i < n; i++) {
                if (r.nextInt(10) < 7) {
                    long key;
                    switch (r.nextInt(4)) {
                        case 0: case 1: // spread(hashCode) has 0 in its low 16 bits: bin 0 at any capacity up to 65536
                            long j = colliding++ % 2 == 0 ? colliding : 5000 + r.nextInt(5000);
                            key = (j << 16) | j;
                            break;
                        case 2:
                            key = r.nextInt(200) - 100;
                            break;
                        default:
                            key = r.nextLong() >> r.nextInt(64);
                    }
                    map.put(key, i);
                    ops.add("[\"p\"," + key + "]");
                } else {
                    int m = 2 + r.nextInt(5);
                    int rem = r.nextInt(m);
                    for (Iterator<Map.Entry<Long, Integer>> it = map.entrySet().iterator(); it.hasNext(); ) {
                        if (Math.floorMod(it.next().getKey(), m) == rem) {
                            it.remove();
                        }
                    }
                    ops.add("[\"r\"," + m + "," + rem + "]");
                }
                StringBuilder o = new StringBuilder("[");
                for (Long k : map.keySet()) {
                    if (o.length() > 1) {
                        o.append(',');
                    }
                    o.append(k);
                }
                orders.add(o.append(']').toString());
            }
            out.append("{\"initial\":").append(capacity)
                    .append(",\"ops\":[").append(String.join(",", ops))
                    .append("],\"orders\":[").append(String.join(",", orders)).append("]}\n");
        }
        for (int scenario = 42; scenario < 63; scenario++) {
            Random r = new Random(scenario);
            int capacity = capacities[scenario % capacities.length];
            Map<Long, Integer> map = capacity == 0 ? new HashMap<>() : new HashMap<>(capacity, 0.75f);
            List<String> ops = new ArrayList<>();
            List<String> orders = new ArrayList<>();
            List<Long> present = new ArrayList<>();
            for (int i = 0; i < 150; i++) {
                if (present.isEmpty() || r.nextInt(100) < (present.size() < 24 ? 80 : 40)) {
                    long key;
                    if (r.nextInt(10) < 6) { // bin 0 at any capacity up to 65536
                        long j = 1 + r.nextInt(3000);
                        key = (j << 16) | j;
                    } else {
                        key = r.nextLong() >> r.nextInt(64);
                    }
                    if (map.put(key, i) == null) {
                        present.add(key);
                    }
                    ops.add("[\"p\"," + key + "]");
                } else {
                    long key = present.remove(r.nextInt(present.size()));
                    map.remove(key);
                    ops.add("[\"d\"," + key + "]");
                }
                StringBuilder o = new StringBuilder("[");
                for (Long k : map.keySet()) {
                    if (o.length() > 1) {
                        o.append(',');
                    }
                    o.append(k);
                }
                orders.add(o.append(']').toString());
            }
            out.append("{\"initial\":").append(capacity)
                    .append(",\"ops\":[").append(String.join(",", ops))
                    .append("],\"orders\":[").append(String.join(",", orders)).append("]}\n");
        }
        System.out.print(out);
    }
}
