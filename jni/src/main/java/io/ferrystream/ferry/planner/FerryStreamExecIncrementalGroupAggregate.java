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

    @JsonIgnore private final int[] partialAggGrouping;
    @JsonIgnore private final int[] finalAggGrouping;
    @JsonIgnore private final AggregateCall[] partialOriginalAggCalls;
    @JsonIgnore private final boolean[] partialAggCallNeedRetractions;
    @JsonIgnore private final RowType partialLocalAggInputType;
    @JsonIgnore private final boolean partialAggNeedRetraction;
    @JsonIgnore private final List<StateMetadata> stateMetadata;
    /** Set when translation fell back to Flink's operator. */
    @JsonIgnore private String fallbackReason;
    /** Feeds Ferry's columnar exchange: the operator writes frames when native. */
    @JsonIgnore private boolean frames;

    public FerryStreamExecIncrementalGroupAggregate(
            ReadableConfig tableConfig,
            int[] partialAggGrouping,
            int[] finalAggGrouping,
            AggregateCall[] partialOriginalAggCalls,
            boolean[] partialAggCallNeedRetractions,
            RowType partialLocalAggInputType,
            boolean partialAggNeedRetraction,
            @Nullable Long stateTtlFromHint,
            InputProperty inputProperty,
            RowType outputType,
            String description) {
        super(tableConfig, partialAggGrouping, finalAggGrouping, partialOriginalAggCalls, partialAggCallNeedRetractions,
                partialLocalAggInputType, partialAggNeedRetraction, stateTtlFromHint, inputProperty, outputType, description);
        this.partialAggGrouping = partialAggGrouping.clone();
        this.finalAggGrouping = finalAggGrouping.clone();
        this.partialOriginalAggCalls = partialOriginalAggCalls.clone();
        this.partialAggCallNeedRetractions = partialAggCallNeedRetractions.clone();
        this.partialLocalAggInputType = partialLocalAggInputType;
        this.partialAggNeedRetraction = partialAggNeedRetraction;
        // exactly what the super constructor stores as its stateMetadataList
        this.stateMetadata = StateMetadata.getOneInputOperatorDefaultMeta(stateTtlFromHint, tableConfig, STATE_NAME);
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
        final long stateRetentionTime = StateMetadata.getStateTtlForOneInputOperator(config, stateMetadata);
        final ExecEdge inputEdge = getInputEdges().get(0);
        final RowType inputRowType = (RowType) inputEdge.getOutputType();
        final RowType outputType = (RowType) getOutputType();

        String reason = NativeMatcher.disabledReason(config, IncrementalGroupAggregateMatcher.ENABLED);
        IncrementalGroupAggregateSpec spec = null;
        if (reason == null) {
            spec = new IncrementalGroupAggregateSpec(getDescription(), inputRowType, partialAggGrouping.length,
                    partialLocalAggInputType,
                    IncrementalGroupAggregateMatcher.specCalls(planner.getTypeFactory(), partialLocalAggInputType,
                            partialOriginalAggCalls, partialAggCallNeedRetractions, partialAggNeedRetraction),
                    finalAggGrouping, partialAggNeedRetraction, stateRetentionTime);
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
        return (Transformation) NativeExecNodes.keyedTransformation(planner, inputTransform, meta,
                new FerryIncrementalGroupAggregateOperator(spec, outputType, bundleSize), emittedType, partialAggGrouping, inputRowType);
    }
}
