package io.ferrystream.ferry.kinds.groupaggregate;

import io.ferrystream.ferry.arrow.DistinctViews;

import org.apache.calcite.rel.core.AggregateCall;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.plan.utils.AggregateInfo;
import org.apache.flink.table.planner.plan.utils.AggregateInfoList;
import org.apache.flink.table.planner.plan.utils.DistinctInfo;
import org.apache.flink.table.runtime.dataview.MapViewSpec;
import org.apache.flink.table.runtime.functions.aggregate.MaxWithRetractAggFunction;
import org.apache.flink.table.runtime.functions.aggregate.MinWithRetractAggFunction;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.runtime.types.LogicalTypeDataTypeConverter;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;

import javax.annotation.Nullable;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The {@code accState} Flink's group aggregates keep, as their exec nodes compute it
 * (StreamExecGroupAggregate, StreamExecGlobalGroupAggregate: {@code AggregateInfoList} with
 * state-backed data views) and the MapStates of their DISTINCT arguments, for a native operator
 * to import ({@link FlinkAccState}).
 */
final class FlinkAccStates {
    private FlinkAccStates() {}

    /**
     * The state of Flink's single-phase aggregate (GroupAggFunction, MiniBatchGroupAggFunction).
     * Ferry's single-phase operator keeps its own record counter, so an import row carries the
     * record count after the calls' fields, and a count1 Flink inserted is not one of its calls.
     */
    static FlinkAccState singlePhase(FlinkTypeFactory typeFactory, RowType inputType, int[] grouping,
            AggregateCall[] aggCalls, boolean[] aggCallNeedRetractions, boolean needRetraction, long stateTtlMs) {
        AggregateInfoList infos = // as StreamExecGroupAggregate: no existing count star given
                TwoPhaseAggregates.infoList(typeFactory, inputType, aggCalls, aggCallNeedRetractions, needRetraction, null, true);
        LogicalType[] acc = accTypes(infos);
        int aggFields = acc.length - infos.distinctInfos().length; // the DISTINCT placeholders close the row
        int callFields = infos.countStarInserted() ? aggFields - 1 : aggFields; // count1 is the last call
        return new FlinkAccState(keyType(inputType, grouping), acc, callFields, distinctStates(infos), minMaxStates(infos),
                needRetraction ? infos.getIndexOfCountStar() : -1, stateTtlMs > 0, refusal(infos));
    }

    /**
     * The state of Flink's global aggregate (MiniBatchGlobalGroupAggFunction), whose count1 is one
     * of the native operator's calls.
     */
    static FlinkAccState global(FlinkTypeFactory typeFactory, RowType inputType, int[] grouping,
            RowType localAggInputRowType, AggregateCall[] aggCalls, boolean[] aggCallNeedRetractions,
            boolean needRetraction, @Nullable Integer indexOfCountStar, long stateTtlMs) {
        AggregateInfoList infos =
                TwoPhaseAggregates.infoList(typeFactory, localAggInputRowType, aggCalls, aggCallNeedRetractions,
                        needRetraction, indexOfCountStar, true);
        LogicalType[] acc = accTypes(infos);
        return new FlinkAccState(keyType(inputType, grouping), acc, acc.length - infos.distinctInfos().length,
                distinctStates(infos), minMaxStates(infos), -1, stateTtlMs > 0, refusal(infos));
    }

    private static LogicalType[] accTypes(AggregateInfoList infos) {
        return Arrays.stream(infos.getAccTypes()).map(LogicalTypeDataTypeConverter::fromDataTypeToLogicalType).toArray(LogicalType[]::new);
    }

    private static RowType keyType(RowType inputType, int[] grouping) {
        LogicalType[] types = new LogicalType[grouping.length];
        for (int i = 0; i < grouping.length; i++) {
            types[i] = inputType.getTypeAt(grouping[i]);
        }
        return RowType.of(types);
    }

    /**
     * The DISTINCT arguments' MapStates, as AggregateUtil names and types them
     * (DataViewUtils.createDistinctViewSpec: {@code distinctAcc_<i>}, key and value types of the
     * view).
     */
    private static List<FlinkAccState.MapViewState> distinctStates(AggregateInfoList infos) {
        List<FlinkAccState.MapViewState> states = new ArrayList<>();
        for (DistinctInfo d : infos.distinctInfos()) {
            MapViewSpec spec = (MapViewSpec) d.dataViewSpec().get(); // state-backed views
            states.add(view(spec));
        }
        return states;
    }

    /**
     * The data views of MIN/MAX with retraction: each call's accumulator field and its MapState
     * ({@code agg<a>$map}, DataViewUtils.createStateId).
     */
    private static List<FlinkAccState.MinMaxState> minMaxStates(AggregateInfoList infos) {
        List<FlinkAccState.MinMaxState> states = new ArrayList<>();
        int field = 0;
        for (AggregateInfo agg : infos.aggInfos()) {
            if (isMinMaxWithRetraction(agg)) {
                MapViewSpec spec = (MapViewSpec) agg.viewSpecs()[0];
                states.add(new FlinkAccState.MinMaxState(field, view(spec)));
            }
            field += agg.externalAccTypes().length;
        }
        return states;
    }

    private static FlinkAccState.MapViewState view(MapViewSpec spec) {
        return new FlinkAccState.MapViewState(spec.getStateId(), spec.getKeyDataType(), spec.getValueDataType());
    }

    private static boolean isMinMaxWithRetraction(AggregateInfo agg) {
        return (agg.function() instanceof MinWithRetractAggFunction || agg.function() instanceof MaxWithRetractAggFunction)
                && agg.viewSpecs().length == 1 && agg.viewSpecs()[0] instanceof MapViewSpec;
    }

    /** Why Flink's state of {@code infos} is not imported, or null. */
    private static @Nullable String refusal(AggregateInfoList infos) {
        for (DistinctInfo d : infos.distinctInfos()) {
            MapViewSpec spec = (MapViewSpec) d.dataViewSpec().get();
            boolean array = spec.getValueDataType().getLogicalType() instanceof ArrayType;
            try {
                DistinctViews.stateCodec(spec.getKeyDataType().getLogicalType(), array);
            } catch (UnsupportedOperationException e) {
                return "DISTINCT over " + spec.getKeyDataType() + ": " + e.getMessage();
            }
        }
        AggregateInfo[] aggs = infos.aggInfos();
        for (int i = 0; i < aggs.length; i++) {
            if (aggs[i].viewSpecs().length > 0 && !isMinMaxWithRetraction(aggs[i])) {
                return "aggs[" + i + "]: Flink keeps a data view of it in a MapState";
            }
        }
        return null;
    }
}
