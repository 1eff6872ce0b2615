package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.exchange.FerryFrameTypeInfo;
import io.ferrystream.ferry.operators.FerryIncrementalGroupAggregateOperator;
import io.ferrystream.ferry.operators.IncrementalGroupAggregateSpec;

import org.apache.calcite.rel.core.AggregateCall;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.planner.delegation.PlannerBase;
import org.apache.flink.table.planner.plan.nodes.exec.ExecEdge;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNodeConfig;
import org.apache.flink.table.planner.plan.nodes.exec.InputProperty;
import org.apache.flink.table.planner.plan.nodes.exec.StateMetadata;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecIncrementalGroupAggregate;
import org.apache.flink.table.planner.plan.nodes.exec.utils.TransformationMetadata;
import org.apache.flink.table.planner.plan.utils.MinibatchUtil;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.RowType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.annotation.JsonIgnore;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.annotation.Nullable;

import java.util.List;
import java.util.Optional;

/**
 * Flink's {@link StreamExecIncrementalGroupAggregate} translated to {@link
 * FerryIncrementalGroupAggregateOperator}. Built with Flink's public convenience constructor (its
 * JSON type, configuration and state metadata are Flink's); Flink's fields are private, so it
 * keeps copies. The transformation keeps Flink's name ({@value
 * #INCREMENTAL_GROUP_AGGREGATE_TRANSFORMATION}, hence Flink's UID and operator ID), output type,
 * parallelism, state key selector and key type (the partial grouping fields), so Flink's exchange
 * and key groups stay valid. Translation repeats the kill switches and Go's verdict, falling back
 * to Flink's operator if anything changed since planning. Either exchange around it can be Ferry's
 * columnar one: behind one it reads frames, feeding one ({@link #writeFrames}) it writes them.
 */
public class FerryStreamExecIncrementalGroupAggregate extends StreamExecIncrementalGroupAggregate implements FrameProducer {
    private static final Logger LOG = LoggerFactory.getLogger(FerryStreamExecIncrementalGroupAggregate.class);

    // Copies of Flink's private fields, named apart from them: a field of the same name, even one
    // Jackson ignores, hides Flink's JSON property, and COMPILE PLAN would leave it out.
    @JsonIgnore private final int[] flinkPartialAggGrouping;
    @JsonIgnore private final int[] flinkFinalAggGrouping;
    @JsonIgnore private final AggregateCall[] flinkPartialOriginalAggCalls;
    @JsonIgnore private final boolean[] flinkPartialAggCallNeedRetractions;
    @JsonIgnore private final RowType flinkPartialLocalAggInputType;
    @JsonIgnore private final boolean flinkPartialAggNeedRetraction;
    @JsonIgnore private final List<StateMetadata> flinkStateMetadata;
    /** Set when translation fell back to Flink's operator. */
    @JsonIgnore private String fallbackReason;
    /** Feeds Ferry's columnar exchange: the operator writes frames when native. */
    @JsonIgnore private boolean frames;

    public FerryStreamExecIncrementalGroupAggregate(
            ReadableConfig tableConfig,
            int[] flinkPartialAggGrouping,
            int[] flinkFinalAggGrouping,
            AggregateCall[] flinkPartialOriginalAggCalls,
            boolean[] flinkPartialAggCallNeedRetractions,
            RowType flinkPartialLocalAggInputType,
            boolean flinkPartialAggNeedRetraction,
            @Nullable Long stateTtlFromHint,
            InputProperty inputProperty,
            RowType outputType,
            String description) {
        super(tableConfig, flinkPartialAggGrouping, flinkFinalAggGrouping, flinkPartialOriginalAggCalls, flinkPartialAggCallNeedRetractions,
                flinkPartialLocalAggInputType, flinkPartialAggNeedRetraction, stateTtlFromHint, inputProperty, outputType, description);
        this.flinkPartialAggGrouping = flinkPartialAggGrouping.clone();
        this.flinkFinalAggGrouping = flinkFinalAggGrouping.clone();
        this.flinkPartialOriginalAggCalls = flinkPartialOriginalAggCalls.clone();
        this.flinkPartialAggCallNeedRetractions = flinkPartialAggCallNeedRetractions.clone();
        this.flinkPartialLocalAggInputType = flinkPartialLocalAggInputType;
        this.flinkPartialAggNeedRetraction = flinkPartialAggNeedRetraction;
        // exactly what the super constructor stores as its stateMetadataList
        this.flinkStateMetadata = StateMetadata.getOneInputOperatorDefaultMeta(stateTtlFromHint, tableConfig, STATE_NAME);
    }

    /** Why translation built Flink's operator after all; empty when it built Ferry's. */
    @JsonIgnore
    public Optional<String> fallbackReason() {
        return Optional.ofNullable(fallbackReason);
    }

    /** Feeds {@link FerryStreamExecColumnarExchange}: the operator emits frames when native. */
    @Override
    public void writeFrames() {
        frames = true;
    }

    @Override
    protected String getSimplifiedName() {
        return fallbackReason == null ? "FerryIncrementalGroupAggregate" : "IncrementalGroupAggregate";
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    @Override
    protected Transformation<RowData> translateToPlanInternal(PlannerBase planner, ExecNodeConfig config) {
        final long stateRetentionTime = StateMetadata.getStateTtlForOneInputOperator(config, flinkStateMetadata);
        final ExecEdge inputEdge = getInputEdges().get(0);
        final RowType inputRowType = (RowType) inputEdge.getOutputType();
        final RowType outputType = (RowType) getOutputType();

        String reason = NativeMatcher.disabledReason(config, IncrementalGroupAggregateMatcher.ENABLED);
        IncrementalGroupAggregateSpec spec = null;
        if (reason == null) {
            spec = new IncrementalGroupAggregateSpec(getDescription(), inputRowType, flinkPartialAggGrouping.length,
                    flinkPartialLocalAggInputType,
                    IncrementalGroupAggregateMatcher.specCalls(planner.getTypeFactory(), flinkPartialLocalAggInputType,
                            flinkPartialOriginalAggCalls, flinkPartialAggCallNeedRetractions, flinkPartialAggNeedRetraction),
                    flinkFinalAggGrouping, flinkPartialAggNeedRetraction, stateRetentionTime);
            reason = NativeSupport.check(spec, outputType).orElse(null);
        }
        if (reason != null) {
            fallbackReason = reason;
            LOG.warn("Ferry: {} changed since planning ({}); using Flink's operator", getDescription(), reason);
            if (inputEdge.getSource() instanceof FerryStreamExecColumnarExchange) {
                ((FerryStreamExecColumnarExchange) inputEdge.getSource()).carryRows("the incremental aggregate fell back at translation");
            }
            return super.translateToPlanInternal(planner, config);
        }

        final Transformation<?> inputTransform = inputEdge.translateToPlan(planner);
        final TransformationMetadata meta = createTransformationMeta(INCREMENTAL_GROUP_AGGREGATE_TRANSFORMATION, config);
        // A batch is a bundle of Flink's count trigger (MinibatchUtil.createMiniBatchTrigger)
        final long bundleSize = MinibatchUtil.miniBatchSize(config);
        final TypeInformation<?> emittedType = frames ? FerryFrameTypeInfo.INSTANCE : InternalTypeInfo.of(outputType);
        return (Transformation) NativeExecNodes.keyedTransformation(planner, config, inputTransform, meta,
                new FerryIncrementalGroupAggregateOperator(spec, outputType, bundleSize), emittedType, flinkPartialAggGrouping, inputRowType);
    }
}
