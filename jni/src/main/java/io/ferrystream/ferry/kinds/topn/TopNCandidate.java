package io.ferrystream.ferry.kinds.topn;

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
 * Flink's rank node that translates to a Top-N ({@code StreamExecRank}), with Ferry's verdict
 * ({@link NativeCandidate}). Its exec node's description, the native operator's spec name, is
 * Flink's: the node's detailed description ({@code Rank(strategy=[…], rankType=[ROW_NUMBER], …)},
 * {@code ferry=[native]} included), as {@code StreamPhysicalRank#translateToExecNode} gives it.
 */
public final class TopNCandidate extends StreamPhysicalRank implements NativeCandidate {
    private final Verdict verdict;

    TopNCandidate(StreamPhysicalRank flink, Verdict verdict) {
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
        return new TopNCandidate((StreamPhysicalRank) super.copy(traitSet, inputs), verdict);
    }

    @Override
    public StreamPhysicalRank copy(RankProcessStrategy newStrategy) {
        return new TopNCandidate(super.copy(newStrategy), verdict);
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
