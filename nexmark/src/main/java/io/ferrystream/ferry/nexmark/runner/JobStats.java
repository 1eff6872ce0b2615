package io.ferrystream.ferry.nexmark.runner;

import org.apache.flink.api.common.JobStatus;
import org.apache.flink.runtime.checkpoint.AbstractCheckpointStats;
import org.apache.flink.runtime.checkpoint.CheckpointStatsSnapshot;
import org.apache.flink.runtime.checkpoint.CheckpointStatsStatus;
import org.apache.flink.runtime.checkpoint.SubtaskStateStats;
import org.apache.flink.runtime.checkpoint.TaskStateStats;
import org.apache.flink.runtime.execution.ExecutionState;
import org.apache.flink.runtime.executiongraph.AccessExecutionGraph;
import org.apache.flink.runtime.executiongraph.AccessExecutionVertex;

/**
 * What the JobManager recorded of one finished job.
 *
 * @param runningAt when the last of its tasks switched to RUNNING, epoch ms (Nexmark's start of
 *     the measured time: job and every task running)
 * @param finishedAt when the job finished, epoch ms
 * @param checkpoints checkpoints completed
 * @param syncMillis mean synchronous part of a subtask's snapshot, over every subtask of every
 *     completed checkpoint (NaN without one)
 * @param asyncMillis mean asynchronous part, likewise
 * @param peakStateBytes the largest full state size of a completed checkpoint (its incremental
 *     size may be smaller); -1 without one
 */
record JobStats(long runningAt, long finishedAt, int checkpoints, double syncMillis, double asyncMillis,
        long peakStateBytes) {

    /** Nexmark's time: from every task running to the job's end. */
    long millis() {
        return finishedAt - runningAt;
    }

    /** Reads a finished job's execution graph (a MiniCluster's archive). */
    static JobStats of(AccessExecutionGraph graph) {
        if (graph.getState() != JobStatus.FINISHED) {
            throw new IllegalStateException("job " + graph.getJobID() + " ended " + graph.getState());
        }
        long running = 0;
        for (AccessExecutionVertex v : graph.getAllExecutionVertices()) {
            running = Math.max(running, v.getCurrentExecutionAttempt().getStateTimestamp(ExecutionState.RUNNING));
        }
        CheckpointStatsSnapshot stats = graph.getCheckpointStatsSnapshot();
        int completed = (int) stats.getCounts().getNumberOfCompletedCheckpoints();
        long peak = -1;
        double sync = 0;
        double async = 0;
        long snapshots = 0;
        int seen = 0;
        for (AbstractCheckpointStats c : stats.getHistory().getCheckpoints()) {
            if (c.getStatus() != CheckpointStatsStatus.COMPLETED || c.getProperties().isSavepoint()) {
                continue;
            }
            seen++;
            peak = Math.max(peak, c.getStateSize());
            for (TaskStateStats task : c.getAllTaskStateStats()) {
                for (SubtaskStateStats s : task.getSubtaskStats()) {
                    if (s != null && s.isCompleted()) {
                        sync += s.getSyncCheckpointDuration();
                        async += s.getAsyncCheckpointDuration();
                        snapshots++;
                    }
                }
            }
        }
        if (seen != completed) {
            throw new IllegalStateException(completed + " checkpoints completed but the history holds " + seen
                    + ": raise web.checkpoints.history");
        }
        return new JobStats(running, graph.getStatusTimestamp(JobStatus.FINISHED), completed,
                snapshots == 0 ? Double.NaN : sync / snapshots, snapshots == 0 ? Double.NaN : async / snapshots, peak);
    }
}
