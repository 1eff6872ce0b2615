package io.ferry.timervectors;

import org.apache.flink.api.common.typeutils.base.LongSerializer;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.state.KeyExtractorFunction;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.runtime.state.RegisteredPriorityQueueStateBackendMetaInfo;
import org.apache.flink.runtime.state.StateSnapshot;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueSet;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueSetFactory;
import org.apache.flink.runtime.state.heap.HeapPriorityQueueSnapshotRestoreWrapper;
import org.apache.flink.streaming.api.operators.TimerHeapInternalTimer;
import org.apache.flink.streaming.api.operators.TimerSerializer;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.writer.BinaryRowWriter;
import org.apache.flink.table.runtime.typeutils.BinaryRowDataSerializer;
import org.apache.flink.util.CloseableIterator;

import java.io.BufferedWriter;
import java.io.IOException;
import java.io.OutputStreamWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.zip.GZIPOutputStream;

/**
 * Golden vectors for Ferry's timer service, computed by Apache Flink 2.3.0's own heap timer queues.
 *
 * <p>A vector drives the two queues of an {@code InternalTimerServiceImpl} on the heap state
 * backend (event time and processing time): each a {@link HeapPriorityQueueSet} of {@link
 * TimerHeapInternalTimer}s made by {@link HeapPriorityQueueSetFactory}, the timers keyed by the
 * {@link BinaryRowData} of one BIGINT field (a SQL operator's key) with a Long namespace. Random
 * operations, over few keys and few distinct times so that many timers share a time:
 *
 * <ul>
 *   <li>{@code ["r",d,k,t,ns,added]}: register (the set's {@code add}); added is 1 when the queue
 *       grew;
 *   <li>{@code ["x",d,k,t,ns,existed]}: delete (the set's {@code remove});
 *   <li>{@code ["f",d,upTo,[[k,t,ns],...]]}: fire, as {@code advanceWatermark} and {@code
 *       onProcessingTime} do: peek, poll while the head's time is at most upTo; the timers in the
 *       order polled;
 *   <li>{@code ["s",heap0,heap1,restored0,restored1]}: snapshot and restore: both queues' heap
 *       arrays (each timer {@code [k,t,ns]} in array order, position = index + 1), then each queue
 *       written through {@link HeapPriorityQueueSnapshotRestoreWrapper#stateSnapshot()} (its
 *       {@code HeapPriorityQueueStateSnapshot} partitions the array by key group) key group by key
 *       group, and read back into a new queue key group by key group ascending, as {@code
 *       HeapRestoreOperation} does; then the new queues' heap arrays;
 *   <li>{@code ["i",heap0,heap1]}: the heap arrays, for an import of Flink's own timers in array
 *       order; Flink's queues go on unchanged.
 * </ul>
 *
 * Every vector ends with a fire of both domains up to {@code Long.MAX_VALUE}. {@code keys} lists
 * per key index the key's value, the key's bytes (hex) and its key group.
 *
 * <p>Usage: {@code Generate <output.jsonl.gz>}: gzip-compressed JSON lines. Output is deterministic
 * (fixed seeds).
 */
public final class Generate {

    private static final String STATE = "user-timers";
    private static final int VECTORS = 240;

    private static final TimerSerializer<BinaryRowData, Long> SERIALIZER =
            new TimerSerializer<>(new BinaryRowDataSerializer(1), LongSerializer.INSTANCE);

    private Generate() {}

    public static void main(String[] args) throws IOException {
        if (args.length != 1) {
            System.err.println("usage: Generate <output.jsonl.gz>");
            System.exit(2);
        }
        Path out = Paths.get(args[0]);
        int ops = 0;
        try (BufferedWriter w =
                new BufferedWriter(
                        new OutputStreamWriter(
                                new GZIPOutputStream(Files.newOutputStream(out)),
                                StandardCharsets.UTF_8))) {
            for (int v = 0; v < VECTORS; v++) {
                Vector vec = new Vector(v);
                w.write(vec.run());
                w.write('\n');
                ops += vec.ops;
            }
        }
        System.out.println("wrote " + VECTORS + " vectors, " + ops + " operations, to " + out);
    }

    private static BinaryRowData key(long v) {
        BinaryRowData row = new BinaryRowData(1);
        BinaryRowWriter w = new BinaryRowWriter(row);
        w.writeLong(0, v);
        w.complete();
        return row;
    }

    /** One random sequence over one timer service. */
    private static final class Vector {
        final int seed;
        final Random rnd;
        final int maxParallelism;
        final KeyGroupRange range;
        final long[] values;
        final Map<BinaryRowData, Integer> index = new HashMap<>();
        final List<HeapPriorityQueueSet<TimerHeapInternalTimer<BinaryRowData, Long>>> queues =
                new ArrayList<>();
        final long[] clock = new long[2];
        final boolean deep;
        final StringBuilder json = new StringBuilder();
        int ops;

