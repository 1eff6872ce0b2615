package io.ferrystream.ferry.operators;

import org.apache.flink.table.types.logical.RowType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonProcessingException;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.zone.ZoneOffsetTransition;
import java.time.zone.ZoneRules;
import java.util.List;
import java.util.Objects;
import java.util.TimeZone;

/**
 * The spec of one native window join (kind {@value #KIND}): Flink's {@code WindowJoinOperator}.
 * Input 0 is the join's left input, input 1 its right input; all their fields cross into Go,
 * keyed by the equi-join keys (never the window columns). The output is the left row followed by
 * the right row, or the left row alone for SEMI and ANTI. The parameters are what Flink's {@code
 * StreamExecWindowJoin} builds its operator from: join type, the window_end column of each input,
 * the null filter of each key, the residual condition and the shift time zone, plus {@code
 * ferry.join.null-key.emit-immediately}.
 */
public final class WindowJoinSpec extends NativeSpec {
    private static final long serialVersionUID = 1L;

    /** The library's name of this operator kind. */
    public static final String KIND = "window_join";

    private static final ObjectMapper JSON = new ObjectMapper();
    /** Transitions of zones with recurring rules are listed from this year ... */
    private static final Instant ZONE_FROM = Instant.parse("1800-01-01T00:00:00Z");
    /** ... up to this one; later window ends are an error in Go. */
    private static final Instant ZONE_UNTIL = Instant.parse("2200-01-01T00:00:00Z");

    private final String joinType;
    private final int leftWindowEndIndex;
    private final int rightWindowEndIndex;
    private final boolean[] filterNulls;
    /** The residual condition as JSON (docs/abi.md), or null when there is none. */
    private final String condition;
    private final ZoneId shiftTimeZone;
    private final boolean nullKeyEmitImmediately;

    /**
     * @param joinType {@code INNER}, {@code LEFT}, {@code RIGHT}, {@code FULL}, {@code SEMI} or
     *     {@code ANTI}
     * @param filterNulls per key: true for {@code =} (a NULL key joins nothing), false for {@code IS
     *     NOT DISTINCT FROM}
     * @param condition the residual join condition as the JSON of the {@code condition} parameter
     *     (docs/abi.md), or null for none
     * @param shiftTimeZone Flink's shift time zone ({@code TimeWindowUtil.getShiftTimeZone}): UTC for
     *     TIMESTAMP windows, the session zone for TIMESTAMP_LTZ ones
     */
    public WindowJoinSpec(
            String name,
            RowType leftType,
            RowType rightType,
            int[] leftKeys,
            int[] rightKeys,
            String joinType,
            int leftWindowEndIndex,
            int rightWindowEndIndex,
            boolean[] filterNulls,
            String condition,
            ZoneId shiftTimeZone,
            boolean nullKeyEmitImmediately) {
        super(KIND, name, List.of(allFields(leftType, leftKeys), allFields(rightType, rightKeys)));
        this.joinType = Objects.requireNonNull(joinType);
        this.leftWindowEndIndex = leftWindowEndIndex;
        this.rightWindowEndIndex = rightWindowEndIndex;
        this.filterNulls = filterNulls.clone();
        this.condition = condition;
        this.shiftTimeZone = Objects.requireNonNull(shiftTimeZone);
        this.nullKeyEmitImmediately = nullKeyEmitImmediately;
    }

    public int leftWindowEndIndex() {
        return leftWindowEndIndex;
    }

    public int rightWindowEndIndex() {
        return rightWindowEndIndex;
    }

    /** Flink's shift time zone of the window ends. */
    public ZoneId shiftTimeZone() {
        return shiftTimeZone;
    }

    private static Input allFields(RowType type, int[] keys) {
        int[] all = new int[type.getFieldCount()];
        for (int i = 0; i < all.length; i++) {
            all[i] = i;
        }
        return Input.of(type, all, keys, new int[0]);
    }

    @Override
    protected void writeParams(ObjectNode params) {
        params.put("join_type", joinType);
        params.put("left_window_end_index", leftWindowEndIndex);
        params.put("right_window_end_index", rightWindowEndIndex);
        ArrayNode f = params.putArray("filter_nulls");
        for (boolean b : filterNulls) {
            f.add(b);
        }
        if (nullKeyEmitImmediately) {
            params.put("null_key_emit_immediately", true);
        }
        if (condition != null) {
            try {
                params.set("condition", JSON.readTree(condition));
            } catch (JsonProcessingException e) {
                throw new IllegalStateException("residual condition " + condition, e);
            }
        }
        if (!shiftTimeZone.equals(TimeZone.getTimeZone("UTC").toZoneId())) {
            writeZone(params.putObject("shift_zone"), shiftTimeZone);
        }
    }

    /**
     * The zone as Go computes Flink's timer times from it ({@code TimeWindowUtil
     * .toEpochMillsForTimer}): {@code useDaylightTime()} and java.time's offset transitions, so the
     * JVM's zone data decides, not Go's.
     */
    static void writeZone(ObjectNode z, ZoneId zone) {
        ZoneRules rules = zone.getRules();
        z.put("id", zone.getId());
        z.put("uses_daylight_time", TimeZone.getTimeZone(zone).useDaylightTime());
        if (rules.isFixedOffset()) {
            z.put("offset", rules.getOffset(Instant.EPOCH).getTotalSeconds() * 1000L);
            return;
        }
        ArrayNode ts = z.putArray("transitions");
        ZoneOffsetTransition t = rules.nextTransition(ZONE_FROM);
        while (t != null && t.getInstant().isBefore(ZONE_UNTIL)) {
            ArrayNode a = ts.addArray();
            a.add(t.getInstant().toEpochMilli());
            a.add(millis(t.getOffsetBefore()));
            a.add(millis(t.getOffsetAfter()));
            t = rules.nextTransition(t.getInstant());
        }
        z.put("offset", millis(rules.getOffset(ZONE_FROM)));
        if (!rules.getTransitionRules().isEmpty()) {
            z.put("until", ZONE_UNTIL.toEpochMilli());
        }
    }

    private static long millis(ZoneOffset o) {
        return o.getTotalSeconds() * 1000L;
    }
}
