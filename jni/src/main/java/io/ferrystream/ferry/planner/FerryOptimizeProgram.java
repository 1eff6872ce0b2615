package io.ferrystream.ferry.planner;

import org.apache.calcite.rel.RelNode;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalRel;
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
 * final physical plan bottom-up and replaces every candidate node: a supported one by its Ferry
 * twin, an unsupported one by a fallback twin that only adds the reason to EXPLAIN. Candidates
 * are the nodes of exactly the class a registered kind's matcher takes ({@link NativeKinds}; not
 * subclasses, so Ferry's own nodes are never matched again). Shared sub-trees stay shared. A node whose matching throws keeps Flink's operator, with the error as
 * its reason: Ferry never fails a query Flink could run.
 *
 * <p>Then the changelog of the outer interval joins with the {@code EARLY_FIRE} hint (updates)
 * goes into the plan's traits: {@link EarlyFireChangelog}.
 *
 * <p>Sub-plan reuse needs no per-instance digest: Ferry nodes print {@code ferry=[...]}, so they
 * never share a digest with Flink's nodes, and two Ferry nodes with equal digests (same input, row
 * type, changelog traits, hints, configuration) get the same decision and build the same operator,
 * so merging them is exactly as correct as Flink merging its own.
 */
public final class FerryOptimizeProgram implements FlinkOptimizeProgram<StreamOptimizeContext> {
    private static final Logger LOG = LoggerFactory.getLogger(FerryOptimizeProgram.class);

    /** Where this thread's optimized plans go while a {@link Ferry.PlanCapture} is open; null otherwise. */
    static final ThreadLocal<List<RelNode>> CAPTURE = new ThreadLocal<>();

    @Override
    public RelNode optimize(RelNode root, StreamOptimizeContext context) {
        RelNode result = EarlyFireChangelog.apply(new Rewriter(context.getTableConfig()).visit(root));
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
            NativeMatcher<?> matcher = NativeKinds.forNode(result);
            if (matcher != null) {
                result = ColumnarExchanges.apply(replace(matcher, result), config);
            }
            done.put(node, result);
            return result;
        }

        private <R extends StreamPhysicalRel> RelNode replace(NativeMatcher<R> matcher, RelNode node) {
            R candidate = matcher.nodeClass().cast(node);
            Decision decision;
            try {
                decision = matcher.decide(candidate, config);
            } catch (RuntimeException | LinkageError e) {
                // a LinkageError is a broken installation (e.g. Arrow's jars missing from lib/):
                // the query still runs, on Flink's operator, with the reason in EXPLAIN
                LOG.warn("Ferry: matching {} failed; Flink's operator is used", candidate.getRelDetailedDescription(), e);
                decision = Decision.fallback("planner error: " + e);
            }
            if (decision.isNative()) {
                Ferry.countNativeNode(matcher.kind());
                return matcher.nativeNode(candidate);
            }
            LOG.debug("Ferry: {} stays Flink's: {}", candidate.getRelDetailedDescription(), decision.reason());
            return matcher.fallbackNode(candidate, decision.reason());
        }
    }
}
