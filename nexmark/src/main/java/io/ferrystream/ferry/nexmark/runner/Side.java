package io.ferrystream.ferry.nexmark.runner;

import org.apache.flink.configuration.Configuration;

/**
 * The three ways each query runs: stock Flink on the heap (HashMap) state backend, stock Flink on
 * RocksDB (incremental checkpoints, Nexmark's setting), and Ferry: Ferry's operators where it has
 * them, the rest of the job Flink's on the heap backend. Ferry is installed on every side and
 * switched by {@code ferry.enabled}, so the stock sides plan exactly what Flink plans.
 */
enum Side {
    HEAP("heap", "stock Flink, heap", "hashmap", false),
    ROCKSDB("rocksdb", "stock Flink, RocksDB", "rocksdb", false),
    FERRY("ferry", "Ferry", "hashmap", true);

    final String id;
    final String label;
    final String stateBackend;
    final boolean ferry;

    Side(String id, String label, String stateBackend, boolean ferry) {
        this.id = id;
        this.label = label;
        this.stateBackend = stateBackend;
        this.ferry = ferry;
    }

    static Side of(String id) {
        for (Side s : values()) {
            if (s.id.equals(id)) {
                return s;
            }
        }
        throw new IllegalArgumentException("no side " + id + "; sides are heap, rocksdb, ferry");
    }

    /** The side's job configuration on top of {@code base}. */
    Configuration configure(Configuration base) {
        Configuration c = new Configuration(base);
        c.setString("state.backend.type", stateBackend);
        c.setString("execution.checkpointing.incremental", Boolean.toString(this == ROCKSDB));
        c.setString("ferry.enabled", Boolean.toString(ferry));
        return c;
    }
}
