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

import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;

/**
 * The window join kind's matcher: decides whether one {@link StreamPhysicalWindowJoin} runs
 * natively. Native: row-time TUMBLE, HOP and CUMULATE window joins of every join type, with any
 * residual condition (the operator evaluates Flink's generated one) and rows of any type (they
 * stay in the JVM), whose equi keys are of types that cross the Arrow boundary. Flink's
 * otherwise, with the reason.
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
        String reason = shapeReason(joinSpec, join.leftWindowing());
        if (reason != null) {
            return Decision.fallback(reason);
        }
        RowType left = FlinkTypeFactory.toLogicalRowType(join.getLeft().getRowType());
        RowType right = FlinkTypeFactory.toLogicalRowType(join.getRight().getRowType());
        // only the keys and window_end cross into Go; the rows stay in the JVM
        reason = joinFieldsReason(keyFields(IntervalJoinSpecs.carried(left), joinSpec.getLeftKeys()), "left join key");
        if (reason == null) {
            reason = joinFieldsReason(keyFields(IntervalJoinSpecs.carried(right), joinSpec.getRightKeys()), "right join key");
        }
        if (reason != null) {
            return Decision.fallback(reason);
        }
        WindowJoinSpec spec = build(join.getRelDetailedDescription(), left, right, joinSpec, join.leftWindowing(),
                join.rightWindowing(), config);
        return NativeSupport.check(spec).map(Decision::fallback).orElse(Decision.nativeNode());
    }

    /** Why the join's shape is not native, or null; the exec node repeats it at translation. */
    static String shapeReason(JoinSpec joinSpec, WindowingStrategy windowing) {
        if (!windowing.isRowtime()) {
            return "processing-time window join: Flink rejects it at translation";
        }
        if (!(windowing instanceof WindowAttachedWindowingStrategy)) {
            return "windowing " + windowing.getClass().getSimpleName() + ": Flink rejects it at translation";
        }
        if (windowing.getWindow() instanceof SessionWindowSpec) {
            return "SESSION windows: not native (the join keys windows by window_end alone)";
        }
        return null;
    }

    private static RowType keyFields(RowType type, int[] keys) {
        List<RowType.RowField> fields = new ArrayList<>();
        for (int k : keys) {
            fields.add(type.getFields().get(k));
        }
        return new RowType(fields);
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
