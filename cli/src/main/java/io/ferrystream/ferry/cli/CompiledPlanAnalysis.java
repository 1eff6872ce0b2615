package io.ferrystream.ferry.cli;

import io.ferrystream.ferry.planner.Ferry;
import io.ferrystream.ferry.planner.NativeExecNode;

import org.apache.flink.table.api.PlanReference;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.internal.TableEnvironmentImpl;
import org.apache.flink.table.delegation.InternalPlan;
import org.apache.flink.table.delegation.Planner;
import org.apache.flink.table.planner.plan.ExecNodeGraphInternalPlan;
import org.apache.flink.table.planner.plan.nodes.exec.ExecEdge;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNodeGraph;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Set;

/**
 * The stateful operators of a compiled plan (the JSON {@code COMPILE PLAN} and {@code
 * CompiledPlan#writeToFile} write) as {@code EXECUTE PLAN} would run it with Ferry: Flink loads the
 * plan, Ferry's nodes go in as the planner shim puts them for {@code EXECUTE PLAN} ({@link
 * Ferry#substituteLoadedPlan}), and the plan is translated, nothing run, which is where each of
 * Ferry's nodes decides, with the checks it makes for a loaded plan (the options, the kind's
 * checks, Go's verdict on the spec). The candidates are Ferry's nodes with that decision; the
 * other stateful operators are Flink's exec nodes that {@link PlanAnalysis#otherStatefulReason}
 * names, as for a planned query.
 */
final class CompiledPlanAnalysis {
    final List<PlanAnalysis.Candidate> candidates = new ArrayList<>();
    final List<PlanAnalysis.Other> others = new ArrayList<>();

    private final Set<ExecNode<?>> seen = Collections.newSetFromMap(new IdentityHashMap<>());

    private CompiledPlanAnalysis(ExecNodeGraph graph) {
        for (ExecNode<?> root : graph.getRootNodes()) {
            visit(root);
        }
    }

    /**
     * Loads, substitutes and translates the plan in {@code json} in {@code tEnv}. Throws an
     * IllegalArgumentException for a file Flink does not load as a plan, and what Flink or Ferry
     * throw when it does not translate (a connector missing from the class path, ...).
     */
    static CompiledPlanAnalysis of(TableEnvironment tEnv, Path json) {
        Planner planner = ((TableEnvironmentImpl) tEnv).getPlanner();
        InternalPlan plan;
        try {
            plan = planner.loadPlan(PlanReference.fromFile(json));
        } catch (IOException | RuntimeException e) {
            throw new IllegalArgumentException("not a compiled plan Flink 2.3 loads: " + FerryCli.describe(e), e);
        }
        if (!(plan instanceof ExecNodeGraphInternalPlan graphPlan)) {
            throw new IllegalStateException("not a plan of exec nodes: " + plan.getClass().getName());
        }
        Ferry.substituteLoadedPlan(graphPlan.getExecNodeGraph());
        planner.translatePlan(plan);
        return new CompiledPlanAnalysis(graphPlan.getExecNodeGraph());
    }

    /** Inputs first, each node once (shared sub-plans count once), as {@link PlanAnalysis} visits. */
    private void visit(ExecNode<?> node) {
        if (!seen.add(node)) {
            return;
        }
        for (ExecEdge edge : node.getInputEdges()) {
            visit(edge.getSource());
        }
        if (node instanceof NativeExecNode ferry && ferry.isCandidate()) {
            candidates.add(new PlanAnalysis.Candidate(ferry.kind().name(), operatorName(ferry.flinkNode()),
                    ferry.getDescription(), ferry.fallbackReason().orElse(null)));
            return;
        }
        String op = operatorName(node instanceof NativeExecNode ferry ? ferry.flinkNode() : node);
        String reason = PlanAnalysis.otherStatefulReason(op);
        if (reason != null) {
            others.add(new PlanAnalysis.Other(op, node.getDescription(), reason));
        }
    }

    /** Flink's name of an exec node's operator, as a planned node's ({@code StreamExecGroupAggregate}: {@code GroupAggregate}). */
    static String operatorName(ExecNode<?> node) {
        String name = node.getClass().getSimpleName();
        return name.startsWith("StreamExec") ? name.substring("StreamExec".length()) : name;
    }
}
