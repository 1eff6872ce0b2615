package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.operators.WindowJoinSpec;

import org.apache.calcite.plan.RelOptCluster;
import org.apache.calcite.plan.RelTraitSet;
import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.RelWriter;
import org.apache.calcite.rel.core.Join;
import org.apache.calcite.rel.core.JoinRelType;
import org.apache.calcite.rex.RexNode;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.plan.logical.WindowingStrategy;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.exec.InputProperty;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalWindowJoin;
import org.apache.flink.table.planner.utils.ShortcutUtils;

import javax.annotation.Nullable;

import java.util.Optional;

/**
 * Flink's window join node as Ferry's optimizer program leaves it: the same rel (traits, row
 * type, EXPLAIN text) plus {@code ferry=[native]}, translating to {@link
 * FerryStreamExecWindowJoin}; or, for a node that stays Flink's, plus {@code ferry=[reason]},
 * translating to Flink's own {@code StreamExecWindowJoin}.
 */
public class FerryStreamPhysicalWindowJoin extends StreamPhysicalWindowJoin implements NativeCandidate {
    /** Flink's own name, so EXPLAIN prints {@code WindowJoin(...)}. */
    static final String REL_TYPE_NAME = "StreamPhysicalWindowJoin";

    private final RexNode remainingCondition;
    /** Why the node stays Flink's; null when it runs natively. */
    @Nullable private final String fallbackReason;

    public FerryStreamPhysicalWindowJoin(
            RelOptCluster cluster,
            RelTraitSet traitSet,
            RelNode left,
            RelNode right,
            JoinRelType joinType,
            RexNode remainingCondition,
            WindowingStrategy leftWindowing,
            WindowingStrategy rightWindowing,
            @Nullable String fallbackReason) {
        super(cluster, traitSet, left, right, joinType, remainingCondition, leftWindowing, rightWindowing);
        this.remainingCondition = remainingCondition;
        this.fallbackReason = fallbackReason;
    }

    /** The Ferry twin of Flink's node: native when {@code reason} is null. */
    static FerryStreamPhysicalWindowJoin of(StreamPhysicalWindowJoin join, @Nullable String reason) {
        return new FerryStreamPhysicalWindowJoin(
                join.getCluster(),
                join.getTraitSet(),
                join.getLeft(),
                join.getRight(),
                join.getJoinType(),
                join.getCondition(),
                join.leftWindowing(),
                join.rightWindowing(),
                reason);
    }

    @Override
    public Optional<String> fallbackReason() {
        return Optional.ofNullable(fallbackReason);
    }

    @Override
    public String nativeKind() {
        return WindowJoinSpec.KIND;
    }

    @Override
    public String nativeDescription() {
        return getRelDetailedDescription();
    }

    /** Keeps the substitution: the inherited copy would build Flink's plain node. */
    @Override
    public Join copy(
            RelTraitSet traitSet,
            RexNode conditionExpr,
            RelNode left,
            RelNode right,
            JoinRelType joinType,
            boolean semiJoinDone) {
        return new FerryStreamPhysicalWindowJoin(
                getCluster(), traitSet, left, right, joinType, remainingCondition, leftWindowing(), rightWindowing(),
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

    /** What Flink's node translates to, as Ferry's exec node; Flink's own for a fallback. */
    @Override
    public ExecNode<?> translateToExecNode() {
        if (fallbackReason != null) {
            return super.translateToExecNode();
        }
        return new FerryStreamExecWindowJoin(
                ShortcutUtils.unwrapTableConfig(this),
                joinSpec(),
                leftWindowing(),
                rightWindowing(),
                InputProperty.DEFAULT,
                InputProperty.DEFAULT,
                FlinkTypeFactory.toLogicalRowType(getRowType()),
                getRelDetailedDescription());
    }
}