        Vector(int seed) {
            this.seed = seed;
            this.rnd = new Random(1000 + seed);
            this.deep = seed % 24 == 23;
            this.maxParallelism = new int[] {1, 4, 128, 128}[rnd.nextInt(4)];
            this.range = KeyGroupRange.of(0, maxParallelism - 1);
            this.values = new long[deep ? 60 : new int[] {1, 2, 5, 20, 60}[rnd.nextInt(5)]];
            for (int k = 0; k < values.length; k++) {
                long v;
                do {
                    v = rnd.nextInt(3) == 0 ? rnd.nextLong() : rnd.nextInt(1000) - 100;
                } while (index.containsKey(key(v)));
                values[k] = v;
                index.put(key(v), k);
            }
            for (int d = 0; d < 2; d++) {
                queues.add(newQueue());
                clock[d] = rnd.nextInt(3) == 0 ? -rnd.nextInt(50) : rnd.nextInt(1000);
            }
        }

        HeapPriorityQueueSet<TimerHeapInternalTimer<BinaryRowData, Long>> newQueue() {
            return new HeapPriorityQueueSetFactory(range, maxParallelism, 128)
                    .create(STATE, SERIALIZER);
        }

        String run() throws IOException {
            int n = new int[] {40, 300, 1200}[rnd.nextInt(3)];
            int span = new int[] {0, 1, 3, 10}[rnd.nextInt(4)];
            int namespaces = 1 + rnd.nextInt(3);
            // per mille: deletions, fires (rare ones let the heaps grow), snapshots, imports; the
            // rest registers
            int pDelete = 140;
            int pFire = new int[] {260, 80, 25}[rnd.nextInt(3)];
            int pSnapshot = pFire > 100 ? 60 : 8;
            int pImport = pSnapshot / 2;
            if (deep) { // heaps of thousands of timers, ten levels deep
                n = 4000;
                span = 40;
                namespaces = 3;
                pDelete = 100;
                pFire = 12;
                pSnapshot = 1;
                pImport = 1;
            }
            json.append("{\"seed\":").append(seed);
            json.append(",\"max_parallelism\":").append(maxParallelism);
            json.append(",\"keys\":[");
            for (int k = 0; k < values.length; k++) {
                BinaryRowData row = key(values[k]);
                byte[] bytes = new byte[row.getSizeInBytes()];
                row.getSegments()[0].get(row.getOffset(), bytes, 0, bytes.length);
                json.append(k > 0 ? "," : "").append('[').append(values[k]).append(",\"");
                json.append(HexFormat.of().formatHex(bytes)).append("\",");
                json.append(KeyGroupRangeAssignment.assignToKeyGroup(row, maxParallelism));
                json.append(']');
            }
            json.append("],\"ops\":[");
            for (int i = 0; i < n; i++) {
                int d = rnd.nextInt(2);
                int r = rnd.nextInt(1000);
                if ((r -= pDelete) < 0) {
                    delete(d, span, namespaces);
                } else if ((r -= pFire) < 0) {
                    clock[d] += rnd.nextInt(deep ? 3 : span + 2);
                    fire(d, clock[d]);
                } else if ((r -= pSnapshot) < 0) {
                    snapshotRestore();
                } else if ((r -= pImport) < 0) {
                    heaps("i", null);
                } else {
                    long t = clock[d] + rnd.nextInt(span + 1) - (rnd.nextInt(10) == 0 ? 2 : 0);
                    register(d, rnd.nextInt(values.length), t, rnd.nextInt(namespaces));
                }
            }
            fire(0, Long.MAX_VALUE);
            fire(1, Long.MAX_VALUE);
            json.append("]}");
            return json.toString();
        }

        void op(String s) {
            json.append(ops++ > 0 ? "," : "").append(s);
        }

        String timer(TimerHeapInternalTimer<BinaryRowData, Long> t) {
            return "[" + index.get(t.getKey()) + "," + t.getTimestamp() + "," + t.getNamespace() + "]";
        }

        void register(int d, int k, long t, long ns) {
            HeapPriorityQueueSet<TimerHeapInternalTimer<BinaryRowData, Long>> q = queues.get(d);
            int before = q.size();
            q.add(new TimerHeapInternalTimer<>(t, key(values[k]), ns));
            op("[\"r\"," + d + "," + k + "," + t + "," + ns + "," + (q.size() - before) + "]");
        }

        /** Deletes a registered timer (mostly) or one that may not exist. */
        void delete(int d, int span, int namespaces) {
            HeapPriorityQueueSet<TimerHeapInternalTimer<BinaryRowData, Long>> q = queues.get(d);
            int k = rnd.nextInt(values.length);
            long t = clock[d] + rnd.nextInt(span + 1);
            long ns = rnd.nextInt(namespaces);
            if (q.size() > 0 && rnd.nextInt(10) < 7) {
                TimerHeapInternalTimer<BinaryRowData, Long> x = heap(q).get(rnd.nextInt(q.size()));
                k = index.get(x.getKey());
                t = x.getTimestamp();
                ns = x.getNamespace();
            }
            int before = q.size();
            q.remove(new TimerHeapInternalTimer<>(t, key(values[k]), ns));
            op("[\"x\"," + d + "," + k + "," + t + "," + ns + "," + (before - q.size()) + "]");
        }

