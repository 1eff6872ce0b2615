package io.ferrystream.ferry.nexmark.runner;

import io.ferrystream.ferry.planner.Ferry;

import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A MiniCluster in this JVM for the whole run: one TaskManager with {@code slots} slots, started
 * once, so no job pays for a cluster's start and every side shares the same TaskManager. Jobs
 * reach it through {@link #environment}, whose executor submits to it ({@link MiniClusters}). CPU
 * is sampled in this JVM ({@link TaskCpuSampler}); job statistics come from its archive of
 * finished jobs.
 */
final class LocalCluster implements Cluster {
    private static final String TARGET = "nexmark-minicluster";

    private final MiniCluster cluster;
    private final int slots;
    private final TaskCpuSampler cpu = new TaskCpuSampler();

    LocalCluster(Configuration configuration, int slots) throws Exception {
        this.slots = slots;
        cluster = MiniClusters.start(configuration, slots);
    }

    @Override
    public StreamExecutionEnvironment environment(Configuration job) {
        return MiniClusters.environment(TARGET, () -> cluster, job);
    }

    @Override
    public void beginJob() {
        cpu.start();
    }

    @Override
    public Finished endJob(JobID job) throws Exception {
        cpu.stop();
        JobStats stats = JobStats.of(cluster.getArchivedExecutionGraph(job).get(60, TimeUnit.SECONDS));
        return new Finished(stats, cpu.taskSeconds(), cpu.processSeconds(stats.runningAt(), stats.finishedAt()));
    }

    @Override
    public Map<String, Long> nativeOpened() {
        return Ferry.nativeOperatorsOpenedPerNode();
    }

    @Override
    public String describe() {
        return "a MiniCluster in the runner's JVM: 1 TaskManager with " + slots + " slots";
    }

    @Override
    public void close() throws Exception {
        cluster.close();
    }
}
