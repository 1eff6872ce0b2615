package io.ferrystream.ferry.kinds.intervaljoin;

import io.ferrystream.ferry.planner.NativeCandidate;
import io.ferrystream.ferry.planner.Verdict;

import org.apache.calcite.plan.RelTraitSet;
import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.RelWriter;
import org.apache.calcite.rel.core.Join;
import org.apache.calcite.rel.core.JoinRelType;
import org.apache.calcite.rex.RexNode;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalIntervalJoin;

/**
 * Flink's interval join node with Ferry's verdict ({@link NativeCandidate}); the verdict carries
 * the join's {@code EARLY_FIRE} hint, or null ({@link EarlyFireHint.Resolved}).
 */
public final class IntervalJoinCandidate extends StreamPhysicalIntervalJoin implements NativeCandidate {
    private final Verdict verdict;

    IntervalJoinCandidate(StreamPhysicalIntervalJoin flink, Verdict verdict) {
        super(flink.getCluster(), flink.getTraitSet(), flink.getLeft(), flink.getRight(), flink.getJoinType(),
                flink.originalCondition(), flink.getCondition(), IntervalJoinSpecs.windowBounds(flink));
        this.verdict = verdict;
    }

    /**
     * Whether the join runs with early fire and so produces updates: an outer join with the hint
     * and a non-negative window (master ignores the hint elsewhere), natively.
     */
    boolean producesEarlyFireUpdates() {
        return verdict.isNative() && EarlyFireHint.producesUpdates(this, verdict.payload());
    }

    @Override
    public Verdict verdict() {
        return verdict;
    }

    @Override
    public Join copy(RelTraitSet traitSet, RexNode condition, RelNode left, RelNode right, JoinRelType joinType, boolean semiJoinDone) {
        return new IntervalJoinCandidate(
                (StreamPhysicalIntervalJoin) super.copy(traitSet, condition, left, right, joinType, semiJoinDone), verdict);
    }

    @Override
    public RelWriter explainTerms(RelWriter pw) {
        return verdict.explain(this, super.explainTerms(pw));
    }

    @Override
    public String getRelTypeName() {
        return StreamPhysicalIntervalJoin.class.getSimpleName();
    }

    @Override
    public ExecNode<?> translateToExecNode() {
        return verdict.translate(super.translateToExecNode());
    }
}
