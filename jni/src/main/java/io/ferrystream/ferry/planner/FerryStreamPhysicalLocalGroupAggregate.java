package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.operators.LocalGroupAggregateSpec;

import org.apache.calcite.plan.RelOptCluster;
import org.apache.calcite.plan.RelTraitSet;
import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.RelWriter;
import org.apache.calcite.rel.core.AggregateCall;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.plan.PartialFinalType;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.exec.InputProperty;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalLocalGroupAggregate;
import org.apache.flink.table.planner.utils.JavaScalaConversionUtil;
import org.apache.flink.table.planner.utils.ShortcutUtils;

import javax.annotation.Nullable;

import java.util.List;
import java.util.Objects;
import java.util.Optional;

import scala.collection.Seq;

/**
 * Flink's local aggregate node of a two-phase plan as Ferry's optimizer program leaves it: the
 * same rel plus {@code ferry=[native]}, translating to {@link FerryStreamExecLocalGroupAggregate};
 * or, staying Flink's, plus {@code ferry=[reason]}, translating to Flink's {@code
 * StreamExecLocalGroupAggregate}. Flink's node keeps its retraction flags in private fields;
 * this one keeps copies (read once by {@link #of}).
 */
public class FerryStreamPhysicalLocalGroupAggregate extends StreamPhysicalLocalGroupAggregate implements NativeCandidate {
    /** Flink's own name, so EXPLAIN prints {@code LocalGroupAggregate(...)}. */
    static final String REL_TYPE_NAME = "StreamPhysicalLocalGroupAggregate";

    private final boolean[] aggCallNeedRetractions;
    private final boolean needRetraction;
    @Nullable private final String fallbackReason;

    public FerryStreamPhysicalLocalGroupAggregate(
            RelOptCluster cluster,
            RelTraitSet traitSet,
            RelNode input,
            int[] grouping,
            Seq<AggregateCall> aggCalls,
            boolean[] aggCallNeedRetractions,
            boolean needRetraction,
            PartialFinalType partialFinalType,
            @Nullable String fallbackReason) {
        super(cluster, traitSet, input, grouping, aggCalls, aggCallNeedRetractions, needRetraction, partialFinalType);
        this.aggCallNeedRetractions = aggCallNeedRetractions.clone();
        this.needRetraction = needRetraction;
        this.fallbackReason = fallbackReason;
    }

    /** The Ferry twin of Flink's node: native. */
    public static FerryStreamPhysicalLocalGroupAggregate of(StreamPhysicalLocalGroupAggregate agg) {
        return of(agg, null);
    }

    /** Flink's node, unchanged but for {@code reason} in EXPLAIN. */
    public static FerryStreamPhysicalLocalGroupAggregate fallback(StreamPhysicalLocalGroupAggregate agg, String reason) {
        return of(agg, Objects.requireNonNull(reason));
    }

    private static FerryStreamPhysicalLocalGroupAggregate of(StreamPhysicalLocalGroupAggregate agg, @Nullable String reason) {
        return new FerryStreamPhysicalLocalGroupAggregate(
                agg.getCluster(),
                agg.getTraitSet(),
                agg.getInput(),
                agg.grouping(),
                agg.aggCalls(),
                aggCallNeedRetractions(agg),
                needRetraction(agg),
                agg.partialFinalType(),
                reason);
    }

    /** Flink's aggCallNeedRetractions of a local aggregate node. */
    static boolean[] aggCallNeedRetractions(StreamPhysicalLocalGroupAggregate agg) {
        if (agg instanceof FerryStreamPhysicalLocalGroupAggregate) {
            return ((FerryStreamPhysicalLocalGroupAggregate) agg).aggCallNeedRetractions.clone();
        }
        return ((boolean[]) TwoPhaseAggregates.privateField(agg, StreamPhysicalLocalGroupAggregate.class, "aggCallNeedRetractions"))
                .clone();
    }

    /** Flink's needRetraction of a local aggregate node: its input retracts. */
    static boolean needRetraction(StreamPhysicalLocalGroupAggregate agg) {
        if (agg instanceof FerryStreamPhysicalLocalGroupAggregate) {
            return ((FerryStreamPhysicalLocalGroupAggregate) agg).needRetraction;
        }
        return (Boolean) TwoPhaseAggregates.privateField(agg, StreamPhysicalLocalGroupAggregate.class, "needRetraction");
    }

    /** Why Ferry left this node to Flink; empty when it runs natively. */
    @Override
    public Optional<String> fallbackReason() {
        return Optional.ofNullable(fallbackReason);
    }

    @Override
    public String nativeKind() {
        return LocalGroupAggregateSpec.KIND;
    }

    /** The spec's name: this node's detailed description, as {@link #translateToExecNode} passes it. */
    @Override
    public String nativeDescription() {
        return getRelDetailedDescription();
    }

    /** Keeps the substitution: the inherited copy would build Flink's plain node. */
    @Override
    public RelNode copy(RelTraitSet traitSet, List<RelNode> inputs) {
        return new FerryStreamPhysicalLocalGroupAggregate(
                getCluster(),
                traitSet,
                inputs.get(0),
                grouping(),
                aggCalls(),
                aggCallNeedRetractions,
                needRetraction,
                partialFinalType(),
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

    /** What {@code StreamPhysicalLocalGroupAggregate.translateToExecNode} builds, Ferry's when native. */
    @Override
    public ExecNode<?> translateToExecNode() {
        if (fallbackReason != null) {
            return super.translateToExecNode();
        }
        return new FerryStreamExecLocalGroupAggregate(
                ShortcutUtils.unwrapTableConfig(this),
                grouping(),
                JavaScalaConversionUtil.toJava(aggCalls()).toArray(new AggregateCall[0]),
                aggCallNeedRetractions,
                needRetraction,
                InputProperty.DEFAULT,
                FlinkTypeFactory.toLogicalRowType(getRowType()),
                getRelDetailedDescription());
    }
}
