package io.ferrystream.ferry.cli;

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
import org.apache.flink.runtime.executiongraph.AccessExecutionGraph;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.minicluster.MiniClusterConfiguration;
import org.apache.flink.runtime.minicluster.MiniClusterJobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamGraph;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * One embedded MiniCluster for a whole CLI run: every job of both sides runs on it, so no job pays
 * for starting a cluster and the sides share the same TaskManager. It has one TaskManager with as
 * many slots as the largest parallelism asked for so far (it restarts, between jobs, when a job
 * needs more). Jobs reach it through {@link #environment}, whose executor submits to this cluster.
 */
final class LocalCluster implements AutoCloseable {
    private static final String TARGET = "ferry-minicluster";

    private final Configuration configuration;
    private MiniCluster cluster;
    private int slots;

    /** @param configuration the cluster's configuration (--conf and -D): memory, network, ... */
    LocalCluster(Configuration configuration) {
        this.configuration = new Configuration(configuration);
        if (!this.configuration.contains(RestOptions.BIND_PORT)) {
            this.configuration.set(RestOptions.BIND_PORT, "0"); // never collide with a real cluster's 8081
        }
    }

    /**
     * An execution environment whose jobs run on this cluster, configured with {@code conf}; the
     * cluster first grows to {@code parallelism} slots if it has fewer.
     */
    StreamExecutionEnvironment environment(Configuration conf, int parallelism) throws Exception {
        ensureSlots(parallelism);
        Configuration c = new Configuration(conf);
        c.set(DeploymentOptions.TARGET, TARGET);
        c.set(DeploymentOptions.ATTACHED, true);
        return new StreamExecutionEnvironment(new Loader(), c, Thread.currentThread().getContextClassLoader());
    }

    /** Restarts the cluster with {@code parallelism} slots if it has fewer (between jobs only). */
    void ensureSlots(int parallelism) throws Exception {
        int want = Math.max(1, parallelism);
        if (cluster != null && slots >= want) {
            return;
        }
        close();
        MiniCluster c =
                new MiniCluster(
                        new MiniClusterConfiguration.Builder()
                                .setConfiguration(configuration)
                                .setNumTaskManagers(1)
                                .setNumSlotsPerTaskManager(want)
                                .build());
        c.start();
        cluster = c;
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

    /** Submits a pipeline to the cluster, as Flink's LocalExecutor does to a cluster of its own. */
    private CompletableFuture<JobClient> submit(Pipeline pipeline, Configuration conf, ClassLoader classLoader)
            throws Exception {
        MiniCluster c = running();
        StreamGraph graph = PipelineExecutorUtils.getStreamGraph(pipeline, conf);
        graph.serializeUserDefinedInstances();
        return c.submitJob(graph)
                .<JobClient>thenApply(
                        submitted -> {
                            JobID id = submitted.getJobID();
                            try {
                                ClientUtils.waitUntilJobInitializationFinished(
                                        () -> c.getJobStatus(id).get(), () -> c.requestJobResult(id).get(), classLoader);
                            } catch (Exception e) {
                                throw new RuntimeException(e);
                            }
                            return new MiniClusterJobClient(
                                    id, c, classLoader, MiniClusterJobClient.JobFinalizationBehavior.NOTHING);
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
