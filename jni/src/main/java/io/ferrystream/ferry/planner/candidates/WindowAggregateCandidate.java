package io.ferrystream.ferry.planner.candidates;

import io.ferrystream.ferry.planner.NativeCandidate;
import io.ferrystream.ferry.planner.Verdict;

import org.apache.calcite.plan.RelTraitSet;
import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.RelWriter;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalWindowAggregate;

import java.util.List;

/** Flink's single-phase window aggregate node with Ferry's verdict ({@link NativeCandidate}). */
public final class WindowAggregateCandidate extends StreamPhysicalWindowAggregate implements NativeCandidate {
    private final Verdict verdict;

    public WindowAggregateCandidate(StreamPhysicalWindowAggregate flink, Verdict verdict) {
        super(flink.getCluster(), flink.getTraitSet(), flink.getInput(), flink.grouping(), flink.aggCalls(),
                flink.windowing(), flink.namedWindowProperties());
        this.verdict = verdict;
    }

    @Override
    public Verdict verdict() {
        return verdict;
    }

    @Override
    public RelNode copy(RelTraitSet traitSet, List<RelNode> inputs) {
        return new WindowAggregateCandidate((StreamPhysicalWindowAggregate) super.copy(traitSet, inputs), verdict);
    }

    @Override
    public RelWriter explainTerms(RelWriter pw) {
        return verdict.explain(this, super.explainTerms(pw));
    }

    @Override
    public String getRelTypeName() {
        return StreamPhysicalWindowAggregate.class.getSimpleName();
    }

    @Override
    public ExecNode<?> translateToExecNode() {
        return verdict.translate(super.translateToExecNode());
    }
}
