package io.ferrystream.ferry.planner;

import org.apache.calcite.plan.RelOptCluster;
import org.apache.calcite.plan.RelTraitSet;
import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.RelWriter;
import org.apache.calcite.rel.core.AggregateCall;
import org.apache.calcite.rel.hint.RelHint;
import org.apache.calcite.rel.type.RelDataType;
import org.apache.flink.table.planner.plan.PartialFinalType;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.exec.InputProperty;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalGroupAggregate;
import org.apache.flink.table.planner.utils.ShortcutUtils;

import java.util.List;

import scala.collection.Seq;

/**
 * Flink's single-phase GROUP BY node, run by Ferry: the same rel (same traits, row type, EXPLAIN
 * text plus {@code ferry=[native]}) whose ExecNode is {@link FerryStreamExecGroupAggregate}.
 * Being a {@link StreamPhysicalGroupAggregate}, every {@code instanceof} check and metadata
 * handler of the planner treats it as Flink's node.
 */
public class FerryStreamPhysicalGroupAggregate extends StreamPhysicalGroupAggregate {
    /** Flink's own name, so EXPLAIN prints {@code GroupAggregate(...)} and descriptions work. */
    static final String REL_TYPE_NAME = "StreamPhysicalGroupAggregate";

    public FerryStreamPhysicalGroupAggregate(
            RelOptCluster cluster,
            RelTraitSet traitSet,
            RelNode input,
            RelDataType outputRowType,
            int[] grouping,
            Seq<AggregateCall> aggCalls,
            PartialFinalType partialFinalType,
            List<RelHint> hints) {
        super(cluster, traitSet, input, outputRowType, grouping, aggCalls, partialFinalType, hints);
    }

    /** The Ferry twin of Flink's node. */
    public static FerryStreamPhysicalGroupAggregate of(StreamPhysicalGroupAggregate agg) {
        return new FerryStreamPhysicalGroupAggregate(
                agg.getCluster(),
                agg.getTraitSet(),
                agg.getInput(),
                agg.getRowType(),
                agg.grouping(),
                agg.aggCalls(),
                agg.partialFinalType(),
                agg.hints());
    }

    /** Keeps the substitution: the inherited copy would build Flink's plain node. */
    @Override
    public RelNode copy(RelTraitSet traitSet, List<RelNode> inputs) {
        return new FerryStreamPhysicalGroupAggregate(
                getCluster(),
                traitSet,
                inputs.get(0),
                getRowType(),
                grouping(),
                aggCalls(),
                partialFinalType(),
                hints());
    }

    @Override
    public RelWriter explainTerms(RelWriter pw) {
        return super.explainTerms(pw).item("ferry", "native");
    }

    @Override
    public String getRelTypeName() {
        return REL_TYPE_NAME;
    }

    /** What {@code StreamPhysicalGroupAggregate.translateToExecNode} computes, for Ferry's node. */
    @Override
    public ExecNode<?> translateToExecNode() {
        GroupAggregateArgs args = GroupAggregateArgs.of(this);
        return new FerryStreamExecGroupAggregate(
                ShortcutUtils.unwrapTableConfig(this),
                args.grouping,
                args.aggCalls,
                args.aggCallNeedRetractions,
                args.generateUpdateBefore,
                args.needRetraction,
                args.stateTtlFromHint,
                InputProperty.DEFAULT,
                args.outputType,
                args.description);
    }
}
