package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.operators.IncrementalGroupAggregateSpec;

import org.apache.calcite.plan.RelOptCluster;
import org.apache.calcite.plan.RelTraitSet;
import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.RelWriter;
import org.apache.calcite.rel.core.AggregateCall;
import org.apache.calcite.rel.hint.RelHint;
import org.apache.calcite.rel.type.RelDataType;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.hint.StateTtlHint;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.exec.InputProperty;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalIncrementalGroupAggregate;
import org.apache.flink.table.planner.utils.ShortcutUtils;

import javax.annotation.Nullable;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Flink's incremental aggregate node (split DISTINCT under mini-batch) as Ferry's optimizer
 * program leaves it: the same rel plus {@code ferry=[native]}, translating to {@link
 * FerryStreamExecIncrementalGroupAggregate}; or, staying Flink's, plus {@code ferry=[reason]},
 * translating to Flink's {@code StreamExecIncrementalGroupAggregate}. Flink's node keeps most of
 * its constructor parameters in private fields; this one keeps copies ({@link Params}, read once
 * by {@link #params}).
 */
public class FerryStreamPhysicalIncrementalGroupAggregate extends StreamPhysicalIncrementalGroupAggregate
        implements NativeCandidate {
    /** Flink's own name, so EXPLAIN prints {@code IncrementalGroupAggregate(...)}. */
    static final String REL_TYPE_NAME = "StreamPhysicalIncrementalGroupAggregate";

    /** The constructor parameters of Flink's node that it does not expose. */
    record Params(
            int[] finalAggGrouping,
            AggregateCall[] finalAggCalls,
            AggregateCall[] partialOriginalAggCalls,
            boolean[] partialAggCallNeedRetractions,
            boolean partialAggNeedRetraction,
            RelDataType partialLocalAggInputRowType,
            RelDataType partialGlobalAggRowType) {}

    private final Params params;
    @Nullable private final String fallbackReason;

    public FerryStreamPhysicalIncrementalGroupAggregate(
            RelOptCluster cluster,
            RelTraitSet traitSet,
            RelNode input,
            int[] partialAggGrouping,
            AggregateCall[] partialAggCalls,
            Params p,
            List<RelHint> hints,
            @Nullable String fallbackReason) {
        super(cluster, traitSet, input, partialAggGrouping, partialAggCalls, p.finalAggGrouping(), p.finalAggCalls(),
                p.partialOriginalAggCalls(), p.partialAggCallNeedRetractions(), p.partialAggNeedRetraction(),
                p.partialLocalAggInputRowType(), p.partialGlobalAggRowType(), hints);
        this.params = p;
        this.fallbackReason = fallbackReason;
    }

    /** The Ferry twin of Flink's node: native. */
    public static FerryStreamPhysicalIncrementalGroupAggregate of(StreamPhysicalIncrementalGroupAggregate agg) {
        return of(agg, null);
    }

    /** Flink's node, unchanged but for {@code reason} in EXPLAIN. */
    public static FerryStreamPhysicalIncrementalGroupAggregate fallback(StreamPhysicalIncrementalGroupAggregate agg, String reason) {
        return of(agg, Objects.requireNonNull(reason));
    }

    private static FerryStreamPhysicalIncrementalGroupAggregate of(StreamPhysicalIncrementalGroupAggregate agg, @Nullable String reason) {
        return new FerryStreamPhysicalIncrementalGroupAggregate(agg.getCluster(), agg.getTraitSet(), agg.getInput(),
                agg.partialAggGrouping(), agg.partialAggCalls(), params(agg), agg.hints(), reason);
    }

    /** The parameters Flink's node was built with. */
    static Params params(StreamPhysicalIncrementalGroupAggregate agg) {
        if (agg instanceof FerryStreamPhysicalIncrementalGroupAggregate) {
            return ((FerryStreamPhysicalIncrementalGroupAggregate) agg).params;
        }
        Class<?> c = StreamPhysicalIncrementalGroupAggregate.class;
        return new Params(
                agg.grouping(), // the base class keeps the final grouping
                (AggregateCall[]) TwoPhaseAggregates.privateField(agg, c, "finalAggCalls"),
                (AggregateCall[]) TwoPhaseAggregates.privateField(agg, c, "partialOriginalAggCalls"),
                (boolean[]) TwoPhaseAggregates.privateField(agg, c, "partialAggCallNeedRetractions"),
                (Boolean) TwoPhaseAggregates.privateField(agg, c, "partialAggNeedRetraction"),
                (RelDataType) TwoPhaseAggregates.privateField(agg, c, "partialLocalAggInputRowType"),
                (RelDataType) TwoPhaseAggregates.privateField(agg, c, "partialGlobalAggRowType"));
    }

    /** Why Ferry left this node to Flink; empty when it runs natively. */
    @Override
    public Optional<String> fallbackReason() {
        return Optional.ofNullable(fallbackReason);
    }

    @Override
    public String nativeKind() {
        return IncrementalGroupAggregateSpec.KIND;
    }

    /** The spec's name: this node's detailed description, as {@link #translateToExecNode} passes it. */
    @Override
    public String nativeDescription() {
        return getRelDetailedDescription();
    }

    /** Keeps the substitution: the inherited copy would build Flink's plain node. */
    @Override
    public RelNode copy(RelTraitSet traitSet, List<RelNode> inputs) {
        return new FerryStreamPhysicalIncrementalGroupAggregate(getCluster(), traitSet, inputs.get(0), partialAggGrouping(),
                partialAggCalls(), params, hints(), fallbackReason);
    }

    @Override
    public RelWriter explainTerms(RelWriter pw) {
        return super.explainTerms(pw).item("ferry", fallbackReason == null ? "native" : fallbackReason);
    }

    @Override
    public String getRelTypeName() {
        return REL_TYPE_NAME;
    }

    /** What {@code StreamPhysicalIncrementalGroupAggregate.translateToExecNode} builds, Ferry's when native. */
    @Override
    public ExecNode<?> translateToExecNode() {
        if (fallbackReason != null) {
            return super.translateToExecNode();
        }
        return new FerryStreamExecIncrementalGroupAggregate(
                ShortcutUtils.unwrapTableConfig(this),
                partialAggGrouping(),
                params.finalAggGrouping(),
                params.partialOriginalAggCalls(),
                params.partialAggCallNeedRetractions(),
                FlinkTypeFactory.toLogicalRowType(params.partialLocalAggInputRowType()),
                params.partialAggNeedRetraction(),
                StateTtlHint.getStateTtlFromHintOnSingleRel(hints()),
                InputProperty.DEFAULT,
                FlinkTypeFactory.toLogicalRowType(getRowType()),
                getRelDetailedDescription());
    }
}
