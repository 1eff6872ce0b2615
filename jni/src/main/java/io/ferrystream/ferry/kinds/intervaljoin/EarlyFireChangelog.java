package io.ferrystream.ferry.kinds.intervaljoin;

import io.ferrystream.ferry.planner.Verdict;
import io.ferrystream.ferry.planner.candidates.IntervalJoinCandidate;

import org.apache.calcite.rel.RelNode;
import org.apache.flink.table.api.TableException;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalCalc;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalExchange;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalSink;
import org.apache.flink.table.planner.plan.trait.ModifyKind;
import org.apache.flink.table.planner.plan.trait.ModifyKindSet;
import org.apache.flink.table.planner.plan.trait.ModifyKindSetTrait;
import org.apache.flink.table.planner.plan.trait.UpdateKindTrait;
import org.apache.flink.types.RowKind;

import java.util.ArrayList;
import java.util.List;

/**
 * The changelog an {@code EARLY_FIRE} outer interval join produces, in the plan: Flink 2.3's
 * changelog inference ran before Ferry's program and saw an insert-only join, so Ferry marks the
 * join and the nodes above it as producing {@code INSERT} and {@code UPDATE} changes with update
 * before and after ({@code changelogMode=[I,UB,UA]}: the join always emits {@code -U} before
 * {@code +U}, as master's runtime does).
 *
 * <p>Master re-runs its inference with the join producing updates; Ferry accepts only the plans
 * whose meaning that cannot change: Calc and Exchange nodes up to the root, or to a sink that
 * takes {@code -U}/{@code +U} and has no primary key (no upsert materialization to decide). A sink
 * that takes inserts only gets master's error; every other consumer a Ferry error naming it
 * (docs/operators/interval-join.md#early_fire).
 */
final class EarlyFireChangelog {
    private static final ModifyKindSetTrait INSERT_AND_UPDATE = new ModifyKindSetTrait(
            ModifyKindSet.newBuilder().addContainedKind(ModifyKind.INSERT).addContainedKind(ModifyKind.UPDATE).build());

    private static final ChangelogMode RETRACT = ChangelogMode.newBuilder()
            .addContainedKind(RowKind.INSERT)
            .addContainedKind(RowKind.UPDATE_BEFORE)
            .addContainedKind(RowKind.UPDATE_AFTER)
            .build();

    private EarlyFireChangelog() {}

    /** {@code root} with the traits of every early-fire join and the nodes above it set. */
    static RelNode apply(RelNode root) {
        return visit(root);
    }

    private static RelNode visit(RelNode node) {
        if (node instanceof IntervalJoinCandidate join && producesUpdates(join)) {
            return updating(node, node.getInputs());
        }
        List<RelNode> inputs = new ArrayList<>(node.getInputs().size());
        RelNode updatingInput = null;
        for (RelNode input : node.getInputs()) {
            RelNode n = visit(input);
            if (n != input) {
                updatingInput = n;
            }
            inputs.add(n);
        }
        if (updatingInput == null) {
            return node;
        }
        if (node instanceof StreamPhysicalCalc || node instanceof StreamPhysicalExchange) {
            return updating(node, inputs);
        }
        if (node instanceof StreamPhysicalSink) {
            checkSink((StreamPhysicalSink) node);
            return node.copy(node.getTraitSet(), inputs);
        }
        throw new TableException(node.getRelTypeName() + " consumes the updates of an outer interval join with the"
                + " EARLY_FIRE hint; Ferry runs such a join only under Calc nodes, into a sink or as the query's"
                + " result. Remove the EARLY_FIRE hint, or write the join's result into a sink and read it from"
                + " there.");
    }

    /**
     * Whether {@code join} runs with early fire and so produces updates: natively, as an interval
     * join with the hint on an outer join with a non-negative window (master ignores it elsewhere).
     */
    private static boolean producesUpdates(IntervalJoinCandidate join) {
        Verdict verdict = join.verdict();
        return verdict.isNative() && verdict.kind() instanceof IntervalJoinKind
                && EarlyFireHint.producesUpdates(join, verdict.payload());
    }

    private static RelNode updating(RelNode node, List<RelNode> inputs) {
        return node.copy(
                node.getTraitSet().replace(INSERT_AND_UPDATE).replace(UpdateKindTrait.BEFORE_AND_AFTER()), inputs);
    }

    private static void checkSink(StreamPhysicalSink sink) {
        String name = "Table sink '" + sink.contextResolvedTable().getIdentifier().asSummaryString() + "'";
        ChangelogMode mode = sink.tableSink().getChangelogMode(RETRACT);
        if (!mode.contains(RowKind.UPDATE_AFTER)) {
            throw new TableException(name + " is insert-only, but the EARLY_FIRE hint makes this outer interval join"
                    + " produce update changes (a padded row is emitted speculatively and later corrected on a"
                    + " match). Remove the EARLY_FIRE hint, or write into a downstream/sink that accepts update"
                    + " changes.");
        }
        if (!mode.contains(RowKind.UPDATE_BEFORE)
                || sink.contextResolvedTable().getResolvedSchema().getPrimaryKey().isPresent()) {
            throw new TableException(name + " takes upserts (it has a primary key or drops UPDATE_BEFORE); Ferry feeds"
                    + " the updates of an outer interval join with the EARLY_FIRE hint only into sinks that take"
                    + " retractions (-U, +U) without a primary key.");
        }
    }
}
