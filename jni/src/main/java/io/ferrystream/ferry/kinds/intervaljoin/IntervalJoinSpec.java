package io.ferrystream.ferry.kinds.intervaljoin;

import io.ferrystream.ferry.operators.NativeSpec;

import org.apache.flink.table.types.logical.RowType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonProcessingException;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.List;
import java.util.Objects;

/**
 * The spec of one native interval join (kind {@value #KIND}): Flink's {@code RowTimeIntervalJoin}
 * or {@code ProcTimeIntervalJoin}. Input 0 is the join's left input, input 1 its right input; all
 * their fields cross into Go (the output is the left row followed by the right row), keyed by the
 * equi-join keys. The parameters are Flink's {@code IntervalJoinSpec}: join type, window bounds
 * (milliseconds), time columns, the null filter of each key, and {@code
 * table.exec.interval-join.min-cleanup-interval}, {@code ferry.join.null-key.emit-immediately},
 * and the {@code EARLY_FIRE} hint's delay and time mode. Built by the planner from Flink's {@code
 * StreamExecIntervalJoin} arguments and the hint.
 */
public final class IntervalJoinSpec extends NativeSpec {
    private static final long serialVersionUID = 1L;

    /** The library's name of this operator kind. */
    public static final String KIND = "interval_join";

    private static final ObjectMapper JSON = new ObjectMapper();

    private final String joinType;
    private final boolean rowTime;
    private final long leftLowerBound;
    private final long leftUpperBound;
    private final long minCleanUpIntervalMs;
    private final int leftTimeIndex;
    private final int rightTimeIndex;
    private final boolean[] filterNulls;
    /** The residual condition as JSON (docs/abi.md), or null when there is none. */
    private final String condition;
    /** {@code ferry.join.null-key.emit-immediately}. */
    private final boolean nullKeyEmitImmediately;
    /** The {@code EARLY_FIRE} delay in milliseconds; negative: no early fire. */
    private final long earlyFireDelayMs;
    /** Early fire on processing time (on a row-time join: processing-time timers beside event-time cleanup). */
    private final boolean earlyFireProcTime;

    /**
     * @param joinType {@code INNER}, {@code LEFT}, {@code RIGHT} or {@code FULL}
     * @param rowTime a row-time join (event-time timers, row times from the time columns); false
     *     for a processing-time join
     * @param leftLowerBound a left row at lt matches a right row at rt when {@code rt +
     *     leftLowerBound <= lt <= rt + leftUpperBound} (milliseconds)
     * @param leftTimeIndex the left input's time column (row time only)
     * @param filterNulls per key: true for {@code =} (a NULL key joins nothing), false for {@code IS
     *     NOT DISTINCT FROM}
     * @param condition the residual join condition over the left fields followed by the right
     *     fields, as the JSON of the {@code condition} parameter (docs/abi.md), or null for none
     * @param nullKeyEmitImmediately pad the padded side's rows of keys that can never match (a NULL
     *     where {@code filterNulls} is true) on arrival instead of when Flink pads them
     * @param earlyFireDelayMs the {@code EARLY_FIRE} hint's delay (milliseconds, at least 1) on an
     *     outer join; negative for none
     * @param earlyFireProcTime the hint's time mode is processing time (the join's own, or on a
     *     row-time join processing-time early fire beside event-time cleanup)
     */
    public IntervalJoinSpec(
            String name,
            RowType leftType,
            RowType rightType,
            int[] leftKeys,
            int[] rightKeys,
            String joinType,
            boolean rowTime,
            long leftLowerBound,
            long leftUpperBound,
            long minCleanUpIntervalMs,
            int leftTimeIndex,
            int rightTimeIndex,
            boolean[] filterNulls,
            String condition,
            boolean nullKeyEmitImmediately,
            long earlyFireDelayMs,
            boolean earlyFireProcTime) {
        super(KIND, name, List.of(allFields(leftType, leftKeys), allFields(rightType, rightKeys)));
        this.joinType = Objects.requireNonNull(joinType);
        this.rowTime = rowTime;
        this.leftLowerBound = leftLowerBound;
        this.leftUpperBound = leftUpperBound;
        this.minCleanUpIntervalMs = minCleanUpIntervalMs;
        this.leftTimeIndex = leftTimeIndex;
        this.rightTimeIndex = rightTimeIndex;
        this.filterNulls = filterNulls.clone();
        this.condition = condition;
        this.nullKeyEmitImmediately = nullKeyEmitImmediately;
        this.earlyFireDelayMs = earlyFireDelayMs;
        this.earlyFireProcTime = earlyFireProcTime;
    }

    /** Every field of the input crosses: the output carries the whole row. */
    private static Input allFields(RowType type, int[] keys) {
        return Input.whole(type, keys);
    }


    public boolean rowTime() {
        return rowTime;
    }

    /**
     * A row-time join whose early fire runs on processing time: its rows carry their arrival
     * time and its early-fire timers fire through Flink's processing-time service, while
     * watermarks still drive its cleanup.
     */
    public boolean processingTimeEarlyFireOnRowTime() {
        return rowTime && earlyFireDelayMs >= 0 && earlyFireProcTime;
    }

    /**
     * How long the output's watermarks lag the input's, as Flink's {@code
     * KeyedCoProcessOperatorWithWatermarkDelay} holds them back: {@code
     * RowTimeIntervalJoin.getMaxOutputDelay()}, max(-leftLowerBound, leftUpperBound) plus the
     * allowed lateness (0 in SQL); none for a processing-time join.
     */
    public long watermarkDelay() {
        return rowTime ? Math.max(-leftLowerBound, leftUpperBound) : 0L;
    }

    @Override
    protected void writeParams(ObjectNode params) {
        params.put("join_type", joinType);
        params.put("time_mode", rowTime ? "rowtime" : "proctime");
        params.put("left_lower_bound", leftLowerBound);
        params.put("left_upper_bound", leftUpperBound);
        params.put("allowed_lateness", 0L);
        params.put("min_clean_up_interval_ms", minCleanUpIntervalMs);
        params.put("left_time_index", leftTimeIndex);
        params.put("right_time_index", rightTimeIndex);
        ArrayNode f = params.putArray("filter_nulls");
        for (boolean b : filterNulls) {
            f.add(b);
        }
        if (nullKeyEmitImmediately) {
            params.put("null_key_emit_immediately", true);
        }
        if (earlyFireDelayMs >= 0) {
            params.put("early_fire_delay_ms", earlyFireDelayMs);
            params.put("early_fire_time_mode", earlyFireProcTime ? "proctime" : "rowtime");
        }
        if (condition != null) {
            try {
                params.set("condition", JSON.readTree(condition));
            } catch (JsonProcessingException e) {
                throw new IllegalStateException("residual condition " + condition, e);
            }
        }
    }
}
