package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.operators.FerryIntervalJoinOperator;
import io.ferrystream.ferry.operators.FlinkIntervalJoinState;
import io.ferrystream.ferry.operators.IntervalJoinSpec;

import org.apache.flink.api.dag.Transformation;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.TableException;
import org.apache.flink.streaming.api.transformations.TwoInputTransformation;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.planner.delegation.PlannerBase;
import org.apache.flink.table.planner.plan.nodes.exec.ExecEdge;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNodeConfig;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNodeContext;
import org.apache.flink.table.planner.plan.nodes.exec.InputProperty;
import org.apache.flink.table.planner.plan.nodes.exec.spec.JoinSpec;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecIntervalJoin;
import org.apache.flink.table.planner.plan.nodes.exec.utils.ExecNodeUtil;
import org.apache.flink.table.planner.plan.utils.KeySelectorUtil;
import org.apache.flink.table.runtime.keyselector.RowDataKeySelector;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.RowType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.annotation.JsonIgnore;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import javax.annotation.Nullable;

import java.util.List;
import java.util.Optional;

import static org.apache.flink.table.planner.plan.nodes.exec.spec.IntervalJoinSpec.WindowBounds;

/**
 * Flink's {@link StreamExecIntervalJoin} translated to {@link FerryIntervalJoinOperator}.
 *
 * <p>Built with Flink's public constructor, so its JSON type and persisted configuration are
 * Flink's. The transformation keeps Flink's name ({@code interval-join}, hence its UID and
 * operator ID), parallelism (1 for singleton inputs, as Flink sets it), both state key selectors
 * and the key type, so Flink's exchanges and key groups stay valid. Translation re-checks what
 * the planner checked; should anything have changed, it builds Flink's operator instead.
 */
public class FerryStreamExecIntervalJoin extends StreamExecIntervalJoin {
    private static final Logger LOG = LoggerFactory.getLogger(FerryStreamExecIntervalJoin.class);

    // Copies of Flink's private fields, named apart from them: a field of the same name, even one
    // Jackson ignores, hides Flink's JSON property, and COMPILE PLAN would leave it out.
    @JsonIgnore private final JoinSpec flinkJoinSpec;
    @JsonIgnore private final WindowBounds flinkWindowBounds;
    /** Set when translation fell back to Flink's operator. */
    @JsonIgnore private String fallbackReason;
    /** The early fire the join runs with ({@link EarlyFireHint}), or null. */
    @JsonIgnore @Nullable private final EarlyFireHint.Resolved flinkEarlyFire;

    public FerryStreamExecIntervalJoin(
            ReadableConfig tableConfig,
            org.apache.flink.table.planner.plan.nodes.exec.spec.IntervalJoinSpec intervalJoinSpec,
            InputProperty leftInputProperty,
            InputProperty rightInputProperty,
            RowType outputType,
            String description,
            @Nullable EarlyFireHint.Resolved flinkEarlyFire) {
        super(tableConfig, intervalJoinSpec, leftInputProperty, rightInputProperty, outputType, description);
        this.flinkJoinSpec = intervalJoinSpec.getJoinSpec();
        this.flinkWindowBounds = intervalJoinSpec.getWindowBounds();
        this.flinkEarlyFire = flinkEarlyFire;
    }

    /**
     * Ferry's node in place of Flink's in a loaded compiled plan ({@link LoadedPlans}): the plan's
     * id, context (hence its UID, {@code <id>_interval-join}), persisted configuration and fields;
     * no early fire (a compiled plan keeps no hint of Ferry's).
     */
    FerryStreamExecIntervalJoin(
            int id,
            ExecNodeContext context,
            ReadableConfig persistedConfig,
            org.apache.flink.table.planner.plan.nodes.exec.spec.IntervalJoinSpec intervalJoinSpec,
            List<InputProperty> inputProperties,
            RowType outputType,
            String description) {
        super(id, context, persistedConfig, intervalJoinSpec, inputProperties, outputType, description);
        this.flinkJoinSpec = intervalJoinSpec.getJoinSpec();
        this.flinkWindowBounds = intervalJoinSpec.getWindowBounds();
        this.flinkEarlyFire = null;
    }

