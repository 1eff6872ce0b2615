package io.ferrystream.ferry.kinds.groupaggregate;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.groupaggregate.TwoPhaseAggregates.PartialCalls;
import io.ferrystream.ferry.operators.OneInputNativeOperator;
import io.ferrystream.ferry.planner.Decision;
import io.ferrystream.ferry.planner.FlinkFields;
import io.ferrystream.ferry.planner.NativeKind;
import io.ferrystream.ferry.planner.NativeSupport;
import io.ferrystream.ferry.planner.NativeTranslation;
import io.ferrystream.ferry.planner.candidates.GlobalGroupAggregateCandidate;

import org.apache.calcite.rel.core.AggregateCall;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.config.ExecutionConfigOptions;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.hint.StateTtlHint;
import org.apache.flink.table.planner.plan.nodes.exec.StateMetadata;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecGlobalGroupAggregate;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalGlobalGroupAggregate;
import org.apache.flink.table.planner.plan.utils.ChangelogPlanUtils;
import org.apache.flink.table.planner.plan.utils.MinibatchUtil;
import org.apache.flink.table.planner.utils.JavaScalaConversionUtil;
import org.apache.flink.table.types.logical.RowType;

import javax.annotation.Nullable;

import java.util.List;

/**
 * The global aggregate kind ({@value GlobalGroupAggregateSpec#KIND}): the global half of a
 * two-phase GROUP BY (Flink's {@code KeyedMapBundleOperator} running {@code
 * MiniBatchGlobalGroupAggFunction}), run by the generic one-input operator keyed by the partial
 * rows' grouping fields, one batch per bundle. The checks shared with the local aggregate come
 * first, with the same reasons ({@link LocalGroupAggregateKind}); then the fields that cross (the
 * whole partial row, and the local input's fields the calls read, whose types pick the
 * accumulators); then Go's verdict on the exact spec, which includes that Flink's partial row is
 * the one Go merges. Its input is Flink's partial rows, from Flink's local aggregate, Ferry's, or
 * Flink's incremental aggregate alike; or, behind a native producer, frames of them ({@link
 * #frameKeys}). The operator imports Flink's {@code accState} ({@link FlinkAccStates#global}).
 */
public final class GlobalGroupAggregateKind extends NativeKind<StreamPhysicalGlobalGroupAggregate, StreamExecGlobalGroupAggregate> {
    /** The kill switch of the native global aggregate. */
    public static final ConfigOption<Boolean> ENABLED =
            FerryOptions.killSwitch("global-group-aggregate", "the native global aggregate of a two-phase GROUP BY");

    public GlobalGroupAggregateKind() {
        super(GlobalGroupAggregateSpec.KIND, StreamPhysicalGlobalGroupAggregate.class, StreamExecGlobalGroupAggregate.class, ENABLED,
                GlobalGroupAggregateCandidate::new);
    }


    /** It reads frames of the partial rows, keyed by its grouping. */
    @Override
    protected int[] frameKeys(StreamPhysicalGlobalGroupAggregate agg) {
        return agg.grouping();
    }

    @Override
    protected Decision match(StreamPhysicalGlobalGroupAggregate agg, ReadableConfig config) {
        AggregateCall[] aggCalls = JavaScalaConversionUtil.toJava(agg.aggCalls()).toArray(new AggregateCall[0]);
        boolean[] retractions = agg.aggCallNeedRetractions();
        FlinkTypeFactory typeFactory = (FlinkTypeFactory) agg.getCluster().getTypeFactory();
        RowType localInput = FlinkTypeFactory.toLogicalRowType(agg.localAggInputRowType());
        Integer indexOfCountStar = GlobalGroupAggregateCandidate.indexOfCountStarOrNull(agg);
        RowType inputType = FlinkTypeFactory.toLogicalRowType(agg.getInput().getRowType());
        RowType outputType = FlinkTypeFactory.toLogicalRowType(agg.getRowType());
        String reason = reason(typeFactory, inputType, outputType, agg.grouping(), aggCalls, retractions, localInput,
                agg.needRetraction(), indexOfCountStar);
        if (reason != null) {
            return Decision.fallback(reason);
        }
        Long hint = StateTtlHint.getStateTtlFromHintOnSingleRel(agg.hints());
        long ttlMs = hint != null ? hint : config.get(ExecutionConfigOptions.IDLE_STATE_RETENTION).toMillis();
        GlobalGroupAggregateSpec spec = TwoPhaseAggregates.globalSpec(nativeDescription(agg), inputType, agg.grouping(),
                localInput, PartialCalls.of(typeFactory, localInput, aggCalls, retractions, agg.needRetraction(), indexOfCountStar),
                agg.needRetraction(), ChangelogPlanUtils.generateUpdateBefore(agg), ttlMs);
        return NativeSupport.check(spec, outputType).map(Decision::fallback).orElse(Decision.nativeNode());
    }

