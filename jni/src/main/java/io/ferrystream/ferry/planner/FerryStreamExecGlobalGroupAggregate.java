package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.operators.FerryGlobalGroupAggregateOperator;
import io.ferrystream.ferry.operators.GlobalGroupAggregateSpec;

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
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecGlobalGroupAggregate;
import org.apache.flink.table.planner.plan.nodes.exec.utils.TransformationMetadata;
import org.apache.flink.table.planner.plan.utils.MinibatchUtil;
import org.apache.flink.table.types.logical.RowType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.annotation.JsonIgnore;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.annotation.Nullable;

import java.util.List;
import java.util.Optional;

/**
 * Flink's {@link StreamExecGlobalGroupAggregate} translated to {@link
 * FerryGlobalGroupAggregateOperator}. Built with Flink's public convenience constructor (its JSON
 * type, configuration and state metadata are Flink's); Flink's fields are private, so it keeps
 * copies. The transformation keeps Flink's name ({@value #GLOBAL_GROUP_AGGREGATE_TRANSFORMATION},
 * hence Flink's UID and operator ID), output type, parallelism, state key selector and key type
 * (the flinkGrouping fields of the partial rows), so Flink's exchange and key groups stay valid.
 * Translation repeats the kill switches and Go's verdict, falling back to Flink's operator if
 * anything changed since planning; without mini-batch it is Flink's, which refuses the plan.
 */
public class FerryStreamExecGlobalGroupAggregate extends StreamExecGlobalGroupAggregate {
    private static final Logger LOG = LoggerFactory.getLogger(FerryStreamExecGlobalGroupAggregate.class);

    // Copies of Flink's private fields, named apart from them: a field of the same name, even one
    // Jackson ignores, hides Flink's JSON property, and COMPILE PLAN would leave it out.
    @JsonIgnore private final int[] flinkGrouping;
    @JsonIgnore private final AggregateCall[] flinkAggCalls;
    @JsonIgnore private final boolean[] flinkAggCallNeedRetractions;
    @JsonIgnore private final RowType flinkLocalAggInputRowType;
    @JsonIgnore private final boolean flinkGenerateUpdateBefore;
    @JsonIgnore private final boolean flinkNeedRetraction;
    @JsonIgnore @Nullable private final Integer flinkCountStarIndex;
    @JsonIgnore private final List<StateMetadata> flinkStateMetadata;
    /** Set when translation fell back to Flink's operator. */
    @JsonIgnore private String fallbackReason;

    public FerryStreamExecGlobalGroupAggregate(
            ReadableConfig tableConfig,
            int[] flinkGrouping,
            AggregateCall[] flinkAggCalls,
            boolean[] flinkAggCallNeedRetractions,
            RowType flinkLocalAggInputRowType,
            boolean flinkGenerateUpdateBefore,
            boolean flinkNeedRetraction,
            @Nullable Integer indexOfCountStar,
            @Nullable Long stateTtlFromHint,
            InputProperty inputProperty,
            RowType outputType,
            String description) {
        super(
                tableConfig,
                flinkGrouping,
                flinkAggCalls,
                flinkAggCallNeedRetractions,
                flinkLocalAggInputRowType,
                flinkGenerateUpdateBefore,
                flinkNeedRetraction,
                indexOfCountStar,
                stateTtlFromHint,
                inputProperty,
                outputType,
                description);
        this.flinkGrouping = flinkGrouping.clone();
        this.flinkAggCalls = flinkAggCalls.clone();
        this.flinkAggCallNeedRetractions = flinkAggCallNeedRetractions.clone();
        this.flinkLocalAggInputRowType = flinkLocalAggInputRowType;
        this.flinkGenerateUpdateBefore = flinkGenerateUpdateBefore;
        this.flinkNeedRetraction = flinkNeedRetraction;
        this.flinkCountStarIndex = indexOfCountStar;
        // exactly what the super constructor stores as its stateMetadataList
        this.flinkStateMetadata = StateMetadata.getOneInputOperatorDefaultMeta(stateTtlFromHint, tableConfig, STATE_NAME);
    }

