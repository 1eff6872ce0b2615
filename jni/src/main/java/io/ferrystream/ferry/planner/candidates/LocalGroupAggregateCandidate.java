package io.ferrystream.ferry.planner.candidates;

import io.ferrystream.ferry.planner.FlinkFields;
import io.ferrystream.ferry.planner.NativeCandidate;
import io.ferrystream.ferry.planner.Verdict;

import org.apache.calcite.plan.RelTraitSet;
import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.RelWriter;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalLocalGroupAggregate;

import java.util.List;

/** Flink's local aggregate node of a two-phase GROUP BY with Ferry's verdict ({@link NativeCandidate}). */
public final class LocalGroupAggregateCandidate extends StreamPhysicalLocalGroupAggregate implements NativeCandidate {
    private final Verdict verdict;

    public LocalGroupAggregateCandidate(StreamPhysicalLocalGroupAggregate flink, Verdict verdict) {
        super(flink.getCluster(), flink.getTraitSet(), flink.getInput(), flink.grouping(), flink.aggCalls(),
                aggCallNeedRetractions(flink), needRetraction(flink), flink.partialFinalType());
        this.verdict = verdict;
    }

    /** Flink's aggCallNeedRetractions of a local aggregate node (a constructor parameter without accessor). */
    public static boolean[] aggCallNeedRetractions(StreamPhysicalLocalGroupAggregate agg) {
        return FlinkFields.<boolean[]>read(agg, StreamPhysicalLocalGroupAggregate.class, "aggCallNeedRetractions").clone();
    }

    /** Flink's needRetraction of a local aggregate node: its input retracts. */
    public static boolean needRetraction(StreamPhysicalLocalGroupAggregate agg) {
        return FlinkFields.<Boolean>read(agg, StreamPhysicalLocalGroupAggregate.class, "needRetraction");
    }

    @Override
    public Verdict verdict() {
        return verdict;
    }

    @Override
    public RelNode copy(RelTraitSet traitSet, List<RelNode> inputs) {
        return new LocalGroupAggregateCandidate((StreamPhysicalLocalGroupAggregate) super.copy(traitSet, inputs), verdict);
    }

    @Override
    public RelWriter explainTerms(RelWriter pw) {
        return verdict.explain(this, super.explainTerms(pw));
    }

    @Override
    public String getRelTypeName() {
        return StreamPhysicalLocalGroupAggregate.class.getSimpleName();
    }

    @Override
    public ExecNode<?> translateToExecNode() {
        return verdict.translate(super.translateToExecNode());
    }
}
