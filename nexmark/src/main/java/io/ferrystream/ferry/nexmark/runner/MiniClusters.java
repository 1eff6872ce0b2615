package io.ferrystream.ferry.nexmark.runner;

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

import java.util.concurrent.CompletableFuture;
import java.util.function.Supplier;
import java.util.stream.Stream;

/**
 * A MiniCluster in this JVM that jobs of a {@link StreamExecutionEnvironment} run on, submitted as
 * Flink's local executor submits to a cluster of its own. Shared by the runner's {@link
 * LocalCluster} and the {@code ferry} command's (module cli), which keeps one MiniCluster for a
 * whole run and restarts it when a job needs more slots.
 */
public final class MiniClusters {
    private MiniClusters() {}

    /**
     * Starts a MiniCluster of one TaskManager with {@code slots} slots, configured with a copy of
     * {@code configuration}; its REST endpoint takes a free port unless {@code rest.bind-port} is set
     * (never a real cluster's 8081). The caller owns it and closes it.
     */
    public static MiniCluster start(Configuration configuration, int slots) throws Exception {
        Configuration c = new Configuration(configuration);
        if (!c.contains(RestOptions.BIND_PORT)) {
            c.set(RestOptions.BIND_PORT, "0");
        }
        MiniCluster cluster = new MiniCluster(new MiniClusterConfiguration.Builder()
                .setConfiguration(c)
                .setNumTaskManagers(1)
                .setNumSlotsPerTaskManager(slots)
                .build());
        cluster.start();
        return cluster;
    }

    /**
     * An execution environment configured with a copy of {@code job} whose jobs go to the
     * MiniCluster {@code cluster} gives at submission (it may have been restarted since), through
     * an executor named {@code target}.
     */
    public static StreamExecutionEnvironment environment(String target, Supplier<MiniCluster> cluster, Configuration job) {
        Configuration c = new Configuration(job);
        c.set(DeploymentOptions.TARGET, target);
        c.set(DeploymentOptions.ATTACHED, true);
        return new StreamExecutionEnvironment(new Loader(target, cluster), c, Thread.currentThread().getContextClassLoader());
    }

    /** Submits a pipeline to {@code cluster} and waits until the job has initialized. */
    private static CompletableFuture<JobClient> submit(
            MiniCluster cluster, Pipeline pipeline, Configuration conf, ClassLoader classLoader) throws Exception {
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

    /** The one executor factory of an environment: {@code target}, submitting to {@code cluster}. */
    private record Loader(String target, Supplier<MiniCluster> cluster) implements PipelineExecutorServiceLoader {
        @Override
        public PipelineExecutorFactory getExecutorFactory(Configuration configuration) {
            return new PipelineExecutorFactory() {
                @Override
                public String getName() {
                    return target;
                }

                @Override
                public boolean isCompatibleWith(Configuration configuration) {
                    return true;
                }

                @Override
                public PipelineExecutor getExecutor(Configuration configuration) {
                    return (pipeline, conf, classLoader) -> submit(cluster.get(), pipeline, conf, classLoader);
                }
            };
        }

        @Override
        public Stream<String> getExecutorNames() {
            return Stream.of(target);
        }
    }
}
