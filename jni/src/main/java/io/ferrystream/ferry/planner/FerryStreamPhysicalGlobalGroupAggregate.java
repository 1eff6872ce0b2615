package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.operators.GlobalGroupAggregateSpec;

import org.apache.calcite.plan.RelOptCluster;
import org.apache.calcite.plan.RelTraitSet;
import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.RelWriter;
import org.apache.calcite.rel.core.AggregateCall;
import org.apache.calcite.rel.hint.RelHint;
import org.apache.calcite.rel.type.RelDataType;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.hint.StateTtlHint;
import org.apache.flink.table.planner.plan.PartialFinalType;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.exec.InputProperty;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalGlobalGroupAggregate;
import org.apache.flink.table.planner.plan.utils.ChangelogPlanUtils;
import org.apache.flink.table.planner.utils.JavaScalaConversionUtil;
import org.apache.flink.table.planner.utils.ShortcutUtils;

import javax.annotation.Nullable;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

import scala.Option;
import scala.collection.Seq;

/**
 * Flink's global aggregate node of a two-phase plan as Ferry's optimizer program leaves it: the
 * same rel plus {@code ferry=[native]}, translating to {@link FerryStreamExecGlobalGroupAggregate};
 * or, staying Flink's, plus {@code ferry=[reason]}, translating to Flink's {@code
 * StreamExecGlobalGroupAggregate}. Flink's node keeps indexOfCountStar in a private field; this
 * one keeps a copy (read once by {@link #of}).
 */
public class FerryStreamPhysicalGlobalGroupAggregate extends StreamPhysicalGlobalGroupAggregate implements NativeCandidate {
    /** Flink's own name, so EXPLAIN prints {@code GlobalGroupAggregate(...)}. */
    static final String REL_TYPE_NAME = "StreamPhysicalGlobalGroupAggregate";

    private final Option<Object> indexOfCountStar;
    @Nullable private final String fallbackReason;

    public FerryStreamPhysicalGlobalGroupAggregate(
            RelOptCluster cluster,
            RelTraitSet traitSet,
            RelNode input,
            RelDataType outputRowType,
            int[] grouping,
            Seq<AggregateCall> aggCalls,
            boolean[] aggCallNeedRetractions,
            RelDataType localAggInputRowType,
            boolean needRetraction,
            PartialFinalType partialFinalType,
            Option<Object> indexOfCountStar,
            List<RelHint> hints,
            @Nullable String fallbackReason) {
        super(cluster, traitSet, input, outputRowType, grouping, aggCalls, aggCallNeedRetractions, localAggInputRowType,
                needRetraction, partialFinalType, indexOfCountStar, hints);
        this.indexOfCountStar = indexOfCountStar;
        this.fallbackReason = fallbackReason;
    }

    /** The Ferry twin of Flink's node: native. */
    public static FerryStreamPhysicalGlobalGroupAggregate of(StreamPhysicalGlobalGroupAggregate agg) {
        return of(agg, null);
    }

    /** Flink's node, unchanged but for {@code reason} in EXPLAIN. */
    public static FerryStreamPhysicalGlobalGroupAggregate fallback(StreamPhysicalGlobalGroupAggregate agg, String reason) {
        return of(agg, Objects.requireNonNull(reason));
    }

    private static FerryStreamPhysicalGlobalGroupAggregate of(StreamPhysicalGlobalGroupAggregate agg, @Nullable String reason) {
        return new FerryStreamPhysicalGlobalGroupAggregate(
                agg.getCluster(),
                agg.getTraitSet(),
                agg.getInput(),
                agg.getRowType(),
                agg.grouping(),
                agg.aggCalls(),
                agg.aggCallNeedRetractions(),
                agg.localAggInputRowType(),
                agg.needRetraction(),
                agg.partialFinalType(),
                indexOfCountStar(agg),
                agg.hints(),
                reason);
    }

    /** Flink's indexOfCountStar of a global aggregate node, as it was given (not derived). */
    @SuppressWarnings("unchecked")
    static Option<Object> indexOfCountStar(StreamPhysicalGlobalGroupAggregate agg) {
        if (agg instanceof FerryStreamPhysicalGlobalGroupAggregate) {
            return ((FerryStreamPhysicalGlobalGroupAggregate) agg).indexOfCountStar;
        }
        return (Option<Object>) TwoPhaseAggregates.privateField(agg, StreamPhysicalGlobalGroupAggregate.class, "indexOfCountStar");
    }

    /** indexOfCountStar as StreamExecGlobalGroupAggregate takes it: an Integer or null. */
    static Integer indexOfCountStarOrNull(StreamPhysicalGlobalGroupAggregate agg) {
        Option<Object> i = indexOfCountStar(agg);
        return i.isDefined() ? (Integer) i.get() : null;
    }

    /** Why Ferry left this node to Flink; empty when it runs natively. */
    @Override
    public Optional<String> fallbackReason() {
        return Optional.ofNullable(fallbackReason);
    }

    @Override
    public String nativeKind() {
        return GlobalGroupAggregateSpec.KIND;
    }

    /** The spec's name: this node's detailed description, as {@link #translateToExecNode} passes it. */
    @Override
    public String nativeDescription() {
        return getRelDetailedDescription();
    }

    /** Keeps the substitution: the inherited copy would build Flink's plain node. */
    @Override
    public RelNode copy(RelTraitSet traitSet, List<RelNode> inputs) {
        return new FerryStreamPhysicalGlobalGroupAggregate(
                getCluster(),
                traitSet,
                inputs.get(0),
                getRowType(),
                grouping(),
                aggCalls(),
                aggCallNeedRetractions(),
                localAggInputRowType(),
                needRetraction(),
                partialFinalType(),
                indexOfCountStar,
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

    /** What {@code StreamPhysicalGlobalGroupAggregate.translateToExecNode} builds, Ferry's when native. */
    @Override
    public ExecNode<?> translateToExecNode() {
        if (fallbackReason != null) {
            return super.translateToExecNode();
        }
        return new FerryStreamExecGlobalGroupAggregate(
                ShortcutUtils.unwrapTableConfig(this),
                grouping(),
                JavaScalaConversionUtil.toJava(aggCalls()).toArray(new AggregateCall[0]),
                aggCallNeedRetractions(),
                FlinkTypeFactory.toLogicalRowType(localAggInputRowType()),
                ChangelogPlanUtils.generateUpdateBefore(this),
                needRetraction(),
                indexOfCountStarOrNull(this),
                StateTtlHint.getStateTtlFromHintOnSingleRel(hints()),
                InputProperty.DEFAULT,
                FlinkTypeFactory.toLogicalRowType(getRowType()),
                getRelDetailedDescription());
    }
}
