package io.ferrystream.ferry.planner.candidates;

import io.ferrystream.ferry.planner.NativeCandidate;
import io.ferrystream.ferry.planner.Verdict;

import org.apache.calcite.plan.RelTraitSet;
import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.RelWriter;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalRank;
import org.apache.flink.table.planner.plan.utils.RankProcessStrategy;

import java.util.List;

/**
 * Flink's rank node with Ferry's verdict ({@link NativeCandidate}), whichever exec node it
 * translates to: a deduplication or a Top-N.
 */
public final class RankCandidate extends StreamPhysicalRank implements NativeCandidate {
    private final Verdict verdict;

    public RankCandidate(StreamPhysicalRank flink, Verdict verdict) {
        super(flink.getCluster(), flink.getTraitSet(), flink.getInput(), flink.partitionKey(), flink.orderKey(),
                flink.rankType(), flink.rankRange(), flink.rankNumberType(), flink.outputRankNumber(), flink.rankStrategy(),
                flink.sortOnRowTime());
        this.verdict = verdict;
    }

    @Override
    public Verdict verdict() {
        return verdict;
    }

    @Override
    public RelNode copy(RelTraitSet traitSet, List<RelNode> inputs) {
        return new RankCandidate((StreamPhysicalRank) super.copy(traitSet, inputs), verdict);
    }

    @Override
    public StreamPhysicalRank copy(RankProcessStrategy newStrategy) {
        StreamPhysicalRank copy = super.copy(newStrategy);
        return new RankCandidate(copy, verdict.ofCopy(copy));
    }

    @Override
    public RelWriter explainTerms(RelWriter pw) {
        return verdict.explain(this, super.explainTerms(pw));
    }

    @Override
    public String getRelTypeName() {
        return StreamPhysicalRank.class.getSimpleName();
    }

    @Override
    public ExecNode<?> translateToExecNode() {
        return verdict.translate(super.translateToExecNode());
    }
}
