package io.ferrystream.ferry.planner.candidates;

import io.ferrystream.ferry.planner.NativeCandidate;
import io.ferrystream.ferry.planner.Verdict;

import org.apache.calcite.plan.RelTraitSet;
import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.RelWriter;
import org.apache.calcite.rel.core.Join;
import org.apache.calcite.rel.core.JoinRelType;
import org.apache.calcite.rex.RexNode;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalJoin;

/** Flink's regular join node with Ferry's verdict ({@link NativeCandidate}). */
public final class JoinCandidate extends StreamPhysicalJoin implements NativeCandidate {
    private final Verdict verdict;

    public JoinCandidate(StreamPhysicalJoin flink, Verdict verdict) {
        super(flink.getCluster(), flink.getTraitSet(), flink.getLeft(), flink.getRight(), flink.getCondition(),
                flink.getJoinType(), flink.getHints());
        this.verdict = verdict;
    }

    @Override
    public Verdict verdict() {
        return verdict;
    }

    @Override
    public Join copy(RelTraitSet traitSet, RexNode condition, RelNode left, RelNode right, JoinRelType joinType, boolean semiJoinDone) {
        return new JoinCandidate(
                (StreamPhysicalJoin) super.copy(traitSet, condition, left, right, joinType, semiJoinDone), verdict);
    }

    @Override
    public RelWriter explainTerms(RelWriter pw) {
        return verdict.explain(this, super.explainTerms(pw));
    }

    @Override
    public String getRelTypeName() {
        return StreamPhysicalJoin.class.getSimpleName();
    }

    @Override
    public ExecNode<?> translateToExecNode() {
        return verdict.translate(super.translateToExecNode());
    }
}
