package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.operators.FerryWindowJoinOperator;
import io.ferrystream.ferry.operators.WindowJoinSpec;

import org.apache.flink.api.dag.Transformation;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.streaming.api.transformations.TwoInputTransformation;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.planner.delegation.PlannerBase;
import org.apache.flink.table.planner.plan.logical.WindowingStrategy;
import org.apache.flink.table.planner.plan.nodes.exec.ExecEdge;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNodeConfig;
import org.apache.flink.table.planner.plan.nodes.exec.InputProperty;
import org.apache.flink.table.planner.plan.nodes.exec.spec.JoinSpec;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecWindowJoin;
import org.apache.flink.table.planner.plan.nodes.exec.utils.ExecNodeUtil;
import org.apache.flink.table.planner.plan.utils.JoinUtil;
import org.apache.flink.table.planner.plan.utils.KeySelectorUtil;
import org.apache.flink.table.runtime.generated.GeneratedJoinCondition;
import org.apache.flink.table.runtime.keyselector.RowDataKeySelector;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.RowType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.annotation.JsonIgnore;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Optional;

/**
 * Flink's {@link StreamExecWindowJoin} translated to {@link FerryWindowJoinOperator}.
 *
 * <p>Built with Flink's public constructor, so its JSON type and persisted configuration are
 * Flink's. The transformation keeps Flink's name ({@code window-join}, hence its UID and operator
 * ID), the left input's parallelism, both state key selectors and the key type. Translation
 * re-checks what the planner checked; should anything have changed, it builds Flink's operator.
 */
public class FerryStreamExecWindowJoin extends StreamExecWindowJoin {
    private static final Logger LOG = LoggerFactory.getLogger(FerryStreamExecWindowJoin.class);

    // Copies of Flink's private fields, named apart from them: a field of the same name, even one
    // Jackson ignores, hides Flink's JSON property, and COMPILE PLAN would leave it out.
    @JsonIgnore private final JoinSpec flinkJoinSpec;
    @JsonIgnore private final WindowingStrategy flinkLeftWindowing;
    @JsonIgnore private final WindowingStrategy flinkRightWindowing;
    /** Set when translation fell back to Flink's operator. */
    @JsonIgnore private String fallbackReason;

    public FerryStreamExecWindowJoin(
            ReadableConfig tableConfig,
            JoinSpec flinkJoinSpec,
            WindowingStrategy flinkLeftWindowing,
            WindowingStrategy flinkRightWindowing,
            InputProperty leftInputProperty,
            InputProperty rightInputProperty,
            RowType outputType,
            String description) {
        super(tableConfig, flinkJoinSpec, flinkLeftWindowing, flinkRightWindowing, leftInputProperty, rightInputProperty, outputType,
                description);
        this.flinkJoinSpec = flinkJoinSpec;
        this.flinkLeftWindowing = flinkLeftWindowing;
        this.flinkRightWindowing = flinkRightWindowing;
    }

    /** Why translation built Flink's operator after all; empty when it built Ferry's. */
    @JsonIgnore
    public Optional<String> fallbackReason() {
        return Optional.ofNullable(fallbackReason);
    }

    @Override
    protected String getSimplifiedName() {
        return fallbackReason == null ? "FerryWindowJoin" : "WindowJoin";
    }

    @SuppressWarnings("unchecked")
    @Override
    protected Transformation<RowData> translateToPlanInternal(PlannerBase planner, ExecNodeConfig config) {
        ExecEdge leftEdge = getInputEdges().get(0);
        ExecEdge rightEdge = getInputEdges().get(1);
        RowType leftType = (RowType) leftEdge.getOutputType();
        RowType rightType = (RowType) rightEdge.getOutputType();

        String reason = NativeMatcher.disabledReason(config, WindowJoinMatcher.ENABLED);
        if (reason == null) {
            reason = WindowJoinMatcher.shapeReason(flinkJoinSpec, flinkLeftWindowing);
        }
        WindowJoinSpec spec = null;
        if (reason == null) {
            spec = WindowJoinMatcher.build(getDescription(), leftType, rightType, flinkJoinSpec, flinkLeftWindowing,
                    flinkRightWindowing, config);
            reason = NativeSupport.check(spec).orElse(null);
        }
        if (reason != null) {
            fallbackReason = reason;
            LOG.warn("Ferry: {} changed since planning ({}); using Flink's operator", getDescription(), reason);
            return super.translateToPlanInternal(planner, config);
        }

        Transformation<RowData> leftTransform = (Transformation<RowData>) leftEdge.translateToPlan(planner);
        Transformation<RowData> rightTransform = (Transformation<RowData>) rightEdge.translateToPlan(planner);
        GeneratedJoinCondition condition = JoinUtil.generateConditionFunction(
                config, planner.getFlinkContext().getClassLoader(), flinkJoinSpec, leftType, rightType);
        FerryWindowJoinOperator operator =
                new FerryWindowJoinOperator(spec, condition, NativeExecNodes.batching(config, false));
        TwoInputTransformation<RowData, RowData, RowData> transform =
                NativeExecNodes.withManagedMemory(ExecNodeUtil.createTwoInputTransformation(
                        leftTransform,
                        rightTransform,
                        createTransformationMeta(WINDOW_JOIN_TRANSFORMATION, config),
                        operator,
                        InternalTypeInfo.of(getOutputType()),
                        leftTransform.getParallelism(),
                        false), config);
        ClassLoader cl = planner.getFlinkContext().getClassLoader();
        RowDataKeySelector leftSelect =
                KeySelectorUtil.getRowDataSelector(cl, flinkJoinSpec.getLeftKeys(), InternalTypeInfo.of(leftType));
        RowDataKeySelector rightSelect =
                KeySelectorUtil.getRowDataSelector(cl, flinkJoinSpec.getRightKeys(), InternalTypeInfo.of(rightType));
        transform.setStateKeySelectors(leftSelect, rightSelect);
        transform.setStateKeyType(leftSelect.getProducedType());
        return transform;
    }
}
