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
import org.apache.flink.table.planner.plan.nodes.exec.ExecNodeContext;
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
 * The same check decides for a plan loaded from JSON, where this node replaces Flink's
 * ({@link LoadedPlans}).
 */
public class FerryStreamExecGroupAggregate extends StreamExecGroupAggregate {
    private static final Logger LOG = LoggerFactory.getLogger(FerryStreamExecGroupAggregate.class);

    // Copies of Flink's private fields, named apart from them: a field of the same name, even one
    // Jackson ignores, hides Flink's JSON property, and COMPILE PLAN would leave it out.
    @JsonIgnore private final int[] flinkGrouping;
    @JsonIgnore private final AggregateCall[] flinkAggCalls;
    @JsonIgnore private final boolean[] flinkAggCallNeedRetractions;
    @JsonIgnore private final boolean flinkGenerateUpdateBefore;
    @JsonIgnore private final boolean flinkNeedRetraction;
    @JsonIgnore private final List<StateMetadata> flinkStateMetadata;
    /** Set when translation fell back to Flink's operator. */
    @JsonIgnore private String fallbackReason;

    public FerryStreamExecGroupAggregate(
            ReadableConfig tableConfig,
            int[] flinkGrouping,
            AggregateCall[] flinkAggCalls,
            boolean[] flinkAggCallNeedRetractions,
            boolean flinkGenerateUpdateBefore,
            boolean flinkNeedRetraction,
            @Nullable Long stateTtlFromHint,
            InputProperty inputProperty,
            RowType outputType,
            String description) {
        super(
                tableConfig,
                flinkGrouping,
                flinkAggCalls,
                flinkAggCallNeedRetractions,
                flinkGenerateUpdateBefore,
                flinkNeedRetraction,
                stateTtlFromHint,
                inputProperty,
                outputType,
                description);
        this.flinkGrouping = flinkGrouping.clone();
        this.flinkAggCalls = flinkAggCalls.clone();
        this.flinkAggCallNeedRetractions = flinkAggCallNeedRetractions.clone();
        this.flinkGenerateUpdateBefore = flinkGenerateUpdateBefore;
        this.flinkNeedRetraction = flinkNeedRetraction;
        // exactly what the super constructor stores as its stateMetadataList
        this.flinkStateMetadata =
                StateMetadata.getOneInputOperatorDefaultMeta(stateTtlFromHint, tableConfig, STATE_NAME);
    }

    /**
     * The node in place of a node of a plan loaded from JSON ({@link LoadedPlans}): the plan's id,
     * context, persisted configuration and state metadata, so the UID is the plan's.
     */
    FerryStreamExecGroupAggregate(
            int id,
            ExecNodeContext context,
            ReadableConfig persistedConfig,
            int[] flinkGrouping,
            AggregateCall[] flinkAggCalls,
            boolean[] flinkAggCallNeedRetractions,
            boolean flinkGenerateUpdateBefore,
            boolean flinkNeedRetraction,
            List<StateMetadata> stateMetadataList,
            List<InputProperty> inputProperties,
            RowType outputType,
            String description) {
        super(id, context, persistedConfig, flinkGrouping, flinkAggCalls, flinkAggCallNeedRetractions, flinkGenerateUpdateBefore,
                flinkNeedRetraction, stateMetadataList, inputProperties, outputType, description);
        this.flinkGrouping = flinkGrouping.clone();
        this.flinkAggCalls = flinkAggCalls.clone();
        this.flinkAggCallNeedRetractions = flinkAggCallNeedRetractions.clone();
        this.flinkGenerateUpdateBefore = flinkGenerateUpdateBefore;
        this.flinkNeedRetraction = flinkNeedRetraction;
        this.flinkStateMetadata = stateMetadataList;
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
                        StateMetadata.getStateTtlForOneInputOperator(config, flinkStateMetadata),
                        planner.getTypeFactory(),
                        inputRowType,
                        flinkAggCalls,
                        flinkAggCallNeedRetractions,
                        flinkNeedRetraction,
                        config);

        String reason = NativeMatcher.disabledReason(config, GroupAggregateMatcher.ENABLED);
        if (reason == null) { // what the matcher checked; a plan loaded from JSON is decided here only
            reason = TwoPhaseAggregates.callsReason(flinkAggCalls);
        }
        if (reason == null) {
            reason = GroupAggregateMatcher.typeReason(inputRowType, (RowType) getOutputType(), flinkGrouping, flinkAggCalls);
        }
        GroupAggregateSpec spec = null;
        if (reason == null) {
            spec =
                    GroupAggregateSpecs.build(
                            getDescription(),
                            inputRowType,
                            (RowType) getOutputType(),
                            flinkGrouping,
                            flinkAggCalls,
                            flinkAggCallNeedRetractions,
                            flinkNeedRetraction,
                            flinkGenerateUpdateBefore,
                            stateRetentionTime,
                            MinibatchUtil.isMiniBatchEnabled(config));
            reason = NativeSupport.check(spec, (RowType) getOutputType()).orElse(null);
        }
        if (reason != null) {
            fallbackReason = reason;
            LOG.warn("Ferry: {} runs Flink's operator at translation ({}): the plan was loaded from JSON, or changed since planning", getDescription(), reason);
            return super.translateToPlanInternal(planner, config);
        }

        final Transformation<RowData> inputTransform = (Transformation<RowData>) inputEdge.translateToPlan(planner);
        // Mini-batch: a batch is a bundle of Flink's count trigger, cut by size, watermark, barrier
        final FerryGroupAggregateOperator operator =
                new FerryGroupAggregateOperator(
                        spec, (RowType) getOutputType(), NativeExecNodes.batching(config, spec.miniBatch()));
        operator.importingFlinkState(FlinkAccStates.singlePhase(planner.getTypeFactory(), inputRowType, flinkGrouping,
                flinkAggCalls, flinkAggCallNeedRetractions, flinkNeedRetraction, stateRetentionTime));
        return NativeExecNodes.keyedTransformation(planner, config, inputTransform,
                createTransformationMeta(GROUP_AGGREGATE_TRANSFORMATION, config), operator, (RowType) getOutputType(), flinkGrouping, inputRowType);
    }
}
