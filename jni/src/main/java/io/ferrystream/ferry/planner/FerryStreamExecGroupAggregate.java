package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.operators.FerryGroupAggregateOperator;
import io.ferrystream.ferry.operators.GroupAggregateSpec;

import org.apache.calcite.rel.core.AggregateCall;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.planner.delegation.PlannerBase;
import org.apache.flink.table.planner.plan.nodes.exec.ExecEdge;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNodeConfig;
import org.apache.flink.table.planner.plan.nodes.exec.InputProperty;
import org.apache.flink.table.planner.plan.nodes.exec.StateMetadata;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecGroupAggregate;
import org.apache.flink.table.planner.plan.utils.MinibatchUtil;
import org.apache.flink.table.types.logical.RowType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.annotation.JsonIgnore;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.annotation.Nullable;

import java.util.List;
import java.util.Optional;

/**
 * Flink's {@link StreamExecGroupAggregate} translated to {@link FerryGroupAggregateOperator}.
 *
 * <p>It is built with Flink's public convenience constructor, so its JSON type, persisted
 * configuration and state metadata are Flink's; a compiled plan therefore records a plain
 * {@code stream-exec-group-aggregate_1}. The fields are private in Flink's class, so this class
 * keeps its own copies. The transformation keeps Flink's parallelism, state key selector and key
 * type (Flink's exchange and key groups stay valid) and Flink's transformation name, so its UID
 * and operator ID are the ones Flink's operator would get: a savepoint of either reaches the
 * other, where a guard refuses what it cannot read (docs/state.md). Only the display name says
 * Ferry.
 *
 * <p>Translation re-checks what the planner checked (options, mini-batch, Go's verdict on the
 * exact spec); should anything have changed since planning, it builds Flink's operator instead.
 */
public class FerryStreamExecGroupAggregate extends StreamExecGroupAggregate {
    private static final Logger LOG = LoggerFactory.getLogger(FerryStreamExecGroupAggregate.class);

    @JsonIgnore private final int[] grouping;
    @JsonIgnore private final AggregateCall[] aggCalls;
    @JsonIgnore private final boolean[] aggCallNeedRetractions;
    @JsonIgnore private final boolean generateUpdateBefore;
    @JsonIgnore private final boolean needRetraction;
    @JsonIgnore private final List<StateMetadata> stateMetadata;
    /** Set when translation fell back to Flink's operator. */
    @JsonIgnore private String fallbackReason;

    public FerryStreamExecGroupAggregate(
            ReadableConfig tableConfig,
            int[] grouping,
            AggregateCall[] aggCalls,
            boolean[] aggCallNeedRetractions,
            boolean generateUpdateBefore,
            boolean needRetraction,
            @Nullable Long stateTtlFromHint,
            InputProperty inputProperty,
            RowType outputType,
            String description) {
        super(
                tableConfig,
                grouping,
                aggCalls,
                aggCallNeedRetractions,
                generateUpdateBefore,
                needRetraction,
                stateTtlFromHint,
                inputProperty,
                outputType,
                description);
        this.grouping = grouping.clone();
        this.aggCalls = aggCalls.clone();
        this.aggCallNeedRetractions = aggCallNeedRetractions.clone();
        this.generateUpdateBefore = generateUpdateBefore;
        this.needRetraction = needRetraction;
        // exactly what the super constructor stores as its stateMetadataList
        this.stateMetadata =
                StateMetadata.getOneInputOperatorDefaultMeta(stateTtlFromHint, tableConfig, STATE_NAME);
    }

    /** Why translation built Flink's operator after all; empty when it built Ferry's. */
    @JsonIgnore
    public Optional<String> fallbackReason() {
        return Optional.ofNullable(fallbackReason);
    }

    @Override
    protected String getSimplifiedName() {
        return fallbackReason == null ? "FerryGroupAggregate" : "GroupAggregate";
    }

    @SuppressWarnings("unchecked")
    @Override
    protected Transformation<RowData> translateToPlanInternal(PlannerBase planner, ExecNodeConfig config) {
        final ExecEdge inputEdge = getInputEdges().get(0);
        final RowType inputRowType = (RowType) inputEdge.getOutputType();
        final long stateRetentionTime =
                GroupAggregateMatcher.effectiveStateTtlMs(
                        StateMetadata.getStateTtlForOneInputOperator(config, stateMetadata),
                        planner.getTypeFactory(),
                        inputRowType,
                        aggCalls,
                        aggCallNeedRetractions,
                        needRetraction,
                        config);

        String reason = NativeMatcher.disabledReason(config, GroupAggregateMatcher.ENABLED);
        GroupAggregateSpec spec = null;
        if (reason == null) {
            spec =
                    GroupAggregateSpecs.build(
                            getDescription(),
                            inputRowType,
                            (RowType) getOutputType(),
                            grouping,
                            aggCalls,
                            aggCallNeedRetractions,
                            needRetraction,
                            generateUpdateBefore,
                            stateRetentionTime,
                            MinibatchUtil.isMiniBatchEnabled(config));
            reason = NativeSupport.check(spec, (RowType) getOutputType()).orElse(null);
        }
        if (reason != null) {
            fallbackReason = reason;
            LOG.warn("Ferry: {} changed since planning ({}); using Flink's operator", getDescription(), reason);
            return super.translateToPlanInternal(planner, config);
        }

        final Transformation<RowData> inputTransform = (Transformation<RowData>) inputEdge.translateToPlan(planner);
        // Mini-batch: a batch is a bundle of Flink's count trigger, cut by size, watermark, barrier
        final FerryGroupAggregateOperator operator =
                new FerryGroupAggregateOperator(
                        spec, (RowType) getOutputType(), NativeExecNodes.batching(config, spec.miniBatch()));
        operator.importingFlinkState(FlinkAccStates.singlePhase(planner.getTypeFactory(), inputRowType, grouping,
                aggCalls, aggCallNeedRetractions, needRetraction, stateRetentionTime));
        return NativeExecNodes.keyedTransformation(planner, inputTransform,
                createTransformationMeta(GROUP_AGGREGATE_TRANSFORMATION, config), operator, (RowType) getOutputType(), grouping, inputRowType);
    }
}
