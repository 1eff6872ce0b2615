package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.operators.WindowJoinSpec;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.plan.logical.SessionWindowSpec;
import org.apache.flink.table.planner.plan.logical.WindowAttachedWindowingStrategy;
import org.apache.flink.table.planner.plan.logical.WindowingStrategy;
import org.apache.flink.table.planner.plan.nodes.exec.spec.JoinSpec;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalWindowJoin;
import org.apache.flink.table.planner.utils.TableConfigUtils;
import org.apache.flink.table.runtime.util.TimeWindowUtil;
import org.apache.flink.table.types.logical.RowType;

import org.apache.calcite.rel.RelNode;
import org.apache.calcite.sql.validate.SqlValidatorUtil;

import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * The window join kind's matcher: decides whether one {@link StreamPhysicalWindowJoin} runs
 * natively. Native: row-time TUMBLE, HOP and CUMULATE window joins of every join type whose
 * condition is the window columns, the equi keys and a residual condition libferry.so evaluates
 * ({@link JoinConditions}), over fields that cross the Arrow boundary. Flink's otherwise, with the
 * reason.
 */
public final class WindowJoinMatcher extends NativeMatcher<StreamPhysicalWindowJoin> {
    /** The kill switch of the native window join. */
    public static final ConfigOption<Boolean> ENABLED = FerryOptions.killSwitch("window-join", "the native window join");

    WindowJoinMatcher() {
        super(WindowJoinSpec.KIND, StreamPhysicalWindowJoin.class, ENABLED, FerryStreamExecWindowJoin.class);
    }

    @Override
    protected Decision match(StreamPhysicalWindowJoin join, ReadableConfig config) {
        JoinSpec joinSpec = join.joinSpec();
        // the join's input fields, left then right, made unique as in the join's row type, for
        // the residual condition in reasons (a SEMI or ANTI join's row type is the left input's)
        List<String> names = new ArrayList<>(join.getLeft().getRowType().getFieldNames());
        names.addAll(join.getRight().getRowType().getFieldNames());
        names = SqlValidatorUtil.uniquify(names, true);
        String reason = shapeReason(joinSpec, join.leftWindowing(), names);
        if (reason != null) {
            return Decision.fallback(reason);
        }
        RowType left = FlinkTypeFactory.toLogicalRowType(join.getLeft().getRowType());
        RowType right = FlinkTypeFactory.toLogicalRowType(join.getRight().getRowType());
        reason = joinFieldsReason(IntervalJoinSpecs.carried(left), "left field");
        if (reason == null) {
            reason = joinFieldsReason(IntervalJoinSpecs.carried(right), "right field");
        }
        if (reason != null) {
            return Decision.fallback(reason);
        }
        WindowJoinSpec spec = build(join.getRelDetailedDescription(), left, right, joinSpec, join.leftWindowing(),
                join.rightWindowing(), config);
        Optional<String> refused = NativeSupport.check(spec);
        String prefix = "residual join condition: ";
        if (refused.isPresent() && joinSpec.getNonEquiCondition().isPresent() && refused.get().startsWith(prefix)) {
            return Decision.fallback("non-equi join condition "
                    + IntervalJoinMatcher.named(joinSpec.getNonEquiCondition().get().toString(), names) + ": "
                    + refused.get().substring(prefix.length()) + " not native yet");
        }
        return refused.map(Decision::fallback).orElse(Decision.nativeNode());
    }

    /** Why the join's shape is not native, or null; the exec node repeats it at translation. */
    static String shapeReason(JoinSpec joinSpec, WindowingStrategy windowing, List<String> fieldNames) {
        if (!windowing.isRowtime()) {
            return "processing-time window join: Flink rejects it at translation";
        }
        if (!(windowing instanceof WindowAttachedWindowingStrategy)) {
            return "windowing " + windowing.getClass().getSimpleName() + ": Flink rejects it at translation";
        }
        if (windowing.getWindow() instanceof SessionWindowSpec) {
            return "SESSION windows: not native (the join keys windows by window_end alone)";
        }
        if (joinSpec.getNonEquiCondition().isPresent()) {
            try {
                JoinConditions.encode(joinSpec.getNonEquiCondition().get());
            } catch (JoinConditions.Unsupported e) {
                return "non-equi join condition "
                        + IntervalJoinMatcher.named(joinSpec.getNonEquiCondition().get().toString(), fieldNames) + ": "
                        + IntervalJoinMatcher.named(e.getMessage(), fieldNames) + " not native yet";
            }
        }
        return null;
    }

    /** The spec of the operator Flink's exec node would build, with Flink's parameters. */
    static WindowJoinSpec build(
            String description,
            RowType leftType,
            RowType rightType,
            JoinSpec joinSpec,
            WindowingStrategy leftWindowing,
            WindowingStrategy rightWindowing,
            ReadableConfig config) {
        String condition;
        try {
            condition = joinSpec.getNonEquiCondition().isPresent()
                    ? JoinConditions.encode(joinSpec.getNonEquiCondition().get())
                    : null;
        } catch (JoinConditions.Unsupported e) {
            throw new IllegalArgumentException("the residual condition is not native: " + e.getMessage(), e);
        }
        ZoneId shiftTimeZone = TimeWindowUtil.getShiftTimeZone(
                leftWindowing.getTimeAttributeType(), TableConfigUtils.getLocalTimeZone(config));
        return new WindowJoinSpec(
                description,
                IntervalJoinSpecs.carried(leftType),
                IntervalJoinSpecs.carried(rightType),
                joinSpec.getLeftKeys(),
                joinSpec.getRightKeys(),
                joinSpec.getJoinType().name(),
                ((WindowAttachedWindowingStrategy) leftWindowing).getWindowEnd(),
                ((WindowAttachedWindowingStrategy) rightWindowing).getWindowEnd(),
                joinSpec.getFilterNulls(),
                condition,
                shiftTimeZone,
                config.get(FerryOptions.JOIN_NULL_KEY_EMIT_IMMEDIATELY));
    }

    @Override
    protected RelNode nativeNode(StreamPhysicalWindowJoin join) {
        return FerryStreamPhysicalWindowJoin.of(join, null);
    }

    @Override
    protected RelNode fallbackNode(StreamPhysicalWindowJoin join, String reason) {
        return FerryStreamPhysicalWindowJoin.of(join, reason);
    }
}
