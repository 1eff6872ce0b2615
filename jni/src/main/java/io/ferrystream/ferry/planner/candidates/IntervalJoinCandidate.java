package io.ferrystream.ferry.planner.candidates;

import io.ferrystream.ferry.planner.FlinkFields;
import io.ferrystream.ferry.planner.NativeCandidate;
import io.ferrystream.ferry.planner.Verdict;

import org.apache.calcite.plan.RelTraitSet;
import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.RelWriter;
import org.apache.calcite.rel.core.Join;
import org.apache.calcite.rel.core.JoinRelType;
import org.apache.calcite.rex.RexNode;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.exec.spec.IntervalJoinSpec.WindowBounds;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalIntervalJoin;

/** Flink's interval join node with Ferry's verdict ({@link NativeCandidate}). */
public final class IntervalJoinCandidate extends StreamPhysicalIntervalJoin implements NativeCandidate {
    private final Verdict verdict;

    public IntervalJoinCandidate(StreamPhysicalIntervalJoin flink, Verdict verdict) {
        super(flink.getCluster(), flink.getTraitSet(), flink.getLeft(), flink.getRight(), flink.getJoinType(),
                flink.originalCondition(), flink.getCondition(), windowBounds(flink));
        this.verdict = verdict;
    }

    /**
     * The window bounds of Flink's interval join node, a constructor parameter its Scala class keeps
     * in a private field without an accessor.
     */
    public static WindowBounds windowBounds(StreamPhysicalIntervalJoin join) {
        return FlinkFields.read(join, StreamPhysicalIntervalJoin.class, "windowBounds");
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
