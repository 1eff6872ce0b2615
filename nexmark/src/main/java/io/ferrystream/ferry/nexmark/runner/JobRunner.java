package io.ferrystream.ferry.nexmark.runner;

import io.ferrystream.ferry.nexmark.table.ChecksumSinkFactory;
import io.ferrystream.ferry.planner.Ferry;

import org.apache.calcite.rel.RelNode;
import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;

import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Runs one query on one side as one job: a fresh table environment on the side's configuration,
 * Ferry installed ({@code ferry.enabled} decides whether it plans anything), the query's
 * statements, then its INSERT, whose plan is captured as Ferry's optimizer program leaves it.
 * After the job: its time, CPU and checkpoints from the cluster, its checksum from the sink's
 * accumulators, and which of its native nodes opened an operator.
 */
final class JobRunner {
    private final Cluster cluster;
    private final Configuration base;
    private final Map<String, String> variables;

    /**
     * @param base the job configuration every side starts from ({@link RunnerOptions#jobConfiguration()})
     * @param variables the scripts' variables but EVENTS, which each run sets
     */
    JobRunner(Cluster cluster, Configuration base, Map<String, String> variables) {
        this.cluster = cluster;
        this.base = base;
        this.variables = variables;
    }

    JobRun run(String query, Side side, int round, long events) throws Exception {
        Map<String, String> vars = new HashMap<>(variables);
        vars.put("EVENTS", Long.toString(events));
        QueryScript script = QueryScript.load(query, vars);
        StreamTableEnvironment tEnv =
                StreamTableEnvironment.create(cluster.environment(side.configure(base)), EnvironmentSettings.inStreamingMode());
        Ferry.install(tEnv);
        for (String statement : script.setup()) {
            tEnv.executeSql(statement);
        }
        Map<String, Long> before = cluster.nativeOpened();
        cluster.beginJob();
        TableResult result;
        List<RelNode> plans;
        try (Ferry.PlanCapture capture = Ferry.capturePlans()) {
            result = tEnv.executeSql(script.insert());
            plans = capture.plans();
        }
        JobClient client = result.getJobClient().orElseThrow();
        JobExecutionResult done = client.getJobExecutionResult().get();
        Cluster.Finished finished = cluster.endJob(client.getJobID());
        PlanShape plan = new PlanShape(plans);

        Set<String> ran = new HashSet<>();
        int nativeRan = -1;
        Map<String, Long> after = cluster.nativeOpened();
        if (after != null) {
            for (PlanShape.Candidate c : plan.plannedNative()) {
                if (after.getOrDefault(c.description(), 0L) > before.getOrDefault(c.description(), 0L)) {
                    ran.add(c.description());
                }
            }
            nativeRan = ran.size();
            long openedInJob = after.values().stream().mapToLong(Long::longValue).sum()
                    - before.values().stream().mapToLong(Long::longValue).sum();
            if (!side.ferry && openedInJob != 0) {
                throw new IllegalStateException(query + " on " + side.label + " opened " + openedInJob
                        + " native operators with ferry.enabled false");
            }
        }
        ChecksumSinkFactory.Totals totals = ChecksumSinkFactory.Totals.of(done.getAllAccumulatorResults(), script.sinkTable());
        if (totals.rows() < 0) {
            throw new IllegalStateException(query + " on " + side.label + ": its changelog retracted " + totals.retracted()
                    + " rows but added only " + totals.added());
        }
        return new JobRun(query, side, round, events, finished.stats(), finished.taskCpuSeconds(),
                finished.processCpuSeconds(), totals.checksum(), totals.added(), totals.retracted(),
                plan.statefulOperators(), nativeRan, plan.plannedNative().size(), plan.summary(ran),
                String.join("; ", plan.wallClock));
    }
}
