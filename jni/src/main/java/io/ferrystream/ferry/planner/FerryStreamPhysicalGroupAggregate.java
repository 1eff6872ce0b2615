package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.operators.GroupAggregateSpec;

import org.apache.calcite.plan.RelOptCluster;
import org.apache.calcite.plan.RelTraitSet;
import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.RelWriter;
import org.apache.calcite.rel.core.AggregateCall;
import org.apache.calcite.rel.hint.RelHint;
import org.apache.calcite.rel.type.RelDataType;
import org.apache.flink.table.planner.plan.PartialFinalType;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.exec.InputProperty;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalGroupAggregate;
import org.apache.flink.table.planner.utils.ShortcutUtils;

import javax.annotation.Nullable;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

import scala.collection.Seq;

/**
 * Flink's single-phase GROUP BY node as Ferry's optimizer program leaves it: the same rel (same
 * traits, row type, EXPLAIN text) plus {@code ferry=[native]}, translating to {@link
 * FerryStreamExecGroupAggregate}; or, for a node that stays Flink's, plus {@code ferry=[reason]},
 * translating to Flink's own {@code StreamExecGroupAggregate}. Being a {@link
 * StreamPhysicalGroupAggregate}, every {@code instanceof} check and metadata handler of the
 * planner treats it as Flink's node.
 */
public class FerryStreamPhysicalGroupAggregate extends StreamPhysicalGroupAggregate implements NativeCandidate {
    /** Flink's own name, so EXPLAIN prints {@code GroupAggregate(...)} and descriptions work. */
    static final String REL_TYPE_NAME = "StreamPhysicalGroupAggregate";

    /** Why the node stays Flink's; null when it runs natively. */
    @Nullable private final String fallbackReason;

    public FerryStreamPhysicalGroupAggregate(
            RelOptCluster cluster,
            RelTraitSet traitSet,
            RelNode input,
            RelDataType outputRowType,
            int[] grouping,
            Seq<AggregateCall> aggCalls,
            PartialFinalType partialFinalType,
            List<RelHint> hints,
            @Nullable String fallbackReason) {
        super(cluster, traitSet, input, outputRowType, grouping, aggCalls, partialFinalType, hints);
        this.fallbackReason = fallbackReason;
    }

    /** The Ferry twin of Flink's node: native. */
    public static FerryStreamPhysicalGroupAggregate of(StreamPhysicalGroupAggregate agg) {
        return of(agg, null);
    }

    /** Flink's node, unchanged but for {@code reason} in EXPLAIN. */
    public static FerryStreamPhysicalGroupAggregate fallback(StreamPhysicalGroupAggregate agg, String reason) {
        return of(agg, Objects.requireNonNull(reason));
    }

    private static FerryStreamPhysicalGroupAggregate of(StreamPhysicalGroupAggregate agg, @Nullable String reason) {
        return new FerryStreamPhysicalGroupAggregate(
                agg.getCluster(),
                agg.getTraitSet(),
                agg.getInput(),
                agg.getRowType(),
                agg.grouping(),
                agg.aggCalls(),
                agg.partialFinalType(),
                agg.hints(),
                reason);
    }

    /** Why Ferry left this node to Flink; empty when it runs natively. */
    @Override
    public Optional<String> fallbackReason() {
        return Optional.ofNullable(fallbackReason);
    }

    @Override
    public String nativeKind() {
        return GroupAggregateSpec.KIND;
    }

    /** The spec's name: {@link GroupAggregateArgs#description}, this node's detailed description. */
    @Override
    public String nativeDescription() {
        return getRelDetailedDescription();
    }

    /** Keeps the substitution: the inherited copy would build Flink's plain node. */
    @Override
    public RelNode copy(RelTraitSet traitSet, List<RelNode> inputs) {
        return new FerryStreamPhysicalGroupAggregate(
                getCluster(),
                traitSet,
                inputs.get(0),
                getRowType(),
                grouping(),
                aggCalls(),
                partialFinalType(),
                hints(),
                fallbackReason);
    }

    @Override
    public RelWriter explainTerms(RelWriter pw) {
        return super.explainTerms(pw).item("ferry", fallbackReason == null ? "native" : fallbackReason);
    }

    @Override
    public String getRelTypeName() {
        return REL_TYPE_NAME;
    }

    /**
     * What {@code StreamPhysicalGroupAggregate.translateToExecNode} computes, for Ferry's exec
     * node; Flink's own for a fallback.
     */
    @Override
    public ExecNode<?> translateToExecNode() {
        if (fallbackReason != null) {
            return super.translateToExecNode();
        }
        GroupAggregateArgs args = GroupAggregateArgs.of(this);
        return new FerryStreamExecGroupAggregate(
                ShortcutUtils.unwrapTableConfig(this),
                args.grouping,
                args.aggCalls,
                args.aggCallNeedRetractions,
                args.generateUpdateBefore,
                args.needRetraction,
                args.stateTtlFromHint,
                InputProperty.DEFAULT,
                args.outputType,
                args.description);
    }
}
