package io.ferrystream.ferry.planner;

import org.apache.calcite.plan.RelOptCluster;
import org.apache.calcite.plan.RelTraitSet;
import org.apache.calcite.rel.RelDistribution;
import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.RelWriter;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.exec.InputProperty;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalExchange;
import org.apache.flink.table.planner.utils.ShortcutUtils;

import javax.annotation.Nullable;

/**
 * Flink's hash exchange from a native producer that writes frames to a native consumer that reads
 * them, as Ferry's optimizer program leaves it ({@link ColumnarExchanges}): the same rel plus {@code
 * ferry=[columnar]}, translating to {@link ColumnarExchangeExecNode}, which carries frames instead
 * of rows; or, carrying Flink's rows, plus {@code ferry=[rows: reason]}.
 */
public final class ColumnarExchangeRel extends StreamPhysicalExchange {
    /** Flink's own name, so EXPLAIN prints {@code Exchange(...)}. */
    static final String REL_TYPE_NAME = "StreamPhysicalExchange";

    @Nullable private final String rowsReason;

    ColumnarExchangeRel(
            RelOptCluster cluster, RelTraitSet traitSet, RelNode input, RelDistribution distribution, @Nullable String rowsReason) {
        super(cluster, traitSet, input, distribution);
        this.rowsReason = rowsReason;
    }

    /** Why the exchange carries Flink's rows; null when it carries frames. */
    @Nullable
    String rowsReason() {
        return rowsReason;
    }

    @Override
    public StreamPhysicalExchange copy(RelTraitSet traitSet, RelNode newInput, RelDistribution newDistribution) {
        return new ColumnarExchangeRel(getCluster(), traitSet, newInput, newDistribution, rowsReason);
    }

    @Override
    public RelWriter explainTerms(RelWriter pw) {
        return super.explainTerms(pw).item("ferry", rowsReason == null ? "columnar" : "rows: " + rowsReason);
    }

    @Override
    public String getRelTypeName() {
        return REL_TYPE_NAME;
    }

    @Override
    public ExecNode<?> translateToExecNode() {
        if (rowsReason != null) {
            return super.translateToExecNode();
        }
        return new ColumnarExchangeExecNode(
                ShortcutUtils.unwrapTableConfig(this),
                InputProperty.builder().requiredDistribution(getRequiredDistribution()).build(),
                FlinkTypeFactory.toLogicalRowType(getRowType()),
                getRelDetailedDescription());
    }
}