    @Override
    protected Transformation<?> translate(StreamExecGlobalGroupAggregate flink, NativeTranslation t) {
        Class<?> c = StreamExecGlobalGroupAggregate.class;
        int[] grouping = FlinkFields.read(flink, c, "grouping");
        AggregateCall[] aggCalls = FlinkFields.read(flink, c, "aggCalls");
        boolean[] retractions = FlinkFields.read(flink, c, "aggCallNeedRetractions");
        RowType localInput = FlinkFields.read(flink, c, "localAggInputRowType");
        boolean generateUpdateBefore = FlinkFields.<Boolean>read(flink, c, "generateUpdateBefore");
        boolean needRetraction = FlinkFields.<Boolean>read(flink, c, "needRetraction");
        Integer indexOfCountStar = FlinkFields.read(flink, c, "indexOfCountStar");
        List<StateMetadata> stateMetadata = FlinkFields.read(flink, c, "stateMetadataList");
        long ttlMs = StateMetadata.getStateTtlForOneInputOperator(t.config(), stateMetadata);
        FlinkTypeFactory typeFactory = t.planner().getTypeFactory();
        RowType inputType = t.inputType(0);
        RowType outputType = t.outputType();

        String reason = MinibatchUtil.isMiniBatchEnabled(t.config())
                ? null
                : "table.exec.mini-batch.enabled=false: Flink refuses a two-phase plan without mini-batch";
        if (reason == null) { // what the planner checked; a plan loaded from JSON is decided here only
            reason = reason(typeFactory, inputType, outputType, grouping, aggCalls, retractions, localInput, needRetraction,
                    indexOfCountStar);
        }
        GlobalGroupAggregateSpec spec = null;
        if (reason == null) {
            spec = TwoPhaseAggregates.globalSpec(t.description(), inputType, grouping, localInput,
                    PartialCalls.of(typeFactory, localInput, aggCalls, retractions, needRetraction, indexOfCountStar),
                    needRetraction, generateUpdateBefore, ttlMs);
            reason = t.check(spec, outputType).orElse(null);
        }
        if (reason != null) {
            return t.fallback(reason);
        }
        // a batch is a bundle of Flink's count trigger (MinibatchUtil.createMiniBatchTrigger)
        OneInputNativeOperator<GlobalGroupAggregateSpec> operator = new OneInputNativeOperator<>(spec, outputType, t.batching(true));
        operator.importingFlinkState(FlinkAccStates.global(typeFactory, inputType, grouping, localInput, aggCalls,
                retractions, needRetraction, indexOfCountStar, ttlMs));
        return t.oneInput(StreamExecGlobalGroupAggregate.GLOBAL_GROUP_AGGREGATE_TRANSFORMATION, operator, grouping);
    }

    /**
     * Why the global aggregate of these arguments cannot be native before its spec is built, or
     * null: its calls, their partial state and record counter, the key layout, the types crossing.
     */
    static String reason(FlinkTypeFactory typeFactory, RowType inputType, RowType outputType, int[] grouping,
            AggregateCall[] aggCalls, boolean[] retractions, RowType localInput, boolean needRetraction,
            @Nullable Integer indexOfCountStar) {
        String reason = TwoPhaseAggregates.callsReason(aggCalls);
        if (reason != null) {
            return reason;
        }
        PartialCalls calls = PartialCalls.of(typeFactory, localInput, aggCalls, retractions, needRetraction, indexOfCountStar);
        reason = TwoPhaseAggregates.partialStateReason(calls.calls(), localInput);
        if (reason == null) {
            reason = TwoPhaseAggregates.recordCounterReason(calls.calls(), TwoPhaseAggregates.countStar(calls.infos()), localInput);
        }
        if (reason == null && !TwoPhaseAggregates.leadingKeys(grouping)) {
            reason = "grouping fields that do not lead the partial rows: not native yet";
        }
        return reason != null ? reason : typeReason(grouping.length, aggCalls, inputType, localInput, outputType);
    }

    /** Why a field of the partial row, an argument or an output field cannot cross, or null. */
    private static String typeReason(int keys, AggregateCall[] aggCalls, RowType in, RowType localInput, RowType out) {
        for (int i = 0; i < in.getFieldCount(); i++) {
            String r = carriedReason(i < keys ? "key" : "partial field", in.getFieldNames().get(i), in.getTypeAt(i));
            if (r != null) {
                return r;
            }
        }
        for (AggregateCall call : aggCalls) {
            for (int a : call.getArgList()) {
                String r = carriedReason("argument", localInput.getFieldNames().get(a), localInput.getTypeAt(a));
                if (r != null) {
                    return r;
                }
            }
        }
        return fieldsReason("output field", out);
    }
}
