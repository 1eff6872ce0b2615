package io.ferrystream.ferry.nexmark.runner;

import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import java.util.Map;

/**
 * Where the runner's jobs run: a MiniCluster in the runner's JVM ({@link LocalCluster}) or a
 * standalone Flink cluster reached over its REST API ({@link RemoteCluster}). One job at a time:
 * {@link #beginJob()}, submit through {@link #environment}, wait for the result, {@link #endJob}.
 */
interface Cluster extends AutoCloseable {
    /** An execution environment whose jobs run on this cluster, configured with {@code job}. */
    StreamExecutionEnvironment environment(Configuration job) throws Exception;

    /** Starts measuring the next job's CPU. */
    void beginJob() throws Exception;

    /** What the cluster recorded of the job, which has finished, and its CPU time. */
    Finished endJob(JobID job) throws Exception;

    /**
     * Native operator subtasks opened so far per native node ({@code Ferry.nativeOperatorsOpenedPerNode()}),
     * or null when the tasks run in other JVMs than the planner's.
     */
    Map<String, Long> nativeOpened();

    /** One line saying what the cluster is, for the report. */
    String describe();

    /**
     * @param taskCpuSeconds CPU time of the job's task threads (NaN when not measurable)
     * @param processCpuSeconds CPU time of the TaskManager processes over {@link JobStats#millis()}
     */
    record Finished(JobStats stats, double taskCpuSeconds, double processCpuSeconds) {}
}
