import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

/**
 * Golden vectors of the iteration order of a new java.util.HashMap<Integer, ?> filled by
 * computeIfAbsent, as MiniBatchIncrementalGroupAggFunction fills its map of final keys; Ferry's
 * incremental aggregate reproduces it (internal/javahash, ComputeIfAbsentOrder). computeIfAbsent
 * differs from put: it links a new key at the head of its bin, and resizes before an insertion
 * once the size exceeds the threshold. An Integer's hashCode is its value, so the keys are the
 * hashCodes. computeIfAbsent resizes on any call once the size exceeds the threshold, also for a
 * key already present, so the vectors repeat keys too. One JSON object per line: the distinct
 * hashes in order of first call, the calls (indices into them) and the iteration order (indices). Small maps get keys that share bin 0, large ones random
 * keys: no bin reaches a tree (8 keys in a table of 64 or more), whose order the emulation does
 * not model.
 *
 * Regenerate from the repository root with JDK 17:
 *   java tests/hashmaporder/ComputeIfAbsentOrder.java > internal/javahash/testdata/compute-if-absent-order.jsonl
 */
public class ComputeIfAbsentOrder {
    public static void main(String[] args) {
        StringBuilder out = new StringBuilder();
        for (int scenario = 0; scenario < 200; scenario++) {
            Random r = new Random(scenario);
            boolean large = scenario >= 20 && scenario % 3 == 0;
            int n = scenario < 20 ? scenario : 1 + r.nextInt(large ? 400 : 40);
            List<Integer> hashes = new ArrayList<>();
            Map<Integer, Integer> index = new HashMap<>();
            int colliding = 0;
            while (hashes.size() < n) {
                int h;
                if (!large && r.nextInt(4) == 0 && colliding < 5) {
                    int j = 1 + r.nextInt(1 << 14);
                    h = (j << 16) | j; // spread (h ^ h >>> 16) has 0 in its low 16 bits: bin 0
                    colliding++;
                } else {
                    h = r.nextInt();
                }
                if (!index.containsKey(h)) {
                    index.put(h, hashes.size());
                    hashes.add(h);
                }
            }
            List<Integer> calls = new ArrayList<>();
            for (int i = 0; i < hashes.size(); i++) {
                calls.add(i);
                while (r.nextInt(3) == 0) { // calls for keys already present
                    calls.add(r.nextInt(i + 1));
                }
            }
            Map<Integer, Integer> map = new HashMap<>();
            for (int c : calls) {
                map.computeIfAbsent(hashes.get(c), k -> 0);
            }
            List<Integer> order = new ArrayList<>();
            for (int h : map.keySet()) {
                order.add(index.get(h));
            }
            out.append("{\"hashes\":").append(hashes).append(",\"calls\":").append(calls).append(",\"order\":").append(order).append("}\n");
        }
        System.out.print(out);
    }
}
