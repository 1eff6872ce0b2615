package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.operators.IntervalJoinSpec;

import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.config.ExecutionConfigOptions;
import org.apache.flink.table.planner.plan.nodes.exec.spec.JoinSpec;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalIntervalJoin;
import org.apache.flink.table.types.logical.RowType;


import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.List;

import static org.apache.flink.table.planner.plan.nodes.exec.spec.IntervalJoinSpec.WindowBounds;

/** Builds the interval join's spec from what Flink's {@code StreamExecIntervalJoin} is built from. */
final class IntervalJoinSpecs {
    private IntervalJoinSpecs() {}

    /**
     * The spec of the operator Flink's exec node would build, with Flink's parameters, and the
     * early fire of the {@code EARLY_FIRE} hint when it applies ({@link
     * FerryStreamPhysicalIntervalJoin#producesEarlyFireUpdates}; null: none).
     */
    static IntervalJoinSpec build(
            String description,
            RowType leftType,
            RowType rightType,
            JoinSpec joinSpec,
            WindowBounds bounds,
            ReadableConfig config,
            EarlyFireHint.Resolved earlyFire) {
        String condition;
        try {
            condition = joinSpec.getNonEquiCondition().isPresent()
                    ? JoinConditions.encode(joinSpec.getNonEquiCondition().get())
                    : null;
        } catch (JoinConditions.Unsupported e) {
            throw new IllegalArgumentException("the residual condition is not native: " + e.getMessage(), e);
        }
        return new IntervalJoinSpec(
                description,
                carried(leftType),
                carried(rightType),
                joinSpec.getLeftKeys(),
                joinSpec.getRightKeys(),
                joinSpec.getJoinType().name(),
                bounds.isEventTime(),
                bounds.getLeftLowerBound(),
                bounds.getLeftUpperBound(),
                minCleanUpIntervalMs(config),
                bounds.getLeftTimeIdx(),
                bounds.getRightTimeIdx(),
                joinSpec.getFilterNulls(),
                condition,
                config.get(FerryOptions.JOIN_NULL_KEY_EMIT_IMMEDIATELY),
                earlyFire == null ? -1L : earlyFire.delayMs(),
                earlyFire != null && earlyFire.timeMode() == EarlyFireHint.TimeMode.PROCTIME);
    }

    /**
     * The row type as it crosses into Go, each field as {@link ArrowTypes#carried} (TIMESTAMP_LTZ
     * as TIMESTAMP): the interval join only moves such fields and compares row times as
     * milliseconds ({@code getLong}), as Flink's operator does. (A residual condition on such a
     * field stays Flink's: {@link JoinConditions}.)
     */
    static RowType carried(RowType type) {
        List<RowType.RowField> fields = new ArrayList<>();
        for (RowType.RowField f : type.getFields()) {
            fields.add(new RowType.RowField(f.getName(), ArrowTypes.carried(f.getType()), f.getDescription().orElse(null)));
        }
        return new RowType(type.isNullable(), fields);
    }

    /** {@code table.exec.interval-join.min-cleanup-interval}, as StreamExecIntervalJoin reads it. */
    static long minCleanUpIntervalMs(ReadableConfig config) {
        return config.get(ExecutionConfigOptions.TABLE_EXEC_INTERVAL_JOIN_MIN_CLEAN_UP_INTERVAL).toMillis();
    }

    /**
     * The window bounds of Flink's physical node, a constructor parameter its Scala class keeps in
     * a private field without an accessor.
     */
    static WindowBounds windowBounds(StreamPhysicalIntervalJoin join) {
        try {
            Field f = StreamPhysicalIntervalJoin.class.getDeclaredField("windowBounds");
            f.setAccessible(true);
            return (WindowBounds) f.get(join);
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("Flink's StreamPhysicalIntervalJoin has no windowBounds field", e);
        }
    }
}
