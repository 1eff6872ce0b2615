package io.ferrystream.ferry.planner;

import org.apache.flink.table.planner.plan.nodes.exec.ExecEdge;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNodeBase;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNodeGraph;

import java.util.ArrayDeque;
import java.util.Collections;
import java.util.Deque;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Ferry's nodes in a plan loaded from JSON ({@code EXECUTE PLAN}, {@code CompiledPlan#execute}),
 * which Flink translates without optimizing, so Ferry's optimizer program never sees it
 * (docs/jvm.md, "Compiled plans"). Every node of a class a registered kind translates ({@link
 * NativeKind#execClass}) goes into Ferry's {@link NativeExecNode}, as a planned native node does:
 * the plan's id, context, persisted configuration and fields stay, so its UID (e.g. {@code
 * <id>_group-aggregate}) and state metadata are the plan's, and its translation decides, as for
 * planned SQL, whether Ferry's operator or Flink's runs (options, the kind's checks, Go's verdict
 * on the spec). Exchanges stay Flink's row exchanges.
 */
final class LoadedPlans {
    private LoadedPlans() {}

    /**
     * Replaces the nodes Ferry has a kind for, in place; returns how many it replaced. A node
     * already replaced is left as it is, so substituting twice changes nothing.
     */
    static int substitute(ExecNodeGraph graph) {
        Map<ExecNode<?>, ExecNode<?>> replacements = new IdentityHashMap<>();
        Set<ExecNode<?>> visited = Collections.newSetFromMap(new IdentityHashMap<>());
        Deque<ExecNode<?>> todo = new ArrayDeque<>(graph.getRootNodes());
        int replaced = 0;
        while (!todo.isEmpty()) {
            ExecNode<?> node = todo.pop();
            if (!visited.add(node)) {
                continue;
            }
            List<ExecEdge> edges = node.getInputEdges();
            for (int i = 0; i < edges.size(); i++) {
                ExecEdge edge = edges.get(i);
                ExecNode<?> source = edge.getSource();
                ExecNode<?> ferry = replacements.get(source);
                if (ferry == null) {
                    ferry = ferryNodeOf(source);
                    replacements.put(source, ferry);
                    replaced += ferry != source ? 1 : 0;
                }
                if (ferry != source) {
                    node.replaceInputEdge(i, ExecEdge.builder().from(edge).source(ferry).build());
                }
                todo.push(ferry);
            }
        }
        return replaced;
    }

    /** Ferry's node in place of {@code node} (it takes over the node's input edges), or {@code node}. */
    private static ExecNode<?> ferryNodeOf(ExecNode<?> node) {
        NativeKind<?, ?> kind = NativeKinds.forExec(node);
        if (kind == null) {
            return node;
        }
        // compiled, as Flink's JSON deserializer marks every node it reads: NativeExecNode keeps that
        return new NativeExecNode(kind, (ExecNodeBase<?>) node, null);
    }
}
