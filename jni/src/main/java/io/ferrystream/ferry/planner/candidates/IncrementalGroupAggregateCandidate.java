package io.ferrystream.ferry.planner.candidates;

import io.ferrystream.ferry.planner.FlinkFields;
import io.ferrystream.ferry.planner.NativeCandidate;
import io.ferrystream.ferry.planner.Verdict;

import org.apache.calcite.plan.RelTraitSet;
import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.RelWriter;
import org.apache.calcite.rel.core.AggregateCall;
import org.apache.calcite.rel.type.RelDataType;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalIncrementalGroupAggregate;

import java.util.List;

/**
 * Flink's incremental aggregate node (split DISTINCT under mini-batch) with Ferry's verdict
 * ({@link NativeCandidate}).
 */
public final class IncrementalGroupAggregateCandidate extends StreamPhysicalIncrementalGroupAggregate
        implements NativeCandidate {
    private final Verdict verdict;

    public IncrementalGroupAggregateCandidate(StreamPhysicalIncrementalGroupAggregate flink, Verdict verdict) {
        this(flink, params(flink), verdict);
    }

    private IncrementalGroupAggregateCandidate(StreamPhysicalIncrementalGroupAggregate flink, Params p, Verdict verdict) {
        super(flink.getCluster(), flink.getTraitSet(), flink.getInput(), flink.partialAggGrouping(), flink.partialAggCalls(),
                p.finalAggGrouping(), p.finalAggCalls(), p.partialOriginalAggCalls(), p.partialAggCallNeedRetractions(),
                p.partialAggNeedRetraction(), p.partialLocalAggInputRowType(), p.partialGlobalAggRowType(), flink.hints());
        this.verdict = verdict;
    }

    /** The constructor parameters of Flink's node that it does not expose. */
    public record Params(
            int[] finalAggGrouping,
            AggregateCall[] finalAggCalls,
            AggregateCall[] partialOriginalAggCalls,
            boolean[] partialAggCallNeedRetractions,
            boolean partialAggNeedRetraction,
            RelDataType partialLocalAggInputRowType,
            RelDataType partialGlobalAggRowType) {}

    /** The parameters Flink's node was built with. */
    public static Params params(StreamPhysicalIncrementalGroupAggregate agg) {
        Class<?> c = StreamPhysicalIncrementalGroupAggregate.class;
        return new Params(
                agg.grouping(), // the base class keeps the final grouping
                FlinkFields.read(agg, c, "finalAggCalls"),
                FlinkFields.read(agg, c, "partialOriginalAggCalls"),
                FlinkFields.read(agg, c, "partialAggCallNeedRetractions"),
                FlinkFields.<Boolean>read(agg, c, "partialAggNeedRetraction"),
                FlinkFields.read(agg, c, "partialLocalAggInputRowType"),
                FlinkFields.read(agg, c, "partialGlobalAggRowType"));
    }

    @Override
    public Verdict verdict() {
        return verdict;
    }

    @Override
    public RelNode copy(RelTraitSet traitSet, List<RelNode> inputs) {
        return new IncrementalGroupAggregateCandidate((StreamPhysicalIncrementalGroupAggregate) super.copy(traitSet, inputs), verdict);
    }

    @Override
    public RelWriter explainTerms(RelWriter pw) {
        return verdict.explain(this, super.explainTerms(pw));
    }

    @Override
    public String getRelTypeName() {
        return StreamPhysicalIncrementalGroupAggregate.class.getSimpleName();
    }

    @Override
    public ExecNode<?> translateToExecNode() {
        return verdict.translate(super.translateToExecNode());
    }
}