    /** Why translation built Flink's operator after all; empty when it built Ferry's. */
    @JsonIgnore
    public Optional<String> fallbackReason() {
        return Optional.ofNullable(fallbackReason);
    }

    @Override
    protected String getSimplifiedName() {
        return fallbackReason == null ? "FerryIntervalJoin" : "IntervalJoin";
    }

    @SuppressWarnings("unchecked")
    @Override
    protected Transformation<RowData> translateToPlanInternal(PlannerBase planner, ExecNodeConfig config) {
        ExecEdge leftEdge = getInputEdges().get(0);
        ExecEdge rightEdge = getInputEdges().get(1);
        RowType leftType = (RowType) leftEdge.getOutputType();
        RowType rightType = (RowType) rightEdge.getOutputType();

        String reason = NativeMatcher.disabledReason(config, IntervalJoinMatcher.ENABLED);
        if (reason == null) {
            reason = IntervalJoinMatcher.shapeReason(flinkJoinSpec, flinkWindowBounds, null);
        }
        IntervalJoinSpec spec = null;
        if (reason == null) {
            spec = IntervalJoinSpecs.build(getDescription(), leftType, rightType, flinkJoinSpec, flinkWindowBounds, config, flinkEarlyFire);
            reason = NativeSupport.check(spec).orElse(null);
        }
        if (reason != null && flinkEarlyFire != null) {
            throw new TableException("The EARLY_FIRE hint on " + getDescription() + " needs Ferry's native interval"
                    + " join (Flink 2.3 has no early fire), which is not available for it any more: " + reason);
        }
        if (reason != null) {
            fallbackReason = reason;
            LOG.warn("Ferry: {} changed since planning ({}); using Flink's operator", getDescription(), reason);
            return super.translateToPlanInternal(planner, config);
        }

        Transformation<RowData> leftTransform = (Transformation<RowData>) leftEdge.translateToPlan(planner);
        Transformation<RowData> rightTransform = (Transformation<RowData>) rightEdge.translateToPlan(planner);
        FerryIntervalJoinOperator operator =
                new FerryIntervalJoinOperator(spec, IntervalJoinSpecs.carried((RowType) getOutputType()),
                        NativeExecNodes.batching(config, false));
        TwoInputTransformation<RowData, RowData, RowData> transform =
                NativeExecNodes.withManagedMemory(ExecNodeUtil.createTwoInputTransformation(
                        leftTransform,
                        rightTransform,
                        createTransformationMeta(INTERVAL_JOIN_TRANSFORMATION, config),
                        operator,
                        InternalTypeInfo.of(getOutputType()),
                        leftTransform.getParallelism(),
                        false), config);
        if (inputsContainSingleton()) {
            transform.setParallelism(1);
            transform.setMaxParallelism(1);
        }
        ClassLoader cl = planner.getFlinkContext().getClassLoader();
        RowDataKeySelector leftSelect =
                KeySelectorUtil.getRowDataSelector(cl, flinkJoinSpec.getLeftKeys(), InternalTypeInfo.of(leftType));
        RowDataKeySelector rightSelect =
                KeySelectorUtil.getRowDataSelector(cl, flinkJoinSpec.getRightKeys(), InternalTypeInfo.of(rightType));
        transform.setStateKeySelectors(leftSelect, rightSelect);
        transform.setStateKeyType(leftSelect.getProducedType());
        operator.importingFlinkState(new FlinkIntervalJoinState(leftSelect.getProducedType().toRowType(), leftType, rightType,
                flinkWindowBounds.isEventTime(),
                flinkEarlyFire == null ? null : "with the EARLY_FIRE hint the join keeps fired flags and early-fire timers,"
                        + " which Flink 2.3's interval join does not have"));
        return transform;
    }
}
