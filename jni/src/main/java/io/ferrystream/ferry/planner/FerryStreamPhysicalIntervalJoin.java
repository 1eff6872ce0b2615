package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.operators.IntervalJoinSpec;

import org.apache.calcite.plan.RelOptCluster;
import org.apache.calcite.plan.RelTraitSet;
import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.RelWriter;
import org.apache.calcite.rel.core.Join;
import org.apache.calcite.rel.core.JoinRelType;
import org.apache.calcite.rex.RexNode;
import org.apache.flink.table.api.TableException;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.exec.InputProperty;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalIntervalJoin;
import org.apache.flink.table.planner.utils.ShortcutUtils;

import javax.annotation.Nullable;

import java.util.Optional;

import static org.apache.flink.table.planner.plan.nodes.exec.spec.IntervalJoinSpec.WindowBounds;

/**
 * Flink's interval join node as Ferry's optimizer program leaves it: the same rel (traits, row
 * type, EXPLAIN text) plus {@code ferry=[native]}, translating to {@link
 * FerryStreamExecIntervalJoin}; or, for a node that stays Flink's, plus {@code ferry=[reason]},
 * translating to Flink's own {@code StreamExecIntervalJoin}. Being a {@link
 * StreamPhysicalIntervalJoin}, every {@code instanceof} check and metadata handler of the planner
 * treats it as Flink's node.
 */
public class FerryStreamPhysicalIntervalJoin extends StreamPhysicalIntervalJoin implements NativeCandidate {
    /** Flink's own name, so EXPLAIN prints {@code IntervalJoin(...)}. */
    static final String REL_TYPE_NAME = "StreamPhysicalIntervalJoin";

    private final RexNode remainingCondition;
    private final WindowBounds windowBounds;
    /** Why the node stays Flink's; null when it runs natively. */
    @Nullable private final String fallbackReason;
    /** The join's {@code EARLY_FIRE} hint, or null. */
    @Nullable private final EarlyFireHint.Resolved earlyFire;

    public FerryStreamPhysicalIntervalJoin(
            RelOptCluster cluster,
            RelTraitSet traitSet,
            RelNode left,
            RelNode right,
            JoinRelType joinType,
            RexNode originalCondition,
            RexNode remainingCondition,
            WindowBounds windowBounds,
            @Nullable String fallbackReason,
            @Nullable EarlyFireHint.Resolved earlyFire) {
        super(cluster, traitSet, left, right, joinType, originalCondition, remainingCondition, windowBounds);
        this.remainingCondition = remainingCondition;
        this.windowBounds = windowBounds;
        this.fallbackReason = fallbackReason;
        this.earlyFire = earlyFire;
    }

    /**
     * The Ferry twin of Flink's node: native when {@code reason} is null. An outer join with the
     * {@code EARLY_FIRE} hint has no Flink 2.3 operator to fall back to: it fails with the reason.
     */
    static FerryStreamPhysicalIntervalJoin of(StreamPhysicalIntervalJoin join, @Nullable String reason) {
        EarlyFireHint.Resolved earlyFire = EarlyFireHint.of(join);
        if (reason != null && EarlyFireHint.producesUpdates(join, earlyFire)) {
            throw new TableException("The EARLY_FIRE hint on " + join.getRelDetailedDescription() + " needs Ferry's"
                    + " native interval join (Flink 2.3 has no early fire), which is not available for it: " + reason);
        }
        return new FerryStreamPhysicalIntervalJoin(
                join.getCluster(),
                join.getTraitSet(),
                join.getLeft(),
                join.getRight(),
                join.getJoinType(),
                join.originalCondition(),
                join.getCondition(),
                IntervalJoinSpecs.windowBounds(join),
                reason,
                earlyFire);
    }

    /**
     * Whether the join runs with early fire and so produces updates: an outer join with the hint
     * and a non-negative window (master ignores the hint elsewhere), natively.
     */
    boolean producesEarlyFireUpdates() {
        return fallbackReason == null && EarlyFireHint.producesUpdates(this, earlyFire);
    }

    @Override
    public Optional<String> fallbackReason() {
        return Optional.ofNullable(fallbackReason);
    }

    @Override
    public String nativeKind() {
        return IntervalJoinSpec.KIND;
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
        return new FerryStreamPhysicalIntervalJoin(
                getCluster(), traitSet, left, right, joinType, originalCondition(), conditionExpr, windowBounds,
                fallbackReason, earlyFire);
    }

    @Override
    public RelWriter explainTerms(RelWriter pw) {
        super.explainTerms(pw);
        if (earlyFire != null) {
            pw.item("earlyFireDelay", earlyFire.delayMs()).item("earlyFireTimeMode", earlyFire.timeMode());
        }
        return pw.item("ferry", fallbackReason == null ? "native" : fallbackReason);
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
        return new FerryStreamExecIntervalJoin(
                ShortcutUtils.unwrapTableConfig(this),
                new org.apache.flink.table.planner.plan.nodes.exec.spec.IntervalJoinSpec(joinSpec(), windowBounds),
                InputProperty.DEFAULT,
                InputProperty.DEFAULT,
                FlinkTypeFactory.toLogicalRowType(getRowType()),
                getRelDetailedDescription(),
                producesEarlyFireUpdates() ? earlyFire : null);
    }
}
