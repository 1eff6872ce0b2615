package io.ferrystream.ferry.kinds.windowaggregate;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateKind;
import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateSpec;
import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateSpecs;
import io.ferrystream.ferry.planner.Decision;
import io.ferrystream.ferry.planner.FlinkFields;
import io.ferrystream.ferry.planner.NativeKind;
import io.ferrystream.ferry.planner.NativeSupport;
import io.ferrystream.ferry.planner.NativeTranslation;
import io.ferrystream.ferry.planner.candidates.WindowAggregateCandidate;

import org.apache.calcite.rel.core.AggregateCall;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.config.ExecutionConfigOptions;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.plan.logical.CumulativeWindowSpec;
import org.apache.flink.table.planner.plan.logical.HoppingWindowSpec;
import org.apache.flink.table.planner.plan.logical.TimeAttributeWindowingStrategy;
import org.apache.flink.table.planner.plan.logical.TumblingWindowSpec;
import org.apache.flink.table.planner.plan.logical.WindowSpec;
import org.apache.flink.table.planner.plan.logical.WindowingStrategy;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecWindowAggregate;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalWindowAggregate;
import org.apache.flink.table.planner.plan.utils.AggregateInfoList;
import org.apache.flink.table.planner.plan.utils.AggregateUtil;
import org.apache.flink.table.planner.utils.JavaScalaConversionUtil;
import org.apache.flink.table.planner.utils.TableConfigUtils;
import org.apache.flink.table.runtime.groupwindow.NamedWindowProperty;
import org.apache.flink.table.runtime.groupwindow.RowtimeAttribute;
import org.apache.flink.table.runtime.groupwindow.WindowEnd;
import org.apache.flink.table.runtime.groupwindow.WindowProperty;
import org.apache.flink.table.runtime.groupwindow.WindowStart;
import org.apache.flink.table.runtime.util.TimeWindowUtil;
import org.apache.flink.table.types.logical.RowType;

