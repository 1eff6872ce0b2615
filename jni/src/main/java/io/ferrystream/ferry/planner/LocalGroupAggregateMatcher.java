package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.operators.GroupAggregateSpec;
import io.ferrystream.ferry.operators.LocalGroupAggregateSpec;

import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.core.AggregateCall;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalLocalGroupAggregate;
import org.apache.flink.table.planner.plan.utils.AggregateInfoList;
import org.apache.flink.table.planner.utils.JavaScalaConversionUtil;
import org.apache.flink.table.types.logical.RowType;

import java.util.List;
import java.util.Optional;

/**
 * The local aggregate kind's matcher: decides whether the {@link
 * StreamPhysicalLocalGroupAggregate} of a two-phase plan (mini-batch on, agg-phase strategy AUTO
 * or TWO_PHASE) runs natively. The checks shared with the global aggregate come first, with the
 * same reasons on both nodes (the calls, then whether their partial state crosses as Arrow
 * columns: {@link TwoPhaseAggregates#partialStateReason}); then the fields that cross; then Go's
 * verdict on the exact spec, and whether the partial row Go writes is the one Flink's type
 * declares. Flink's exchange stays between the two halves, carrying Flink's partial rows, so
 * either half may run natively while the other stays Flink's.
 */
public final class LocalGroupAggregateMatcher extends NativeMatcher<StreamPhysicalLocalGroupAggregate> {
    /** The kill switch of the native local aggregate. */
    public static final ConfigOption<Boolean> ENABLED =
            FerryOptions.killSwitch("local-group-aggregate", "the native local aggregate of a two-phase GROUP BY");

    LocalGroupAggregateMatcher() {
        super(LocalGroupAggregateSpec.KIND, StreamPhysicalLocalGroupAggregate.class, ENABLED, FerryStreamExecLocalGroupAggregate.class);
    }

    @Override
    protected Decision match(StreamPhysicalLocalGroupAggregate agg, ReadableConfig config) {
        AggregateCall[] aggCalls = JavaScalaConversionUtil.toJava(agg.aggCalls()).toArray(new AggregateCall[0]);
        boolean[] retractions = FerryStreamPhysicalLocalGroupAggregate.aggCallNeedRetractions(agg);
        boolean needRetraction = FerryStreamPhysicalLocalGroupAggregate.needRetraction(agg);
        FlinkTypeFactory typeFactory = (FlinkTypeFactory) agg.getCluster().getTypeFactory();
        RowType inputType = FlinkTypeFactory.toLogicalRowType(agg.getInput().getRowType());
        RowType outputType = FlinkTypeFactory.toLogicalRowType(agg.getRowType());
        String reason = reason(typeFactory, inputType, outputType, agg.grouping(), aggCalls, retractions, needRetraction);
        if (reason != null) {
            return Decision.fallback(reason);
        }
        LocalGroupAggregateSpec spec =
                TwoPhaseAggregates.localSpec(
                        agg.getRelDetailedDescription(), typeFactory, inputType, agg.grouping(), aggCalls, retractions, needRetraction);
        Optional<String> refused = NativeSupport.check(spec, outputType);
        return refused.map(Decision::fallback).orElse(Decision.nativeNode());
    }

    /**
     * Why the local aggregate of these arguments cannot be native before its spec is built, or
     * null: its calls, their partial state, the types crossing. The exec node asks again at
     * translation (a plan loaded from JSON is decided there only).
     */
    static String reason(FlinkTypeFactory typeFactory, RowType inputType, RowType outputType, int[] grouping,
            AggregateCall[] aggCalls, boolean[] retractions, boolean needRetraction) {
        String reason = TwoPhaseAggregates.callsReason(aggCalls);
        if (reason != null) {
            return reason;
        }
        AggregateInfoList infos = TwoPhaseAggregates.infoList(typeFactory, inputType, aggCalls, retractions, needRetraction, null, false);
        List<GroupAggregateSpec.Call> calls = TwoPhaseAggregates.calls(aggCalls, retractions, needRetraction, infos);
        reason = TwoPhaseAggregates.partialStateReason(calls, inputType);
        return reason != null ? reason : typeReason(grouping, aggCalls, inputType, outputType);
    }

    @Override
    protected RelNode nativeNode(StreamPhysicalLocalGroupAggregate agg) {
        return FerryStreamPhysicalLocalGroupAggregate.of(agg);
    }

    @Override
    protected RelNode fallbackNode(StreamPhysicalLocalGroupAggregate agg, String reason) {
        return FerryStreamPhysicalLocalGroupAggregate.fallback(agg, reason);
    }

    /** Why a key, argument, FILTER or output field cannot cross the Arrow boundary, or null. */
    private static String typeReason(int[] grouping, AggregateCall[] aggCalls, RowType in, RowType out) {
        for (int g : grouping) {
            String r = carriedReason("key", in.getFieldNames().get(g), in.getTypeAt(g));
            if (r != null) {
                return r;
            }
        }
        for (AggregateCall call : aggCalls) {
            for (int a : call.getArgList()) {
                String r = carriedReason("argument", in.getFieldNames().get(a), in.getTypeAt(a));
                if (r != null) {
                    return r;
                }
            }
        }
        return TwoPhaseAggregates.fieldsReason("output field", out);
    }
}
