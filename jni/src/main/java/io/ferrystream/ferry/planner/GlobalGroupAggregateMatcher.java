package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.operators.GlobalGroupAggregateSpec;
import io.ferrystream.ferry.operators.GroupAggregateSpec;

import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.core.AggregateCall;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.config.ExecutionConfigOptions;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.hint.StateTtlHint;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalGlobalGroupAggregate;
import org.apache.flink.table.planner.plan.utils.AggregateInfoList;
import org.apache.flink.table.planner.plan.utils.ChangelogPlanUtils;
import org.apache.flink.table.planner.utils.JavaScalaConversionUtil;
import org.apache.flink.table.types.logical.RowType;

import javax.annotation.Nullable;

import java.util.List;
import java.util.Optional;

/**
 * The global aggregate kind's matcher: decides whether the {@link
 * StreamPhysicalGlobalGroupAggregate} of a two-phase plan runs natively. The checks shared with
 * the local aggregate come first, with the same reasons ({@link LocalGroupAggregateMatcher});
 * then the fields that cross (the whole partial row, and the local input's fields the calls
 * read, whose types pick the accumulators); then Go's verdict on the exact spec, which includes
 * that Flink's partial row is the one Go merges. Its input is Flink's partial rows, from Flink's
 * local aggregate, Ferry's, or Flink's incremental aggregate alike.
 */
public final class GlobalGroupAggregateMatcher extends NativeMatcher<StreamPhysicalGlobalGroupAggregate> {
    /** The kill switch of the native global aggregate. */
    public static final ConfigOption<Boolean> ENABLED =
            FerryOptions.killSwitch("global-group-aggregate", "the native global aggregate of a two-phase GROUP BY");

    GlobalGroupAggregateMatcher() {
        super(GlobalGroupAggregateSpec.KIND, StreamPhysicalGlobalGroupAggregate.class, ENABLED, FerryStreamExecGlobalGroupAggregate.class);
    }

    @Override
    protected Decision match(StreamPhysicalGlobalGroupAggregate agg, ReadableConfig config) {
        AggregateCall[] aggCalls = JavaScalaConversionUtil.toJava(agg.aggCalls()).toArray(new AggregateCall[0]);
        boolean[] retractions = agg.aggCallNeedRetractions();
        FlinkTypeFactory typeFactory = (FlinkTypeFactory) agg.getCluster().getTypeFactory();
        RowType localInput = FlinkTypeFactory.toLogicalRowType(agg.localAggInputRowType());
        Integer indexOfCountStar = FerryStreamPhysicalGlobalGroupAggregate.indexOfCountStarOrNull(agg);
        RowType inputType = FlinkTypeFactory.toLogicalRowType(agg.getInput().getRowType());
        RowType outputType = FlinkTypeFactory.toLogicalRowType(agg.getRowType());
        String reason = reason(typeFactory, inputType, outputType, agg.grouping(), aggCalls, retractions, localInput,
                agg.needRetraction(), indexOfCountStar);
        if (reason != null) {
            return Decision.fallback(reason);
        }
        GlobalGroupAggregateSpec spec =
                TwoPhaseAggregates.globalSpec(
                        agg.getRelDetailedDescription(),
                        typeFactory,
                        inputType,
                        agg.grouping(),
                        aggCalls,
                        retractions,
                        localInput,
                        agg.needRetraction(),
                        indexOfCountStar,
                        ChangelogPlanUtils.generateUpdateBefore(agg),
                        stateTtlMs(agg, config));
        Optional<String> refused = NativeSupport.check(spec, outputType);
        return refused.map(Decision::fallback).orElse(Decision.nativeNode());
    }

    /**
     * Why the global aggregate of these arguments cannot be native before its spec is built, or
     * null: its calls, their partial state and record counter, the key layout, the types crossing.
     * The exec node asks again at translation (a plan loaded from JSON is decided there only).
     */
    static String reason(FlinkTypeFactory typeFactory, RowType inputType, RowType outputType, int[] grouping,
            AggregateCall[] aggCalls, boolean[] retractions, RowType localInput, boolean needRetraction,
            @Nullable Integer indexOfCountStar) {
        String reason = TwoPhaseAggregates.callsReason(aggCalls);
        if (reason != null) {
            return reason;
        }
        AggregateInfoList infos =
                TwoPhaseAggregates.infoList(typeFactory, localInput, aggCalls, retractions, needRetraction, indexOfCountStar, false);
        List<GroupAggregateSpec.Call> calls = TwoPhaseAggregates.calls(aggCalls, retractions, needRetraction, infos);
        reason = TwoPhaseAggregates.partialStateReason(calls, localInput);
        if (reason == null) {
            reason = TwoPhaseAggregates.recordCounterReason(calls, TwoPhaseAggregates.countStar(infos), localInput);
        }
        if (reason == null && !TwoPhaseAggregates.leadingKeys(grouping)) {
            reason = "grouping fields that do not lead the partial rows: not native yet";
        }
        return reason != null ? reason : typeReason(grouping.length, aggCalls, inputType, localInput, outputType);
    }

    @Override
    protected RelNode nativeNode(StreamPhysicalGlobalGroupAggregate agg) {
        return FerryStreamPhysicalGlobalGroupAggregate.of(agg);
    }

    @Override
    protected RelNode fallbackNode(StreamPhysicalGlobalGroupAggregate agg, String reason) {
        return FerryStreamPhysicalGlobalGroupAggregate.fallback(agg, reason);
    }

    /** The idle-state retention Flink's ExecNode will use (hint first, then the table option). */
    static long stateTtlMs(StreamPhysicalGlobalGroupAggregate agg, ReadableConfig config) {
        Long hint = StateTtlHint.getStateTtlFromHintOnSingleRel(agg.hints());
        return hint != null ? hint : config.get(ExecutionConfigOptions.IDLE_STATE_RETENTION).toMillis();
    }

    /** Why a field of the partial row, an argument or an output field cannot cross, or null. */
    private static String typeReason(int keys, AggregateCall[] aggCalls, RowType in, RowType localInput, RowType out) {
        for (int i = 0; i < in.getFieldCount(); i++) {
            String r = carriedReason(i < keys ? "key" : "partial field", in.getFieldNames().get(i), in.getTypeAt(i));
            if (r != null) {
                return r;
            }
        }
        String r;
        for (AggregateCall call : aggCalls) {
            for (int a : call.getArgList()) {
                r = carriedReason("argument", localInput.getFieldNames().get(a), localInput.getTypeAt(a));
                if (r != null) {
                    return r;
                }
            }
        }
        return TwoPhaseAggregates.fieldsReason("output field", out);
    }
}
