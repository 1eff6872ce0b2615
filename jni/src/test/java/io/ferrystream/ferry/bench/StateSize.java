package io.ferrystream.ferry.bench;

import io.ferrystream.ferry.kinds.groupaggregate.FerryGroupAggregateOperator;
import io.ferrystream.ferry.nativelib.NativeLibrary;

import org.apache.flink.core.execution.SavepointFormatType;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.checkpoint.SavepointType;
import org.apache.flink.runtime.state.storage.JobManagerCheckpointStorage;
import org.apache.flink.state.rocksdb.RocksDBKeyedStateBackend;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.table.data.RowData;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

import org.rocksdb.ColumnFamilyHandle;
import org.rocksdb.FlushOptions;
import org.rocksdb.RocksDB;

/**
 * State bytes per key of the operator benchmark's GROUP BY ({@link OperatorBench#QUERY}: COUNT,
 * SUM, MAX, AVG of a BIGINT per key) after one row per key, Flink's operator on the heap backend
 * and on RocksDB against Ferry's, each in Flink's keyed test harness:
 *
 * <ul>
 *   <li>Flink, heap: the JVM heap the state took (heap in use after full collections, after the
 *       keys minus before them, the harness already open; the rows fed are allocated before);
 *   <li>Flink, RocksDB: the bytes of the state's SST files once its memtable is flushed (RocksDB
 *       keeps the state on disk; its memory is a cache bounded by managed memory, not per key);
 *   <li>Ferry: the state's own estimate ({@code ferry_operator_stats}: the capacities of its flat
 *       slices), which its managed-memory budget is checked against, and, as checks that count
 *       everything Go holds, the Go runtime's memory ({@code ferry_runtime_memory}) and the
 *       process's resident memory, after minus before (the JVM heap is pre-touched, so its pages
 *       do not move RSS);
 *   <li>both: the bytes of a checkpoint of the state ({@code OperatorSubtaskState#getStateSize}),
 *       and of a canonical savepoint (Ferry's writes Flink's {@code accState}, docs/state.md).
 * </ul>
 */
final class StateSize {
    private StateSize() {}

    private static final MemoryMXBean MEMORY = ManagementFactory.getMemoryMXBean();

    static void table(StringBuilder out, int[] keys) throws Exception {
        out.append("### State bytes per key: ").append(OperatorBench.QUERY).append("\n\n")
                .append("| keys | Flink, heap: JVM heap | Flink, heap: checkpoint | Flink, heap: savepoint | Flink, RocksDB: SST files"
                        + " | Flink, RocksDB: checkpoint | Flink, RocksDB: savepoint | Ferry: state (its estimate) | Ferry: Go memory growth"
                        + " | Ferry: process RSS growth | Ferry: checkpoint | Ferry: savepoint | Ferry state / heap | Ferry state / RocksDB SST |\n")
                .append("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for (int k : keys) {
            RowData[] prefill = BenchBids.prefill(k);
            double[] heap = flink(prefill);
            double[] rocks = rocksDb(prefill);
            double[] ferry = ferry(prefill);
            out.append(String.format(Locale.ROOT,
                    "| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.2f | %.2f |%n",
                    Bench.count(k), heap[0], heap[1], heap[2], rocks[0], rocks[1], rocks[2], ferry[0], ferry[1], ferry[2], ferry[3],
                    ferry[4], ferry[0] / heap[0], ferry[0] / rocks[0]));
        }
        out.append('\n');
    }

    /** Flink's operator on the heap backend: JVM heap and checkpoint bytes per key. */
    private static double[] flink(RowData[] prefill) throws Exception {
        OperatorBench.Planned stock = OperatorBench.plan(false, 1024);
        try (OperatorBench.Driver d = new OperatorBench.Driver(OperatorBench.Variant.HEAP, stock)) {
            long before = heapUsed(); // the harness open: its own memory is not the state's
            d.run(prefill);
            long after = heapUsed();
            long checkpoint = checkpointBytes(d);
            long savepoint = savepointBytes(d);
            Bench.log("state size, Flink heap, %s keys: heap %d -> %d bytes, checkpoint %d bytes, savepoint %d bytes",
                    Bench.count(prefill.length), before, after, checkpoint, savepoint);
            double n = prefill.length;
            return new double[] {(after - before) / n, checkpoint / n, savepoint / n};
        }
    }

