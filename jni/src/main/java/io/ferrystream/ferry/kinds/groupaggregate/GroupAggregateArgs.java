package io.ferrystream.ferry.kinds.groupaggregate;

import org.apache.calcite.rel.core.AggregateCall;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalGroupAggregate;
import org.apache.flink.table.planner.plan.utils.AggregateUtil;
import org.apache.flink.table.planner.plan.utils.ChangelogPlanUtils;
import org.apache.flink.table.planner.utils.JavaScalaConversionUtil;
import org.apache.flink.table.types.logical.RowType;

/**
 * The arguments {@code StreamPhysicalGroupAggregate.translateToExecNode} passes to
 * {@code StreamExecGroupAggregate}, computed the same way (Flink 2.3.0), for the planner's check
 * of the spec translation will build. Valid only on the final physical plan, once the changelog
 * traits are set.
 */
final class GroupAggregateArgs {
    final int[] grouping;
    final AggregateCall[] aggCalls;
    final boolean[] aggCallNeedRetractions;
    final boolean generateUpdateBefore;
    final boolean needRetraction;
    final RowType inputType;
    final RowType outputType;

    private GroupAggregateArgs(StreamPhysicalGroupAggregate rel) {
        this.grouping = rel.grouping();
        this.aggCalls = JavaScalaConversionUtil.toJava(rel.aggCalls()).toArray(new AggregateCall[0]);
        this.aggCallNeedRetractions =
                AggregateUtil.deriveAggCallNeedRetractions(rel, grouping.length, rel.aggCalls());
        this.generateUpdateBefore = ChangelogPlanUtils.generateUpdateBefore(rel);
        this.needRetraction = !ChangelogPlanUtils.inputInsertOnly(rel);
        this.inputType = FlinkTypeFactory.toLogicalRowType(rel.getInput().getRowType());
        this.outputType = FlinkTypeFactory.toLogicalRowType(rel.getRowType());
    }

    static GroupAggregateArgs of(StreamPhysicalGroupAggregate rel) {
        return new GroupAggregateArgs(rel);
    }
}
