package io.ferrystream.ferry.planner.candidates;

import io.ferrystream.ferry.planner.NativeCandidate;
import io.ferrystream.ferry.planner.Verdict;

import org.apache.calcite.plan.RelTraitSet;
import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.RelWriter;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalLookupJoin;

import java.util.List;

/** Flink's lookup join node with Ferry's verdict ({@link NativeCandidate}). */
public final class LookupJoinCandidate extends StreamPhysicalLookupJoin implements NativeCandidate {
    private final Verdict verdict;

    public LookupJoinCandidate(StreamPhysicalLookupJoin flink, Verdict verdict) {
        super(flink.getCluster(), flink.getTraitSet(), flink.getInput(), flink.temporalTable(), flink.calcOnTemporalTable(),
                flink.joinInfo(), flink.joinType(), flink.lookupHint(), flink.upsertMaterialize(), flink.enableLookupShuffle(),
                flink.preferCustomShuffle());
        this.verdict = verdict;
    }

    @Override
    public Verdict verdict() {
        return verdict;
    }

    @Override
    public RelNode copy(RelTraitSet traitSet, List<RelNode> inputs) {
        return new LookupJoinCandidate((StreamPhysicalLookupJoin) super.copy(traitSet, inputs), verdict);
    }

    @Override
    public StreamPhysicalLookupJoin copy(boolean upsertMaterialize) {
        StreamPhysicalLookupJoin copy = super.copy(upsertMaterialize);
        return new LookupJoinCandidate(copy, verdict.ofCopy(copy));
    }

    @Override
    public RelWriter explainTerms(RelWriter pw) {
        return verdict.explain(this, super.explainTerms(pw));
    }

    @Override
    public String getRelTypeName() {
        return StreamPhysicalLookupJoin.class.getSimpleName();
    }

    @Override
    public ExecNode<?> translateToExecNode() {
        return verdict.translate(super.translateToExecNode());
    }
}
