package io.ferrystream.ferry.kinds.windowaggregate;

import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateSpec;
import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateSpec.Call;
import io.ferrystream.ferry.kinds.groupaggregate.ProjectedCalls;
import io.ferrystream.ferry.kinds.windowjoin.WindowJoinSpec;
import io.ferrystream.ferry.operators.NativeSpec;

import org.apache.flink.table.types.logical.RowType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.time.ZoneId;
import java.util.List;
import java.util.Objects;
import java.util.TimeZone;

/**
 * The spec of one native window aggregate (kind {@value #KIND}): Flink's {@code WindowAggOperator}
 * of a single-phase window TVF aggregation on row time. What crosses into Go per row is the
 * grouping keys, the calls' arguments and the row time ({@link ProjectedCalls}, no Java-String
 * flags: Flink's window buffer serializes every row, so its MIN/MAX compare strings as bytes).
 * The parameters are what {@code StreamExecWindowAggregate} builds its operator from: the slice
 * assigner (window shape, size, slide or step, offset, row-time field, shift time zone), the calls
 * with Flink's {@code indexOfCountStar}, and the window properties the output ends with.
 */
public final class WindowAggregateSpec extends NativeSpec {
    private static final long serialVersionUID = 1L;

    /** The library's name of this operator kind. */
    public static final String KIND = "window_aggregate";

    private final String window;
    private final long sizeMs;
    private final long slideMs;
    private final long stepMs;
    private final long offsetMs;
    private final int rowtimeIndex;
    private final ZoneId shiftTimeZone;
    private final List<Call> calls;
    private final int countStar;
    private final boolean countStarInserted;
    private final List<String> properties;

    /**
     * @param name the operator's description, used in messages
     * @param inputType Flink's input row type (as it crosses: TIMESTAMP_LTZ as TIMESTAMP)
     * @param grouping Flink's grouping fields
     * @param calls the calls, their arguments indexing Flink's input row; with an inserted
     *     COUNT(*) last
     * @param window {@code TUMBLE}, {@code HOP} or {@code CUMULATE}
     * @param slideMs HOP's slide, else 0
     * @param stepMs CUMULATE's step, else 0
     * @param rowtimeField the row-time field of Flink's input row
     * @param shiftTimeZone Flink's shift time zone: UTC for TIMESTAMP, the session zone for
     *     TIMESTAMP_LTZ
     * @param countStar Flink's {@code indexOfCountStar} as a call index, or -1
     * @param countStarInserted the {@code countStar} call is the one Flink inserted
     * @param properties {@code window_start}, {@code window_end}, {@code window_time}, in output order
     */
    public WindowAggregateSpec(
            String name,
            RowType inputType,
            int[] grouping,
            List<Call> calls,
            String window,
            long sizeMs,
            long slideMs,
            long stepMs,
            long offsetMs,
            int rowtimeField,
            ZoneId shiftTimeZone,
            int countStar,
            boolean countStarInserted,
            List<String> properties) {
        this(name, ProjectedCalls.of(inputType, grouping, calls, false, new int[] {rowtimeField}), rowtimeField, window, sizeMs,
                slideMs, stepMs, offsetMs, shiftTimeZone, countStar, countStarInserted, properties);
    }

    private WindowAggregateSpec(String name, ProjectedCalls p, int rowtimeField, String window, long sizeMs, long slideMs,
            long stepMs, long offsetMs, ZoneId shiftTimeZone, int countStar, boolean countStarInserted, List<String> properties) {
        super(KIND, name, List.of(p.input()));
        this.calls = p.calls();
        this.rowtimeIndex = p.indexOf(rowtimeField);
        this.window = Objects.requireNonNull(window);
        this.sizeMs = sizeMs;
        this.slideMs = slideMs;
        this.stepMs = stepMs;
        this.offsetMs = offsetMs;
        this.shiftTimeZone = Objects.requireNonNull(shiftTimeZone);
        this.countStar = countStar;
        this.countStarInserted = countStarInserted;
        this.properties = List.copyOf(properties);
    }

    /** The window shape's name. */
    public String window() {
        return window;
    }

    /** Flink's shift time zone. */
    public ZoneId shiftTimeZone() {
        return shiftTimeZone;
    }

    /**
     * The window aggregate's parameters (docs/abi.md): {@code window}, {@code size_ms}, {@code
     * slide_ms} / {@code step_ms}, {@code offset_ms}, {@code rowtime_index}, {@code shift_zone}
     * unless UTC, {@code aggs}, {@code count_star} and {@code count_star_inserted}, {@code
     * properties}.
     */
    @Override
    protected void writeParams(ObjectNode params) {
        params.put("window", window);
        params.put("size_ms", sizeMs);
        if (slideMs != 0) {
            params.put("slide_ms", slideMs);
        }
        if (stepMs != 0) {
            params.put("step_ms", stepMs);
        }
        params.put("offset_ms", offsetMs);
        params.put("rowtime_index", rowtimeIndex);
        if (!shiftTimeZone.equals(TimeZone.getTimeZone("UTC").toZoneId())) {
            WindowJoinSpec.writeZone(params.putObject("shift_zone"), shiftTimeZone);
        }
        GroupAggregateSpec.writeCalls(params.putArray("aggs"), calls);
        if (countStar >= 0) {
            params.put("count_star", countStar);
            params.put("count_star_inserted", countStarInserted);
        }
        ArrayNode props = params.putArray("properties");
        properties.forEach(props::add);
    }
}
