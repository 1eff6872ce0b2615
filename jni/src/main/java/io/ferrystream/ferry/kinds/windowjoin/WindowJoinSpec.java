package io.ferrystream.ferry.kinds.windowjoin;

import io.ferrystream.ferry.operators.NativeSpec;

import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarBinaryType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.time.zone.ZoneOffsetTransition;
import java.time.zone.ZoneRules;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.TimeZone;

/**
 * The spec of one native window join (kind {@value #KIND}): Flink's {@code WindowJoinOperator}.
 * The rows stay in the JVM ({@link FerryWindowJoinOperator}); what crosses into Go per row of
 * input 0 (the join's left input) and input 1 (its right input) is its equi-join keys (never the
 * window columns), its window_end and its handle, a BIGINT naming the row ({@link #NO_ROW} for a
 * row the operator does not keep). Input {@value #ROWS_INPUT} carries the kept rows' bytes before
 * a snapshot. Go's output ({@link #WIRE_OUTPUT}) names, per window that fires, its rows by
 * handle; the operator joins them. The parameters are what Flink's {@code StreamExecWindowJoin}
 * builds its operator from, but the residual condition (the operator evaluates Flink's generated
 * one): join type, the window_end column of each input, the null filter of each key and the
 * shift time zone, plus {@code ferry.join.null-key.emit-immediately}, which the operator applies
 * before rows reach Go.
 */
public final class WindowJoinSpec extends NativeSpec {
    private static final long serialVersionUID = 1L;

    /** The library's name of this operator kind. */
    public static final String KIND = "window_join";

    /** The input on which the kept rows' bytes reach Go before a snapshot. */
    public static final int ROWS_INPUT = 2;

    /** The handle of a row the operator does not keep (windowjoin.NoRow). */
    public static final long NO_ROW = Long.MIN_VALUE;

    /** Input {@value #ROWS_INPUT}: per kept row its side (0 left, 1 right), handle and BinaryRowData bytes. */
    static final RowType ROWS_TYPE = new RowType(false, List.of(
            new RowType.RowField("side", new IntType(false)),
            new RowType.RowField("handle", new BigIntType(false)),
            new RowType.RowField("row", new VarBinaryType(false, VarBinaryType.MAX_LENGTH))));

    /**
     * Go's output: per row a kind (windowjoin.EmitLeft .. RestoredRight), a handle and, for the
     * restored kinds, the row's bytes.
     */
    public static final RowType WIRE_OUTPUT = new RowType(false, List.of(
            new RowType.RowField("kind", new IntType(false)),
            new RowType.RowField("handle", new BigIntType(false)),
            new RowType.RowField("row", new VarBinaryType(true, VarBinaryType.MAX_LENGTH))));

    /** Transitions of zones with recurring rules are listed from this year ... */
    private static final Instant ZONE_FROM = Instant.parse("1800-01-01T00:00:00Z");
    /** ... up to this one; later window ends are an error in Go. */
    private static final Instant ZONE_UNTIL = Instant.parse("2200-01-01T00:00:00Z");

    private final RowType[] types;
    private final int[][] keys;
    private final String joinType;
    private final int[] windowEndIndex;
    private final boolean[] filterNulls;
    private final ZoneId shiftTimeZone;
    private final boolean nullKeyEmitImmediately;

    /**
     * @param joinType {@code INNER}, {@code LEFT}, {@code RIGHT}, {@code FULL}, {@code SEMI} or
     *     {@code ANTI}
     * @param filterNulls per key: true for {@code =} (a NULL key joins nothing), false for {@code IS
     *     NOT DISTINCT FROM}
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
            ZoneId shiftTimeZone,
            boolean nullKeyEmitImmediately) {
        super(KIND, name, List.of(
                wire(leftType, leftKeys, leftWindowEndIndex),
                wire(rightType, rightKeys, rightWindowEndIndex),
                Input.of(ROWS_TYPE, new int[] {0, 1, 2}, new int[0], new int[0])));
        this.types = new RowType[] {leftType, rightType};
        this.keys = new int[][] {leftKeys.clone(), rightKeys.clone()};
        this.joinType = Objects.requireNonNull(joinType);
        this.windowEndIndex = new int[] {leftWindowEndIndex, rightWindowEndIndex};
        this.filterNulls = filterNulls.clone();
        this.shiftTimeZone = Objects.requireNonNull(shiftTimeZone);
        this.nullKeyEmitImmediately = nullKeyEmitImmediately;
    }

    /** The row type of input {@code side} (0 left, 1 right). */
    public RowType type(int side) {
        return types[side];
    }

    /** The equi-join key fields of input {@code side}, in join-key order. */
    int[] keys(int side) {
        return keys[side];
    }

    /** The window_end field of input {@code side}. */
    public int windowEndIndex(int side) {
        return windowEndIndex[side];
    }

    public int leftWindowEndIndex() {
        return windowEndIndex[0];
    }

    public int rightWindowEndIndex() {
        return windowEndIndex[1];
    }

    /** Per key: true where a NULL makes the key join nothing. */
    boolean[] filterNulls() {
        return filterNulls;
    }

    /** The join type's name, as Flink's {@code FlinkJoinType}. */
    String joinType() {
        return joinType;
    }

    /** {@code ferry.join.null-key.emit-immediately}. */
    boolean nullKeyEmitImmediately() {
        return nullKeyEmitImmediately;
    }

    /** Flink's shift time zone of the window ends. */
    public ZoneId shiftTimeZone() {
        return shiftTimeZone;
    }

    /** What crosses into Go of an input row: its keys, its window_end, then its handle. */
    private static Input wire(RowType type, int[] keys, int windowEnd) {
        List<RowType.RowField> fields = new ArrayList<>(type.getFields());
        fields.add(new RowType.RowField("$handle", new BigIntType(false)));
        int[] projection = new int[keys.length + 2];
        int[] wireKeys = new int[keys.length];
        for (int k = 0; k < keys.length; k++) {
            projection[k] = keys[k];
            wireKeys[k] = k;
        }
        projection[keys.length] = windowEnd;
        projection[keys.length + 1] = type.getFieldCount();
        return Input.of(new RowType(type.isNullable(), fields), projection, wireKeys, new int[0]);
    }

    @Override
    protected void writeParams(ObjectNode params) {
        params.put("join_type", joinType);
        params.put("left_window_end_index", keys[0].length);
        params.put("right_window_end_index", keys[1].length);
        ArrayNode f = params.putArray("filter_nulls");
        for (boolean b : filterNulls) {
            f.add(b);
        }
        if (!shiftTimeZone.equals(TimeZone.getTimeZone("UTC").toZoneId())) {
            writeZone(params.putObject("shift_zone"), shiftTimeZone);
        }
    }

    /**
     * The zone as Go computes Flink's timer times from it ({@code TimeWindowUtil
     * .toEpochMillsForTimer}): {@code useDaylightTime()} and java.time's offset transitions, so the
     * JVM's zone data decides, not Go's. The window aggregate writes its zone so too.
     */
    public static void writeZone(ObjectNode z, ZoneId zone) {
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