        /** InternalTimerServiceImpl.advanceWatermark / onProcessingTime: poll while due. */
        void fire(int d, long upTo) {
            HeapPriorityQueueSet<TimerHeapInternalTimer<BinaryRowData, Long>> q = queues.get(d);
            StringBuilder fired = new StringBuilder();
            TimerHeapInternalTimer<BinaryRowData, Long> t;
            while ((t = q.peek()) != null && t.getTimestamp() <= upTo) {
                q.poll();
                fired.append(fired.length() > 0 ? "," : "").append(timer(t));
            }
            op("[\"f\"," + d + "," + upTo + ",[" + fired + "]]");
        }

        /** Both heap arrays, in array order, then those of after (none: null). */
        void heaps(
                String kind,
                List<HeapPriorityQueueSet<TimerHeapInternalTimer<BinaryRowData, Long>>> after) {
            StringBuilder s = new StringBuilder("[\"" + kind + "\"");
            List<HeapPriorityQueueSet<TimerHeapInternalTimer<BinaryRowData, Long>>> all =
                    new ArrayList<>(queues);
            if (after != null) {
                all.addAll(after);
            }
            for (HeapPriorityQueueSet<TimerHeapInternalTimer<BinaryRowData, Long>> q : all) {
                s.append(",[");
                boolean first = true;
                for (TimerHeapInternalTimer<BinaryRowData, Long> t : heap(q)) {
                    s.append(first ? "" : ",").append(timer(t));
                    first = false;
                }
                s.append(']');
            }
            op(s.append(']').toString());
        }

        void snapshotRestore() throws IOException {
            List<HeapPriorityQueueSet<TimerHeapInternalTimer<BinaryRowData, Long>>> restored =
                    new ArrayList<>();
            for (int d = 0; d < 2; d++) {
                restored.add(snapshotRestore(queues.get(d)));
            }
            heaps("s", restored);
            for (int d = 0; d < 2; d++) {
                queues.set(d, restored.get(d));
            }
        }

        /**
         * Writes q as the heap backend's snapshot writes a priority queue state, key group by key
         * group, and reads it into a new queue as HeapRestoreOperation reads it.
         */
        HeapPriorityQueueSet<TimerHeapInternalTimer<BinaryRowData, Long>> snapshotRestore(
                HeapPriorityQueueSet<TimerHeapInternalTimer<BinaryRowData, Long>> q)
                throws IOException {
            RegisteredPriorityQueueStateBackendMetaInfo<TimerHeapInternalTimer<BinaryRowData, Long>>
                    meta = new RegisteredPriorityQueueStateBackendMetaInfo<>(STATE, SERIALIZER);
            StateSnapshot.StateKeyGroupWriter writer =
                    new HeapPriorityQueueSnapshotRestoreWrapper<>(
                                    q, meta, KeyExtractorFunction.forKeyedObjects(), range, maxParallelism)
                            .stateSnapshot()
                            .getKeyGroupWriter();
            DataOutputSerializer out = new DataOutputSerializer(4096);
            for (int kg = range.getStartKeyGroup(); kg <= range.getEndKeyGroup(); kg++) {
                writer.writeStateInKeyGroup(out, kg);
            }
            HeapPriorityQueueSet<TimerHeapInternalTimer<BinaryRowData, Long>> fresh = newQueue();
            HeapPriorityQueueSnapshotRestoreWrapper<TimerHeapInternalTimer<BinaryRowData, Long>> restore =
                    new HeapPriorityQueueSnapshotRestoreWrapper<>(
                            fresh, meta, KeyExtractorFunction.forKeyedObjects(), range, maxParallelism);
            DataInputDeserializer in = new DataInputDeserializer(out.getSharedBuffer(), 0, out.length());
            for (int kg = range.getStartKeyGroup(); kg <= range.getEndKeyGroup(); kg++) {
                restore.keyGroupReader(0).readMappingsInKeyGroup(in, kg);
            }
            if (fresh.size() != q.size() || in.available() != 0) {
                throw new IllegalStateException("restore read " + fresh.size() + " of " + q.size() + " timers");
            }
            return fresh;
        }

        static List<TimerHeapInternalTimer<BinaryRowData, Long>> heap(
                HeapPriorityQueueSet<TimerHeapInternalTimer<BinaryRowData, Long>> q) {
            List<TimerHeapInternalTimer<BinaryRowData, Long>> all = new ArrayList<>(q.size());
            try (CloseableIterator<TimerHeapInternalTimer<BinaryRowData, Long>> it = q.iterator()) {
                it.forEachRemaining(all::add);
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
            return all;
        }
    }
}
