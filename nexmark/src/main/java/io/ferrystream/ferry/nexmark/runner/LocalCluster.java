package io.ferrystream.ferry.nexmark.runner;

import io.ferrystream.ferry.planner.Ferry;

import org.apache.flink.api.common.JobID;
import org.apache.flink.api.dag.Pipeline;
import org.apache.flink.client.ClientUtils;
import org.apache.flink.client.deployment.executors.PipelineExecutorUtils;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.DeploymentOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.core.execution.PipelineExecutor;
import org.apache.flink.core.execution.PipelineExecutorFactory;
import org.apache.flink.core.execution.PipelineExecutorServiceLoader;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.runtime.minicluster.MiniClusterJobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;

import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A MiniCluster in this JVM for the whole run: one TaskManager with {@code slots} slots, started
 * once, so no job pays for a cluster's start and every side shares the same TaskManager. Jobs
 * reach it through {@link #environment}, whose executor submits to it. CPU is sampled in this
 * JVM ({@link TaskCpuSampler}); job statistics come from its archive of finished jobs.
 */
final class LocalCluster implements Cluster {
    private static final String TARGET = "nexmark-minicluster";

    private final MiniCluster cluster;
    private final int slots;
    private final TaskCpuSampler cpu = new TaskCpuSampler();

    LocalCluster(Configuration configuration, int slots) throws Exception {
        Configuration c = new Configuration(configuration);
        if (!c.contains(RestOptions.BIND_PORT)) {
            c.set(RestOptions.BIND_PORT, "0");
        }
        this.slots = slots;
        cluster = new MiniCluster(new MiniClusterConfiguration.Builder()
                .setConfiguration(c)
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(slots)
                .build());
        cluster.start();
    }

    @Override
    public StreamExecutionEnvironment environment(Configuration job) {
        Configuration c = new Configuration(job);
        c.set(DeploymentOptions.TARGET, TARGET);
        c.set(DeploymentOptions.ATTACHED, true);
        return new StreamExecutionEnvironment(new Loader(), c, Thread.currentThread().getContextClassLoader());
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

    /** Submits a pipeline to the MiniCluster, as Flink's local executor does to one of its own. */
    private CompletableFuture<JobClient> submit(Pipeline pipeline, Configuration conf, ClassLoader classLoader)
            throws Exception {
        StreamGraph graph = PipelineExecutorUtils.getStreamGraph(pipeline, conf);
        graph.serializeUserDefinedInstances();
        return cluster.submitJob(graph).thenApply(submitted -> {
            JobID id = submitted.getJobID();
            try {
                ClientUtils.waitUntilJobInitializationFinished(
                        () -> cluster.getJobStatus(id).get(), () -> cluster.requestJobResult(id).get(), classLoader);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
            return new MiniClusterJobClient(id, cluster, classLoader, MiniClusterJobClient.JobFinalizationBehavior.NOTHING);
        });
    }

    private final class Loader implements PipelineExecutorServiceLoader {
        @Override
        public PipelineExecutorFactory getExecutorFactory(Configuration configuration) {
            return new PipelineExecutorFactory() {
                @Override
                public String getName() {
                    return TARGET;
                }

                @Override
                public boolean isCompatibleWith(Configuration configuration) {
                    return true;
                }

                @Override
                public PipelineExecutor getExecutor(Configuration configuration) {
                    return LocalCluster.this::submit;
                }
            };
        }

        @Override
        public Stream<String> getExecutorNames() {
            return Stream.of(TARGET);
        }
    }
}