    /**
     * The node in place of a node of a plan loaded from JSON ({@link LoadedPlans}): the plan's id,
     * context, persisted configuration and state metadata, so the UID is the plan's.
     */
    FerryStreamExecGlobalGroupAggregate(
            int id,
            ExecNodeContext context,
            ReadableConfig persistedConfig,
            int[] flinkGrouping,
            AggregateCall[] flinkAggCalls,
            boolean[] flinkAggCallNeedRetractions,
            RowType flinkLocalAggInputRowType,
            boolean flinkGenerateUpdateBefore,
            boolean flinkNeedRetraction,
            @Nullable Integer indexOfCountStar,
            List<StateMetadata> stateMetadataList,
            List<InputProperty> inputProperties,
            RowType outputType,
            String description) {
        super(id, context, persistedConfig, flinkGrouping, flinkAggCalls, flinkAggCallNeedRetractions, flinkLocalAggInputRowType,
                flinkGenerateUpdateBefore, flinkNeedRetraction, indexOfCountStar, stateMetadataList, inputProperties, outputType,
                description);
        this.flinkGrouping = flinkGrouping.clone();
        this.flinkAggCalls = flinkAggCalls.clone();
        this.flinkAggCallNeedRetractions = flinkAggCallNeedRetractions.clone();
        this.flinkLocalAggInputRowType = flinkLocalAggInputRowType;
        this.flinkGenerateUpdateBefore = flinkGenerateUpdateBefore;
        this.flinkNeedRetraction = flinkNeedRetraction;
        this.flinkCountStarIndex = indexOfCountStar;
        this.flinkStateMetadata = stateMetadataList;
    }

    /** Why translation built Flink's operator after all; empty when it built Ferry's. */
    @JsonIgnore
    public Optional<String> fallbackReason() {
        return Optional.ofNullable(fallbackReason);
    }

    @Override
    protected String getSimplifiedName() {
        return fallbackReason == null ? "FerryGlobalGroupAggregate" : "GlobalGroupAggregate";
    }

    @SuppressWarnings("unchecked")
    @Override
    protected Transformation<RowData> translateToPlanInternal(PlannerBase planner, ExecNodeConfig config) {
        final long stateRetentionTime = StateMetadata.getStateTtlForOneInputOperator(config, flinkStateMetadata);
        final ExecEdge inputEdge = getInputEdges().get(0);
        final RowType inputRowType = (RowType) inputEdge.getOutputType();
        final RowType outputType = (RowType) getOutputType();

        String reason = NativeMatcher.disabledReason(config, GlobalGroupAggregateMatcher.ENABLED);
        if (reason == null && !MinibatchUtil.isMiniBatchEnabled(config)) {
            reason = "table.exec.mini-batch.enabled=false: Flink refuses a two-phase plan without mini-batch";
        }
        if (reason == null) { // what the matcher checked; a plan loaded from JSON is decided here only
            reason = GlobalGroupAggregateMatcher.reason(planner.getTypeFactory(), inputRowType, outputType, flinkGrouping,
                    flinkAggCalls, flinkAggCallNeedRetractions, flinkLocalAggInputRowType, flinkNeedRetraction,
                    flinkCountStarIndex);
        }
        GlobalGroupAggregateSpec spec = null;
        if (reason == null) {
            spec = TwoPhaseAggregates.globalSpec(
                    getDescription(),
                    planner.getTypeFactory(),
                    inputRowType,
                    flinkGrouping,
                    flinkAggCalls,
                    flinkAggCallNeedRetractions,
                    flinkLocalAggInputRowType,
                    flinkNeedRetraction,
                    flinkCountStarIndex,
                    flinkGenerateUpdateBefore,
                    stateRetentionTime);
            reason = NativeSupport.check(spec, outputType).orElse(null);
        }
        if (reason != null) {
            fallbackReason = reason;
            LOG.warn("Ferry: {} runs Flink's operator at translation ({}): the plan was loaded from JSON, or changed since planning", getDescription(), reason);
            if (inputEdge.getSource() instanceof FerryStreamExecColumnarExchange) {
                ((FerryStreamExecColumnarExchange) inputEdge.getSource()).carryRows("the global aggregate fell back at translation");
            }
            return super.translateToPlanInternal(planner, config);
        }

        final Transformation<?> inputTransform = inputEdge.translateToPlan(planner);
        final TransformationMetadata meta = createTransformationMeta(GLOBAL_GROUP_AGGREGATE_TRANSFORMATION, config);
        // A batch is a bundle of Flink's count trigger (MinibatchUtil.createMiniBatchTrigger)
        final long bundleSize = MinibatchUtil.miniBatchSize(config);
        FerryGlobalGroupAggregateOperator operator = new FerryGlobalGroupAggregateOperator(spec, outputType, bundleSize);
        operator.importingFlinkState(FlinkAccStates.global(planner.getTypeFactory(), inputRowType, flinkGrouping,
                flinkLocalAggInputRowType, flinkAggCalls, flinkAggCallNeedRetractions, flinkNeedRetraction, flinkCountStarIndex, stateRetentionTime));
        return NativeExecNodes.keyedTransformation(planner, config, inputTransform, meta, operator, outputType, flinkGrouping, inputRowType);
    }
}
