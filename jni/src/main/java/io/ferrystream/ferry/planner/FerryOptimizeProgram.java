package io.ferrystream.ferry.planner;

import org.apache.calcite.rel.RelNode;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.planner.plan.nodes.FlinkRelNode;
import org.apache.flink.table.planner.plan.optimize.program.FlinkOptimizeProgram;
import org.apache.flink.table.planner.plan.optimize.program.StreamOptimizeContext;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * The optimizer program {@link Ferry#install} appends after Flink's stream program. It walks the
 * final physical plan bottom-up and puts a candidate ({@link NativeCandidate}) in the place of
 * every node a registered kind takes ({@link NativeKinds}: nodes of exactly the kind's class, not
 * subclasses, so candidates are never decided again), native or with the reason it stays Flink's.
 * Shared sub-trees stay shared. A node whose deciding throws keeps Flink's operator, with the error
 * as its reason: Ferry never fails a query Flink could run. Between two native nodes that can use
 * it, Flink's exchange becomes Ferry's columnar one ({@link ColumnarExchanges}). Last, every kind
 * may rewrite the plan around its nodes ({@link NativeKind#rewritePlan}).
 *
 * <p>Sub-plan reuse needs no per-instance digest: candidates print {@code ferry=[...]}, so they
 * never share a digest with Flink's nodes, and two candidates with equal digests (same input, row
 * type, changelog traits, hints, configuration) get the same decision and build the same operator,
 * so merging them is exactly as correct as Flink merging its own.
 */
public final class FerryOptimizeProgram implements FlinkOptimizeProgram<StreamOptimizeContext> {
    private static final Logger LOG = LoggerFactory.getLogger(FerryOptimizeProgram.class);

    /** Where this thread's optimized plans go while a {@link Ferry.PlanCapture} is open; null otherwise. */
    static final ThreadLocal<List<RelNode>> CAPTURE = new ThreadLocal<>();

    @Override
    public RelNode optimize(RelNode root, StreamOptimizeContext context) {
        RelNode result = new Rewriter(context.getTableConfig()).visit(root);
        for (NativeKind<?, ?> kind : NativeKinds.all()) {
            result = kind.rewritePlan(result);
        }
        List<RelNode> capture = CAPTURE.get();
        if (capture != null) {
            capture.add(result);
        }
        return result;
    }

    private static final class Rewriter {
        private final ReadableConfig config;
        private final Map<RelNode, RelNode> done = new IdentityHashMap<>();

        Rewriter(ReadableConfig config) {
            this.config = config;
        }

        RelNode visit(RelNode node) {
            RelNode result = done.get(node);
            if (result != null) {
                return result;
            }
            List<RelNode> inputs = node.getInputs();
            List<RelNode> newInputs = new ArrayList<>(inputs.size());
            boolean changed = false;
            for (RelNode input : inputs) {
                RelNode n = visit(input);
                changed |= n != input;
                newInputs.add(n);
            }
            result = changed ? node.copy(node.getTraitSet(), newInputs) : node;
            NativeKind<?, ?> kind;
            try {
                kind = NativeKinds.forPhysical(result, config);
            } catch (RuntimeException | LinkageError e) {
                LOG.warn("Ferry: claiming {} failed; it stays Flink's", ((FlinkRelNode) result).getRelDetailedDescription(), e);
                kind = null;
            }
            if (kind != null) {
                result = ColumnarExchanges.apply(candidate(kind, result), config);
            }
            done.put(node, result);
            return result;
        }

        private RelNode candidate(NativeKind<?, ?> kind, RelNode node) {
            Decision decision;
            try {
                decision = kind.decideNode(node, config);
            } catch (RuntimeException | LinkageError e) {
                // a LinkageError is a broken installation (e.g. Arrow's jars missing from lib/):
                // the query still runs, on Flink's operator, with the reason in EXPLAIN
                LOG.warn("Ferry: matching {} failed; Flink's operator is used", ((FlinkRelNode) node).getRelDetailedDescription(), e);
                decision = Decision.fallback("planner error: " + e);
            }
            if (decision.isNative()) {
                Ferry.countNativeNode(kind.name());
            } else {
                LOG.debug("Ferry: {} stays Flink's: {}", ((FlinkRelNode) node).getRelDetailedDescription(), decision.reason());
            }
            return kind.candidateOf(node, decision);
        }
    }
}
