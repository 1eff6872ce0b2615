package io.ferrystream.ferry.planner;

import org.apache.calcite.plan.RelOptCluster;
import org.apache.calcite.plan.RelTraitSet;
import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.RelWriter;
import org.apache.calcite.rel.core.AggregateCall;
import org.apache.calcite.rel.hint.RelHint;
import org.apache.calcite.rel.type.RelDataType;
import org.apache.flink.table.planner.plan.PartialFinalType;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalGroupAggregate;

import java.util.List;
import java.util.Objects;

import scala.collection.Seq;

/**
 * Flink's single-phase GROUP BY node that Ferry does not run, unchanged except that EXPLAIN shows
 * why ({@code ferry=[reason]}). Its ExecNode is Flink's own {@code StreamExecGroupAggregate}.
 */
public class FerryFallbackStreamPhysicalGroupAggregate extends StreamPhysicalGroupAggregate {
    private final String reason;

    public FerryFallbackStreamPhysicalGroupAggregate(
            RelOptCluster cluster,
            RelTraitSet traitSet,
            RelNode input,
            RelDataType outputRowType,
            int[] grouping,
            Seq<AggregateCall> aggCalls,
            PartialFinalType partialFinalType,
            List<RelHint> hints,
            String reason) {
        super(cluster, traitSet, input, outputRowType, grouping, aggCalls, partialFinalType, hints);
        this.reason = Objects.requireNonNull(reason);
    }

    public static FerryFallbackStreamPhysicalGroupAggregate of(StreamPhysicalGroupAggregate agg, String reason) {
        return new FerryFallbackStreamPhysicalGroupAggregate(
                agg.getCluster(),
                agg.getTraitSet(),
                agg.getInput(),
                agg.getRowType(),
                agg.grouping(),
                agg.aggCalls(),
                agg.partialFinalType(),
                agg.hints(),
                reason);
    }

    /** Why Ferry left this node to Flink. */
    public String reason() {
        return reason;
    }

    @Override
    public RelNode copy(RelTraitSet traitSet, List<RelNode> inputs) {
        return new FerryFallbackStreamPhysicalGroupAggregate(
                getCluster(),
                traitSet,
                inputs.get(0),
                getRowType(),
                grouping(),
                aggCalls(),
                partialFinalType(),
                hints(),
                reason);
    }

    @Override
    public RelWriter explainTerms(RelWriter pw) {
        return super.explainTerms(pw).item("ferry", reason);
    }

    @Override
    public String getRelTypeName() {
        return FerryStreamPhysicalGroupAggregate.REL_TYPE_NAME;
    }
}
