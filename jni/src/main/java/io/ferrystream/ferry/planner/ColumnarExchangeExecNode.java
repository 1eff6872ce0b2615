package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.exchange.FerryFrame;
import io.ferrystream.ferry.exchange.FerryFrameTypeInfo;
import io.ferrystream.ferry.exchange.FerryKeyGroupPartitioner;

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.streaming.api.transformations.PartitionTransformation;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.planner.delegation.PlannerBase;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNodeConfig;
import org.apache.flink.table.planner.plan.nodes.exec.InputProperty;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecExchange;
import org.apache.flink.table.types.logical.RowType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.annotation.JsonIgnore;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Optional;

import static org.apache.flink.runtime.state.KeyGroupRangeAssignment.DEFAULT_LOWER_BOUND_MAX_PARALLELISM;

/**
 * Flink's hash exchange between two native operators carrying {@link FerryFrame}s: a {@link
 * PartitionTransformation} with {@link FerryKeyGroupPartitioner}, Flink's transformation metadata
 * and parallelism (the consumer's), as {@link StreamExecExchange} builds its own; written as JSON
 * it is Flink's exchange. Translation goes from the consumer down, so each end can still drop to
 * rows before the other is built: the consumer calls {@link #carryRows} when it falls back
 * ({@link NativeExecNode}), this node asks the producer for frames ({@link
 * NativeExecNode#writeFrames}), and builds Flink's row exchange whenever its input does not
 * deliver frames.
 */
public final class ColumnarExchangeExecNode extends StreamExecExchange {
    private static final Logger LOG = LoggerFactory.getLogger(ColumnarExchangeExecNode.class);

    /** Set when the exchange carries Flink's rows after all. */
    @JsonIgnore private String rowsReason;

    ColumnarExchangeExecNode(ReadableConfig tableConfig, InputProperty inputProperty, RowType outputType, String description) {
        super(tableConfig, inputProperty, outputType, description);
    }

    /** The display name of its transformation. */
    @Override
    protected String getSimplifiedName() {
        return "FerryColumnarExchange";
    }

    /** Why translation built Flink's row exchange after all; empty when it carries frames. */
    @JsonIgnore
    public Optional<String> rowsReason() {
        return Optional.ofNullable(rowsReason);
    }

    /** The consumer cannot read frames: the exchange carries Flink's rows. Before translation. */
    void carryRows(String reason) {
        if (rowsReason == null) {
            rowsReason = reason;
        }
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    @Override
    protected Transformation<RowData> translateToPlanInternal(PlannerBase planner, ExecNodeConfig config) {
        ExecNode<?> source = getInputEdges().get(0).getSource();
        if (rowsReason == null && source instanceof NativeExecNode) {
            ((NativeExecNode) source).writeFrames();
        }
        Transformation<?> input = getInputEdges().get(0).translateToPlan(planner);
        if (!(input.getOutputType() instanceof FerryFrameTypeInfo)) {
            if (rowsReason == null) {
                carryRows("the producer fell back at translation");
                LOG.warn("Ferry: {}: {}; using Flink's row exchange", getDescription(), rowsReason);
            }
            return super.translateToPlanInternal(planner, config);
        }
        PartitionTransformation<FerryFrame> transformation = new PartitionTransformation<>(
                (Transformation<FerryFrame>) input, new FerryKeyGroupPartitioner(DEFAULT_LOWER_BOUND_MAX_PARALLELISM));
        createTransformationMeta(EXCHANGE_TRANSFORMATION, config).fill(transformation);
        transformation.setParallelism(ExecutionConfig.PARALLELISM_DEFAULT);
        transformation.setOutputType(FerryFrameTypeInfo.INSTANCE);
        return (Transformation) transformation;
    }
}
