package io.ferrystream.ferry.bench;

import io.ferrystream.ferry.kinds.groupaggregate.FerryGroupAggregateOperator;

import org.apache.flink.runtime.checkpoint.CheckpointOptions;
import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.runtime.state.memory.MemCheckpointStreamFactory;
import org.apache.flink.runtime.state.storage.JobManagerCheckpointStorage;
import org.apache.flink.streaming.api.operators.OperatorSnapshotFinalizer;
import org.apache.flink.streaming.api.operators.OperatorSnapshotFutures;
import org.apache.flink.table.data.RowData;

import java.util.Arrays;
import java.util.Locale;

/**
 * Checkpoint and restore durations of the operator benchmark's GROUP BY ({@link
 * OperatorBench#QUERY}) holding one row per key: Flink's operator on the heap and RocksDB backends
 * against Ferry's, each in Flink's keyed test harness with checkpoints kept in memory (so no file
 * system is timed).
 *
 * <ul>
 *   <li>checkpoint: the operator's {@code snapshotState} (what the harness's {@code snapshot}
 *       runs) and its futures, synchronous and asynchronous parts to completion, each after one
 *       more row (as in a running job, the state changed since the last one); sync: its
 *       synchronous part alone, the task's pause;
 *   <li>restore: a new harness's setup, {@code initializeState} from that checkpoint and {@code
 *       open}; the same without state ("open, empty") is timed beside it, so the difference is the
 *       restore.
 * </ul>
 *
 * Each variant's restored operator then gets one more row per key, and the checksums of the rows
 * it emits (every key's -U and +U) must agree across the variants, so each restore is checked to
 * hold the whole state. Every figure is the median of {@code reps} runs after one untimed run.
 */
final class CheckpointBench {
    private CheckpointBench() {}

    private static final OperatorBench.Variant[] VARIANTS = {
        OperatorBench.Variant.HEAP, OperatorBench.Variant.ROCKSDB, OperatorBench.Variant.FERRY
    };

    static void table(StringBuilder out, int[] keys, int reps) throws Exception {
        out.append("### Checkpoint and restore: ").append(OperatorBench.QUERY).append("\n\n")
                .append("Milliseconds, median (min–max) of ").append(reps).append(" runs after one untimed run.\n\n")
                .append("| keys | variant | checkpoint ms | sync ms | checkpoint bytes | open, empty: ms | open, restoring: ms | restore ms |\n")
                .append("|---:|---|---:|---:|---:|---:|---:|---:|\n");
        for (int k : keys) {
            RowData[] rows = BenchBids.prefill(k);
            Long checksum = null;
            for (OperatorBench.Variant v : VARIANTS) {
                OperatorBench.Planned p = OperatorBench.plan(v == OperatorBench.Variant.FERRY, 1024);
                double[] snapshot = new double[reps];
                double[] sync = new double[reps];
                double[] empty = new double[reps];
                double[] restore = new double[reps];
                OperatorSubtaskState state = null;
                try (OperatorBench.Driver d = new OperatorBench.Driver(v, p)) {
                    d.run(rows);
                    d.harness.setCheckpointStorage(new JobManagerCheckpointStorage(Integer.MAX_VALUE)); // no 5 MiB cap
                    for (int r = -1; r < reps; r++) {
                        d.run(new RowData[] {rows[r + 1]}); // the state changed since the last checkpoint
                        long t0 = System.nanoTime();
                        OperatorSnapshotFutures futures = d.op.snapshotState(++d.checkpoint, d.checkpoint,
                                CheckpointOptions.forCheckpointWithDefaultLocation(), new MemCheckpointStreamFactory(Integer.MAX_VALUE));
                        long t1 = System.nanoTime();
                        state = OperatorSnapshotFinalizer.create(futures).getJobManagerOwnedState();
                        if (r >= 0) {
                            snapshot[r] = (System.nanoTime() - t0) / 1e6;
                            sync[r] = (t1 - t0) / 1e6;
                        }
                    }
                }
                for (int r = -1; r < reps; r++) {
                    long t0 = System.nanoTime();
                    new OperatorBench.Driver(v, p).close();
                    long t1 = System.nanoTime();
                    OperatorBench.Driver d = new OperatorBench.Driver(v, p, state);
                    long t2 = System.nanoTime();
                    if (r >= 0) {
                        empty[r] = (t1 - t0) / 1e6;
                        restore[r] = (t2 - t1) / 1e6;
                    }
                    if (r == reps - 1) {
                        checksum = check(v, d, p, rows, checksum);
                    }
                    d.close();
                }
                Bench.log("checkpoint, %s, %s keys: snapshot %s ms (sync %s ms), %d bytes; open %s ms, restoring %s ms", v.label,
                        Bench.count(k), Arrays.toString(snapshot), Arrays.toString(sync), state.getStateSize(), Arrays.toString(empty), Arrays.toString(restore));
                out.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %,d | %s | %s | %.1f |%n", Bench.count(k), v.label,
                        range(snapshot), range(sync), state.getStateSize(), range(empty), range(restore),
                        Stats.median(restore) - Stats.median(empty)));
            }
        }
        out.append('\n');
    }

    /**
     * Feeds one more row per key to a restored operator and returns the checksum of its output,
     * failing unless it equals {@code expected} (the previous variant's; null for the first).
     */
    private static long check(OperatorBench.Variant v, OperatorBench.Driver d, OperatorBench.Planned p, RowData[] rows,
            Long expected) throws Exception {
        if (d.op instanceof FerryGroupAggregateOperator f && f.stateKeys() != rows.length) {
            throw new IllegalStateException("Ferry restored " + f.stateKeys() + " keys of " + rows.length);
        }
        d.run(rows);
        if (d.out.records != 2L * rows.length) {
            throw new IllegalStateException(v.label + " emitted " + d.out.records + " rows after restore, want " + 2L * rows.length);
        }
        if (expected != null && d.out.checksum != expected) {
            throw new IllegalStateException(v.label + ": checksum after restore " + d.out.checksum + ", another variant's " + expected);
        }
        return d.out.checksum;
    }

    private static String range(double[] ms) {
        return String.format(Locale.ROOT, "%.1f (%.1f–%.1f)", Stats.median(ms), Stats.min(ms), Stats.max(ms));
    }
}
