package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.exchange.FerryFrameTypeInfo;
import io.ferrystream.ferry.operators.FerryLocalGroupAggregateOperator;
import io.ferrystream.ferry.operators.LocalGroupAggregateSpec;

import org.apache.calcite.rel.core.AggregateCall;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.streaming.api.operators.StreamOperator;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.planner.delegation.PlannerBase;
import org.apache.flink.table.planner.plan.nodes.exec.ExecEdge;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNodeConfig;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNodeContext;
import org.apache.flink.table.planner.plan.nodes.exec.InputProperty;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecLocalGroupAggregate;
import org.apache.flink.table.planner.plan.nodes.exec.utils.ExecNodeUtil;
import org.apache.flink.table.planner.plan.utils.MinibatchUtil;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.RowType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.annotation.JsonIgnore;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.List;
import java.util.Optional;

/**
 * Flink's {@link StreamExecLocalGroupAggregate} translated to {@link
 * FerryLocalGroupAggregateOperator}. Built with Flink's public convenience constructor (its JSON
 * type and configuration are Flink's); Flink's fields are private, so it keeps copies. The
 * transformation keeps Flink's name ({@value #LOCAL_GROUP_AGGREGATE_TRANSFORMATION}), output type
 * and parallelism (the input's), and like Flink's it has no key selector: the operator is not
 * keyed. Feeding Ferry's columnar exchange ({@link #writeFrames}) it emits frames instead of rows. Translation repeats the kill switches and
 * Go's verdict, falling back to Flink's operator if anything changed since planning.
 */
public class FerryStreamExecLocalGroupAggregate extends StreamExecLocalGroupAggregate implements FrameProducer {
    private static final Logger LOG = LoggerFactory.getLogger(FerryStreamExecLocalGroupAggregate.class);

    // Copies of Flink's private fields, named apart from them: a field of the same name, even one
    // Jackson ignores, hides Flink's JSON property, and COMPILE PLAN would leave it out.
    @JsonIgnore private final int[] flinkGrouping;
    @JsonIgnore private final AggregateCall[] flinkAggCalls;
    @JsonIgnore private final boolean[] flinkAggCallNeedRetractions;
    @JsonIgnore private final boolean flinkNeedRetraction;
    /** Set when translation fell back to Flink's operator. */
    @JsonIgnore private String fallbackReason;
    /** Set by the columnar exchange it feeds, before translation: emit frames, not rows. */
    @JsonIgnore private boolean frames;

    public FerryStreamExecLocalGroupAggregate(
            ReadableConfig tableConfig,
            int[] flinkGrouping,
            AggregateCall[] flinkAggCalls,
            boolean[] flinkAggCallNeedRetractions,
            boolean flinkNeedRetraction,
            InputProperty inputProperty,
            RowType outputType,
            String description) {
        super(tableConfig, flinkGrouping, flinkAggCalls, flinkAggCallNeedRetractions, flinkNeedRetraction, inputProperty, outputType, description);
        this.flinkGrouping = flinkGrouping.clone();
        this.flinkAggCalls = flinkAggCalls.clone();
        this.flinkAggCallNeedRetractions = flinkAggCallNeedRetractions.clone();
        this.flinkNeedRetraction = flinkNeedRetraction;
    }

    /**
     * The node in place of a node of a plan loaded from JSON ({@link LoadedPlans}): the plan's id,
     * context and persisted configuration.
     */
    FerryStreamExecLocalGroupAggregate(
            int id,
            ExecNodeContext context,
            ReadableConfig persistedConfig,
            int[] flinkGrouping,
            AggregateCall[] flinkAggCalls,
            boolean[] flinkAggCallNeedRetractions,
            boolean flinkNeedRetraction,
            List<InputProperty> inputProperties,
            RowType outputType,
            String description) {
        super(id, context, persistedConfig, flinkGrouping, flinkAggCalls, flinkAggCallNeedRetractions, flinkNeedRetraction, inputProperties,
                outputType, description);
        this.flinkGrouping = flinkGrouping.clone();
        this.flinkAggCalls = flinkAggCalls.clone();
        this.flinkAggCallNeedRetractions = flinkAggCallNeedRetractions.clone();
        this.flinkNeedRetraction = flinkNeedRetraction;
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
        return fallbackReason == null ? "FerryLocalGroupAggregate" : "LocalGroupAggregate";
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    @Override
    protected Transformation<RowData> translateToPlanInternal(PlannerBase planner, ExecNodeConfig config) {
        final ExecEdge inputEdge = getInputEdges().get(0);
        final RowType inputRowType = (RowType) inputEdge.getOutputType();
        final RowType outputType = (RowType) getOutputType();

        String reason = NativeMatcher.disabledReason(config, LocalGroupAggregateMatcher.ENABLED);
        if (reason == null) { // what the matcher checked; a plan loaded from JSON is decided here only
            reason = LocalGroupAggregateMatcher.reason(planner.getTypeFactory(), inputRowType, outputType, flinkGrouping,
                    flinkAggCalls, flinkAggCallNeedRetractions, flinkNeedRetraction);
        }
        LocalGroupAggregateSpec spec = null;
        if (reason == null) {
            spec = TwoPhaseAggregates.localSpec(
                    getDescription(), planner.getTypeFactory(), inputRowType, flinkGrouping, flinkAggCalls, flinkAggCallNeedRetractions, flinkNeedRetraction);
            reason = NativeSupport.check(spec, outputType).orElse(null);
        }
        if (reason != null) {
            fallbackReason = reason;
            LOG.warn("Ferry: {} runs Flink's operator at translation ({}): the plan was loaded from JSON, or changed since planning", getDescription(), reason);
            return super.translateToPlanInternal(planner, config);
        }

        final Transformation<RowData> inputTransform = (Transformation<RowData>) inputEdge.translateToPlan(planner);
        // A batch is a bundle of Flink's count trigger (MinibatchUtil.createMiniBatchTrigger)
        final long bundleSize = MinibatchUtil.miniBatchSize(config);
        if (frames) {
            // the transformation's type is FerryFrame: Flink's exec node API types it by rows
            return (Transformation) NativeExecNodes.withManagedMemory(ExecNodeUtil.createOneInputTransformation(
                    inputTransform,
                    createTransformationMeta(LOCAL_GROUP_AGGREGATE_TRANSFORMATION, config),
                    (StreamOperator) new FerryLocalGroupAggregateOperator(spec, outputType, bundleSize),
                    (TypeInformation) FerryFrameTypeInfo.INSTANCE,
                    inputTransform.getParallelism(),
                    false), config);
        }
        return NativeExecNodes.withManagedMemory(ExecNodeUtil.createOneInputTransformation(
                inputTransform,
                createTransformationMeta(LOCAL_GROUP_AGGREGATE_TRANSFORMATION, config),
                new FerryLocalGroupAggregateOperator(spec, outputType, bundleSize),
                InternalTypeInfo.of(outputType),
                inputTransform.getParallelism(),
                false), config);
    }
}