    /** Flink's operator on RocksDB: SST bytes (memtable flushed) and checkpoint bytes per key. */
    private static double[] rocksDb(RowData[] prefill) throws Exception {
        OperatorBench.Planned stock = OperatorBench.plan(false, 1024);
        try (OperatorBench.Driver d = new OperatorBench.Driver(OperatorBench.Variant.ROCKSDB, stock)) {
            d.run(prefill);
            Object backend = ((AbstractStreamOperator<?>) d.op).getKeyedStateBackend();
            Field dbField = RocksDBKeyedStateBackend.class.getDeclaredField("db");
            dbField.setAccessible(true);
            RocksDB db = (RocksDB) dbField.get(backend);
            Method cfOf = RocksDBKeyedStateBackend.class.getDeclaredMethod("getColumnFamilyHandle", String.class);
            cfOf.setAccessible(true);
            ColumnFamilyHandle cf = (ColumnFamilyHandle) cfOf.invoke(backend, "accState");
            try (FlushOptions flush = new FlushOptions().setWaitForFlush(true)) {
                db.flush(flush, cf);
            }
            long sst = db.getLongProperty(cf, "rocksdb.total-sst-files-size");
            long checkpoint = checkpointBytes(d);
            long savepoint = savepointBytes(d);
            Bench.log("state size, Flink RocksDB, %s keys: SST files %d bytes, checkpoint %d bytes, savepoint %d bytes",
                    Bench.count(prefill.length), sst, checkpoint, savepoint);
            double n = prefill.length;
            return new double[] {sst / n, checkpoint / n, savepoint / n};
        }
    }

    /** Ferry's operator: its state estimate, Go memory and RSS growth, and checkpoint bytes per key. */
    private static double[] ferry(RowData[] prefill) throws Exception {
        OperatorBench.Planned planned = OperatorBench.plan(true, 1024);
        try (OperatorBench.Driver d = new OperatorBench.Driver(OperatorBench.Variant.FERRY, planned)) {
            heapUsed();
            long rssBefore = rss(); // the harness and the native operator open
            long goBefore = NativeLibrary.runtimeMemory()[0];
            d.run(prefill);
            heapUsed();
            long rssAfter = rss();
            long goAfter = NativeLibrary.runtimeMemory()[0];
            FerryGroupAggregateOperator op = (FerryGroupAggregateOperator) d.op;
            long[] stats = {op.stateKeys(), op.stateBytes()};
            if (stats[0] != prefill.length) {
                throw new IllegalStateException("Ferry holds " + stats[0] + " keys, want " + prefill.length);
            }
            long checkpoint = checkpointBytes(d);
            long savepoint = savepointBytes(d);
            Bench.log("state size, Ferry, %s keys: state %d bytes, Go memory %d -> %d bytes, RSS %d -> %d bytes, checkpoint %d bytes,"
                    + " savepoint %d bytes", Bench.count(prefill.length), stats[1], goBefore, goAfter, rssBefore, rssAfter, checkpoint,
                    savepoint);
            double n = prefill.length;
            return new double[] {stats[1] / n, (goAfter - goBefore) / n, (rssAfter - rssBefore) / n, checkpoint / n, savepoint / n};
        }
    }

    private static long checkpointBytes(OperatorBench.Driver d) throws Exception {
        d.harness.setCheckpointStorage(new JobManagerCheckpointStorage(Integer.MAX_VALUE)); // in memory, no 5 MiB cap
        OperatorSubtaskState s = d.harness.snapshot(++d.checkpoint, d.checkpoint);
        return s.getStateSize();
    }

    /** The bytes of a canonical savepoint of the state (in memory, like checkpointBytes). */
    private static long savepointBytes(OperatorBench.Driver d) throws Exception {
        d.harness.setCheckpointStorage(new JobManagerCheckpointStorage(Integer.MAX_VALUE));
        ++d.checkpoint;
        return d.harness.snapshotWithLocalState(d.checkpoint, d.checkpoint, SavepointType.savepoint(SavepointFormatType.CANONICAL))
                .getJobManagerOwnedState().getStateSize();
    }

    /** JVM heap in use after full collections (until it stops falling). */
    private static long heapUsed() {
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 10; i++) {
            System.gc();
            long u = MEMORY.getHeapMemoryUsage().getUsed();
            if (u >= used) {
                break;
            }
            used = u;
        }
        return used;
    }

    /** The process's resident memory (VmRSS), bytes. */
    private static long rss() throws Exception {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        throw new IllegalStateException("no VmRSS in /proc/self/status");
    }
}
