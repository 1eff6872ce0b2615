package io.ferrystream.ferry.cli;

import io.ferrystream.ferry.nexmark.runner.MiniClusters;

import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.executiongraph.AccessExecutionGraph;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import java.util.concurrent.TimeUnit;

/**
 * One embedded MiniCluster for a whole CLI run: every job of both sides runs on it, so no job pays
 * for starting a cluster and the sides share the same TaskManager. It has one TaskManager with as
 * many slots as the largest parallelism asked for so far (it restarts, between jobs, when a job
 * needs more). Jobs reach it through {@link #environment}, whose executor submits to this cluster
 * (the Nexmark runner's {@link MiniClusters}, which its own MiniCluster runs on too).
 */
final class LocalCluster implements AutoCloseable {
    private static final String TARGET = "ferry-minicluster";

    private final Configuration configuration;
    private MiniCluster cluster;
    private int slots;

    /** @param configuration the cluster's configuration (--conf and -D): memory, network, ... */
    LocalCluster(Configuration configuration) {
        this.configuration = new Configuration(configuration);
    }

    /**
     * An execution environment whose jobs run on this cluster, configured with {@code conf}; the
     * cluster first grows to {@code parallelism} slots if it has fewer.
     */
    StreamExecutionEnvironment environment(Configuration conf, int parallelism) throws Exception {
        ensureSlots(parallelism);
        return MiniClusters.environment(TARGET, this::running, conf);
    }

    /** Restarts the cluster with {@code parallelism} slots if it has fewer (between jobs only). */
    void ensureSlots(int parallelism) throws Exception {
        int want = Math.max(1, parallelism);
        if (cluster != null && slots >= want) {
            return;
        }
        close();
        cluster = MiniClusters.start(configuration, want);
        slots = want;
    }

    /** The finished job's execution graph: its vertices, their names and I/O counts. */
    AccessExecutionGraph executionGraph(JobID job) throws Exception {
        return cluster.getArchivedExecutionGraph(job).get(60, TimeUnit.SECONDS);
    }

    @Override
    public void close() throws Exception {
        if (cluster != null) {
            MiniCluster c = cluster;
            cluster = null;
            c.close();
        }
    }

    private MiniCluster running() {
        if (cluster == null) {
            throw new IllegalStateException("the MiniCluster is not running");
        }
        return cluster;
    }
}