import java.time.Duration;
import java.time.ZoneId;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The window aggregate kind ({@value WindowAggregateSpec#KIND}): Flink's {@code WindowAggOperator}
 * of a single-phase window TVF aggregation ({@code StreamPhysicalWindowAggregate}, {@code
 * StreamExecWindowAggregate}) run by {@link FerryWindowAggregateOperator}. A preview ({@link
 * FerryOptions#previewSwitch}): off by default, and then it claims no node. When on, native:
 * {@code GROUP BY window_start, window_end, ...} over row-time TUMBLE, HOP and CUMULATE windows
 * (TIMESTAMP and TIMESTAMP_LTZ, with offsets), insert-only input, the calls the GROUP BY runs
 * natively without DISTINCT or FILTER, over fields that cross the Arrow boundary. Flink's
 * otherwise, with the reason: processing time, windows of an earlier window TVF (window_start and
 * window_end as columns), SESSION windows, changelog input, async state, the proctime property,
 * then the calls, the types and libferry.so's verdict (DISTINCT, FILTER). The two-phase plan
 * (Flink's default {@code table.optimizer.agg-phase-strategy} AUTO: local and global window
 * aggregates) is not claimed yet.
 */
public final class WindowAggregateKind extends NativeKind<StreamPhysicalWindowAggregate, StreamExecWindowAggregate> {
    /** The switch of the native window aggregate, a preview: off by default. */
    public static final ConfigOption<Boolean> ENABLED =
            FerryOptions.previewSwitch("window-aggregate", "the native window aggregate");

    public WindowAggregateKind() {
        super(WindowAggregateSpec.KIND, StreamPhysicalWindowAggregate.class, StreamExecWindowAggregate.class, ENABLED,
                WindowAggregateCandidate::new);
    }

    @Override
    protected Decision match(StreamPhysicalWindowAggregate agg, ReadableConfig config) {
        RowType in = FlinkTypeFactory.toLogicalRowType(agg.getInput().getRowType());
        RowType out = FlinkTypeFactory.toLogicalRowType(agg.getRowType());
        AggregateCall[] calls = JavaScalaConversionUtil.toJava(agg.aggCalls()).toArray(new AggregateCall[0]);
        NamedWindowProperty[] props = JavaScalaConversionUtil.toJava(agg.namedWindowProperties()).toArray(new NamedWindowProperty[0]);
        AggregateInfoList infos = agg.aggInfoList();
        String reason = reason(agg.windowing(), props, AggregateUtil.needRetraction(agg), calls, in, out, agg.grouping(),
                infos, config);
        if (reason != null) {
            return Decision.fallback(reason);
        }
        WindowAggregateSpec spec = build(nativeDescription(agg), in, out, agg.grouping(), calls, agg.windowing(), props, infos,
                config);
        return NativeSupport.check(spec).map(Decision::fallback).orElse(Decision.nativeNode());
    }

    /**
     * Flink's window aggregate as {@link FerryWindowAggregateOperator}: the transformation keeps
     * Flink's name ({@code window-aggregate}, hence its UID and operator ID), the input's
     * parallelism, the key selector over the grouping fields and the key type.
     */
    @Override
    protected Transformation<?> translate(StreamExecWindowAggregate flink, NativeTranslation t) {
        Class<?> c = StreamExecWindowAggregate.class;
        int[] grouping = FlinkFields.read(flink, c, "grouping");
        AggregateCall[] calls = FlinkFields.read(flink, c, "aggCalls");
        WindowingStrategy windowing = FlinkFields.read(flink, c, "windowing");
        NamedWindowProperty[] props = FlinkFields.read(flink, c, "namedWindowProperties");
        boolean needRetraction = FlinkFields.read(flink, c, "needRetraction");
        RowType in = t.inputType(0);
        RowType out = t.outputType();
        AggregateInfoList infos = AggregateUtil.deriveStreamWindowAggregateInfoList(t.planner().getTypeFactory(), in,
                JavaScalaConversionUtil.toScala(Arrays.asList(calls)), needRetraction, windowing.getWindow(), true);
        // what the planner checked; a plan loaded from JSON is decided here only
        String reason = reason(windowing, props, needRetraction, calls, in, out, grouping, infos, t.config());
        WindowAggregateSpec spec = null;
        if (reason == null) {
            spec = build(t.description(), in, out, grouping, calls, windowing, props, infos, t.config());
            reason = t.check(spec).orElse(null);
        }
        if (reason != null) {
            return t.fallback(reason);
        }
        FerryWindowAggregateOperator operator = new FerryWindowAggregateOperator(spec, out, t.batching(false));
        return t.oneInput(StreamExecWindowAggregate.WINDOW_AGGREGATE_TRANSFORMATION, operator, grouping);
    }

    /**
     * Why the aggregate stays Flink's before Go is asked, or null, in the order Flink's
     * translation meets them; translation repeats it.
     */
    static String reason(WindowingStrategy windowing, NamedWindowProperty[] props, boolean needRetraction,
            AggregateCall[] calls, RowType in, RowType out, int[] grouping, AggregateInfoList infos, ReadableConfig config) {
        if (!(windowing instanceof TimeAttributeWindowingStrategy)) {
            return "windowing " + windowing.getClass().getSimpleName()
                    + " (the window columns of an earlier window TVF or a local window aggregate): not native yet";
        }
        if (!windowing.isRowtime()) {
            return "processing-time windows: not native yet";
        }
        WindowSpec w = windowing.getWindow();
        if (!(w instanceof TumblingWindowSpec || w instanceof HoppingWindowSpec || w instanceof CumulativeWindowSpec)) {
            return w.getClass().getSimpleName() + " (unsliced windows, UnsliceSyncStateWindowAggProcessor): not native yet";
        }
        if (needRetraction) {
            return "window aggregate over changelog input (retractions): not native yet";
        }
        if (AggregateUtil.isAsyncStateEnabled(config, infos)) {
            return "async state (" + ExecutionConfigOptions.TABLE_EXEC_ASYNC_STATE_ENABLED.key()
                    + ": the async-state window aggregate): not native yet";
        }
        for (NamedWindowProperty p : props) {
            if (property(p.getProperty()) == null) {
                return "window property " + p.getName() + " (" + p.getProperty() + "): not native yet";
            }
        }
        for (AggregateCall call : calls) {
            String r = GroupAggregateKind.callReason(call);
            if (r != null) {
                return r;
            }
        }
        return GroupAggregateKind.typeReason(in, out, grouping, calls);
    }

    /** The spec's name of a window property, or null for one Go does not write (the proctime). */
    static String property(WindowProperty p) {
        if (p instanceof WindowStart) {
            return "window_start";
        }
        if (p instanceof WindowEnd) {
            return "window_end";
        }
        if (p instanceof RowtimeAttribute) {
            return "window_time";
        }
        return null;
    }

    /**
     * The spec of the operator Flink's exec node would build: its slice assigner's parameters
     * ({@code StreamExecWindowAggregateBase#createWindowAssigner}), the shift time zone, the calls
     * of Flink's {@code AggregateInfoList} with its {@code indexOfCountStar}, the window properties.
     */
    static WindowAggregateSpec build(String description, RowType in, RowType out, int[] grouping, AggregateCall[] aggCalls,
            WindowingStrategy windowing, NamedWindowProperty[] props, AggregateInfoList infos, ReadableConfig config) {
        List<GroupAggregateSpec.Call> calls =
                new ArrayList<>(GroupAggregateSpecs.calls(out, grouping.length, aggCalls, new boolean[aggCalls.length]));
        int countStar = infos.indexOfCountStar().isDefined() ? (Integer) infos.indexOfCountStar().get() : -1;
        boolean inserted = countStar >= 0 && infos.countStarInserted();
        if (inserted) {
            calls.add(new GroupAggregateSpec.Call("COUNT", new int[0], false, "$count1"));
        }
        String window;
        long size;
        long slide = 0;
        long step = 0;
        Duration offset;
        WindowSpec w = windowing.getWindow();
        if (w instanceof TumblingWindowSpec tumble) {
            window = "TUMBLE";
            size = tumble.getSize().toMillis();
            offset = tumble.getOffset();
        } else if (w instanceof HoppingWindowSpec hop) {
            window = "HOP";
            size = hop.getSize().toMillis();
            slide = hop.getSlide().toMillis();
            offset = hop.getOffset();
        } else {
            CumulativeWindowSpec cumulate = (CumulativeWindowSpec) w;
            window = "CUMULATE";
            size = cumulate.getMaxSize().toMillis();
            step = cumulate.getStep().toMillis();
            offset = cumulate.getOffset();
        }
        ZoneId shiftTimeZone = TimeWindowUtil.getShiftTimeZone(windowing.getTimeAttributeType(),
                TableConfigUtils.getLocalTimeZone(config));
        List<String> properties = new ArrayList<>();
        for (NamedWindowProperty p : props) {
            properties.add(property(p.getProperty()));
        }
        return new WindowAggregateSpec(description, ArrowTypes.carriedFields(in), grouping, calls, window, size, slide, step,
                offset == null ? 0 : offset.toMillis(), ((TimeAttributeWindowingStrategy) windowing).getTimeAttributeIndex(),
                shiftTimeZone, countStar, inserted, properties);
    }
}
