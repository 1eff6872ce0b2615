package io.ferrystream.ferry.planner;

import org.apache.calcite.rel.core.AggregateCall;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.planner.plan.nodes.exec.ExecEdge;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNodeBase;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNodeContext;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNodeGraph;
import org.apache.flink.table.planner.plan.nodes.exec.StateMetadata;
import org.apache.flink.table.planner.plan.nodes.exec.spec.IntervalJoinSpec;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecGlobalGroupAggregate;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecGroupAggregate;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecIntervalJoin;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecLocalGroupAggregate;
import org.apache.flink.table.types.logical.RowType;

import java.lang.reflect.Field;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Deque;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Ferry's nodes in a plan loaded from JSON ({@code EXECUTE PLAN}, {@code CompiledPlan#execute}),
 * which Flink translates without optimizing, so Ferry's optimizer program never sees it
 * (docs/jvm.md, "Compiled plans"). Each of Flink's group aggregate nodes (single-phase, and the
 * local and global halves of the two-phase plan) and interval join nodes is replaced, before translation, by Ferry's
 * subclass with the plan's id, context, persisted configuration and fields: its UID (e.g. {@code
 * <id>_group-aggregate}) and state metadata are the plan's, and its translation decides, as for
 * planned SQL, whether Ferry's operator or Flink's runs (options, Go's verdict on the spec). The
 * exchange between local and global stays Flink's row exchange.
 */
final class LoadedPlans {
    private LoadedPlans() {}

    /**
     * Replaces the nodes Ferry has a node for, in place; returns how many it replaced.
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

    /** Ferry's node in place of {@code node} (which it takes the inputs of), or {@code node}. */
    private static ExecNode<?> ferryNodeOf(ExecNode<?> node) {
        ExecNodeBase<?> ferry;
        if (node.getClass() == StreamExecGroupAggregate.class) {
            Class<?> c = StreamExecGroupAggregate.class;
            ferry = new FerryStreamExecGroupAggregate(
                    node.getId(), context(node), persisted(node),
                    field(node, c, "grouping", int[].class),
                    field(node, c, "aggCalls", AggregateCall[].class),
                    field(node, c, "aggCallNeedRetractions", boolean[].class),
                    field(node, c, "generateUpdateBefore", Boolean.class),
                    field(node, c, "needRetraction", Boolean.class),
                    stateMetadata(node, c),
                    node.getInputProperties(), (RowType) node.getOutputType(), node.getDescription());
        } else if (node.getClass() == StreamExecGlobalGroupAggregate.class) {
            Class<?> c = StreamExecGlobalGroupAggregate.class;
            ferry = new FerryStreamExecGlobalGroupAggregate(
                    node.getId(), context(node), persisted(node),
                    field(node, c, "grouping", int[].class),
                    field(node, c, "aggCalls", AggregateCall[].class),
                    field(node, c, "aggCallNeedRetractions", boolean[].class),
                    field(node, c, "localAggInputRowType", RowType.class),
                    field(node, c, "generateUpdateBefore", Boolean.class),
                    field(node, c, "needRetraction", Boolean.class),
                    field(node, c, "indexOfCountStar", Integer.class),
                    stateMetadata(node, c),
                    node.getInputProperties(), (RowType) node.getOutputType(), node.getDescription());
        } else if (node.getClass() == StreamExecLocalGroupAggregate.class) {
            Class<?> c = StreamExecLocalGroupAggregate.class;
            ferry = new FerryStreamExecLocalGroupAggregate(
                    node.getId(), context(node), persisted(node),
                    field(node, c, "grouping", int[].class),
                    field(node, c, "aggCalls", AggregateCall[].class),
                    field(node, c, "aggCallNeedRetractions", boolean[].class),
                    field(node, c, "needRetraction", Boolean.class),
                    node.getInputProperties(), (RowType) node.getOutputType(), node.getDescription());
        } else if (node.getClass() == StreamExecIntervalJoin.class) {
            ferry = new FerryStreamExecIntervalJoin(
                    node.getId(), context(node), persisted(node),
                    field(node, StreamExecIntervalJoin.class, "intervalJoinSpec", IntervalJoinSpec.class),
                    node.getInputProperties(), (RowType) node.getOutputType(), node.getDescription());
        } else {
            return node;
        }
        ferry.setCompiled(true); // as Flink's JSON deserializer marks every node it reads
        List<ExecEdge> inputs = new ArrayList<>();
        for (ExecEdge e : node.getInputEdges()) {
            inputs.add(ExecEdge.builder().from(e).target(ferry).build());
        }
        ferry.setInputEdges(inputs);
        return ferry;
    }

    private static ExecNodeContext context(ExecNode<?> node) {
        return field(node, ExecNodeBase.class, "context", ExecNodeContext.class);
    }

    private static ReadableConfig persisted(ExecNode<?> node) {
        return ((ExecNodeBase<?>) node).getPersistedConfig();
    }

    private static List<StateMetadata> stateMetadata(ExecNode<?> node, Class<?> declaring) {
        return listOf(field(node, declaring, "stateMetadataList", List.class));
    }

    @SuppressWarnings("unchecked")
    private static List<StateMetadata> listOf(List<?> list) {
        return (List<StateMetadata>) list;
    }

    /** A private field of Flink's node (Flink 2.3.0's names; the planner shim pins the version). */
    private static <T> T field(Object node, Class<?> declaring, String name, Class<T> type) {
        try {
            Field f = declaring.getDeclaredField(name);
            f.setAccessible(true);
            return type.cast(f.get(node));
        } catch (ReflectiveOperationException | RuntimeException e) {
            throw new IllegalStateException("Ferry cannot read field " + name + " of Flink's "
                    + declaring.getSimpleName() + " in a loaded plan: " + e, e);
        }
    }
}
