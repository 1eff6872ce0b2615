package io.ferrystream.ferry.kinds.intervaljoin;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.planner.JoinConditions;

import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.config.ExecutionConfigOptions;
import org.apache.flink.table.planner.plan.nodes.exec.spec.JoinSpec;
import org.apache.flink.table.types.logical.RowType;

import static org.apache.flink.table.planner.plan.nodes.exec.spec.IntervalJoinSpec.WindowBounds;

/** Builds the interval join's spec from what Flink's {@code StreamExecIntervalJoin} is built from. */
final class IntervalJoinSpecs {
    private IntervalJoinSpecs() {}

    /**
     * The spec of the operator Flink's exec node would build, with Flink's parameters, and the
     * early fire of the {@code EARLY_FIRE} hint when it applies ({@link
     * EarlyFireHint#producesUpdates}; null: none).
     */
    static IntervalJoinSpec build(
            String description,
            RowType leftType,
            RowType rightType,
            JoinSpec joinSpec,
            WindowBounds bounds,
            ReadableConfig config,
            EarlyFireHint.Resolved earlyFire) {
        String condition = JoinConditions.encodeResidual(joinSpec);
        return new IntervalJoinSpec(
                description,
                ArrowTypes.carriedFields(leftType),
                ArrowTypes.carriedFields(rightType),
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

    /** {@code table.exec.interval-join.min-cleanup-interval}, as StreamExecIntervalJoin reads it. */
    static long minCleanUpIntervalMs(ReadableConfig config) {
        return config.get(ExecutionConfigOptions.TABLE_EXEC_INTERVAL_JOIN_MIN_CLEAN_UP_INTERVAL).toMillis();
    }
}
