package io.ferrystream.ferry.kinds.deduplicate;

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
 * Flink's rank node that translates to a deduplication, with Ferry's verdict ({@link
 * NativeCandidate}).
 */
public final class DeduplicateCandidate extends StreamPhysicalRank implements NativeCandidate {
    private final Verdict verdict;

    DeduplicateCandidate(StreamPhysicalRank flink, Verdict verdict) {
        super(flink.getCluster(), flink.getTraitSet(), flink.getInput(), flink.partitionKey(), flink.orderKey(),
                flink.rankType(), flink.rankRange(), flink.rankNumberType(), flink.outputRankNumber(), flink.rankStrategy(),
                flink.sortOnRowTime());
        this.verdict = verdict;
    }

    @Override
    public Verdict verdict() {
        return verdict;
    }

    /** The exec node's description, {@code Deduplicate(keep=[…], …)}: its operator's spec name. */
    @Override
    public String nativeDescription() {
        return DeduplicateKind.description(this);
    }

    @Override
    public RelNode copy(RelTraitSet traitSet, List<RelNode> inputs) {
        return new DeduplicateCandidate((StreamPhysicalRank) super.copy(traitSet, inputs), verdict);
    }

    @Override
    public StreamPhysicalRank copy(RankProcessStrategy newStrategy) {
        return new DeduplicateCandidate(super.copy(newStrategy), verdict);
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
