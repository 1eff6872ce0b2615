package io.ferrystream.ferry.planner.candidates;

import io.ferrystream.ferry.planner.FlinkFields;
import io.ferrystream.ferry.planner.NativeCandidate;
import io.ferrystream.ferry.planner.Verdict;

import org.apache.calcite.plan.RelTraitSet;
import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.RelWriter;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalGlobalGroupAggregate;

import java.util.List;

import scala.Option;

/** Flink's global aggregate node of a two-phase GROUP BY with Ferry's verdict ({@link NativeCandidate}). */
public final class GlobalGroupAggregateCandidate extends StreamPhysicalGlobalGroupAggregate implements NativeCandidate {
    private final Verdict verdict;

    public GlobalGroupAggregateCandidate(StreamPhysicalGlobalGroupAggregate flink, Verdict verdict) {
        super(flink.getCluster(), flink.getTraitSet(), flink.getInput(), flink.getRowType(), flink.grouping(),
                flink.aggCalls(), flink.aggCallNeedRetractions(), flink.localAggInputRowType(), flink.needRetraction(),
                flink.partialFinalType(), indexOfCountStar(flink), flink.hints());
        this.verdict = verdict;
    }

    /** Flink's indexOfCountStar of a global aggregate node, as it was given (not derived). */
    public static Option<Object> indexOfCountStar(StreamPhysicalGlobalGroupAggregate agg) {
        return FlinkFields.read(agg, StreamPhysicalGlobalGroupAggregate.class, "indexOfCountStar");
    }

    /** indexOfCountStar as StreamExecGlobalGroupAggregate takes it: an Integer or null. */
    public static Integer indexOfCountStarOrNull(StreamPhysicalGlobalGroupAggregate agg) {
        Option<Object> i = indexOfCountStar(agg);
        return i.isDefined() ? (Integer) i.get() : null;
    }

    @Override
    public Verdict verdict() {
        return verdict;
    }

    @Override
    public RelNode copy(RelTraitSet traitSet, List<RelNode> inputs) {
        return new GlobalGroupAggregateCandidate((StreamPhysicalGlobalGroupAggregate) super.copy(traitSet, inputs), verdict);
    }

    @Override
    public RelWriter explainTerms(RelWriter pw) {
        return verdict.explain(this, super.explainTerms(pw));
    }

    @Override
    public String getRelTypeName() {
        return StreamPhysicalGlobalGroupAggregate.class.getSimpleName();
    }

    @Override
    public ExecNode<?> translateToExecNode() {
        return verdict.translate(super.translateToExecNode());
    }
}
