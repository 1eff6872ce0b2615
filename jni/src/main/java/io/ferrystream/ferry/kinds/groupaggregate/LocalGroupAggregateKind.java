package io.ferrystream.ferry.kinds.groupaggregate;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.groupaggregate.TwoPhaseAggregates.PartialCalls;
import io.ferrystream.ferry.operators.OneInputNativeOperator;
import io.ferrystream.ferry.planner.Decision;
import io.ferrystream.ferry.planner.FlinkFields;
import io.ferrystream.ferry.planner.NativeKind;
import io.ferrystream.ferry.planner.NativeSupport;
import io.ferrystream.ferry.planner.NativeTranslation;
import io.ferrystream.ferry.planner.candidates.LocalGroupAggregateCandidate;

import org.apache.calcite.rel.core.AggregateCall;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecLocalGroupAggregate;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalLocalGroupAggregate;
import org.apache.flink.table.planner.utils.JavaScalaConversionUtil;
import org.apache.flink.table.types.logical.RowType;

import java.util.List;

/**
 * The local aggregate kind ({@value LocalGroupAggregateSpec#KIND}): the local half of a two-phase
 * GROUP BY (mini-batch on, agg-phase strategy AUTO or TWO_PHASE; Flink's {@code MapBundleOperator}
 * running {@code MiniBatchLocalGroupAggFunction}), run by the generic one-input operator, unkeyed,
 * one batch per bundle. The checks shared with the global aggregate come first, with the same
 * reasons on both nodes (the calls, then whether their partial state crosses as Arrow columns:
 * {@link TwoPhaseAggregates#partialStateReason}); then the fields that cross; then Go's verdict on
 * the exact spec, and whether the partial row Go writes is the one Flink's type declares. Flink's
 * exchange stays between the two halves, carrying Flink's partial rows, so either half may run
 * natively while the other stays Flink's; between two native halves the exchange can carry frames,
 * which this kind writes ({@link #writesFrames}).
 */
public final class LocalGroupAggregateKind extends NativeKind<StreamPhysicalLocalGroupAggregate, StreamExecLocalGroupAggregate> {
    /** The kill switch of the native local aggregate. */
    public static final ConfigOption<Boolean> ENABLED =
            FerryOptions.killSwitch("local-group-aggregate", "the native local aggregate of a two-phase GROUP BY");

    public LocalGroupAggregateKind() {
        super(LocalGroupAggregateSpec.KIND, StreamPhysicalLocalGroupAggregate.class, StreamExecLocalGroupAggregate.class, ENABLED,
                LocalGroupAggregateCandidate::new);
    }


    /** Its operator emits frames of its partial rows into a columnar exchange. */
    @Override
    public boolean writesFrames() {
        return true;
    }

    @Override
    protected Decision match(StreamPhysicalLocalGroupAggregate agg, ReadableConfig config) {
        AggregateCall[] aggCalls = JavaScalaConversionUtil.toJava(agg.aggCalls()).toArray(new AggregateCall[0]);
        boolean[] retractions = LocalGroupAggregateCandidate.aggCallNeedRetractions(agg);
        boolean needRetraction = LocalGroupAggregateCandidate.needRetraction(agg);
        FlinkTypeFactory typeFactory = (FlinkTypeFactory) agg.getCluster().getTypeFactory();
        RowType inputType = FlinkTypeFactory.toLogicalRowType(agg.getInput().getRowType());
        RowType outputType = FlinkTypeFactory.toLogicalRowType(agg.getRowType());
        String reason = reason(typeFactory, inputType, outputType, agg.grouping(), aggCalls, retractions, needRetraction);
        if (reason != null) {
            return Decision.fallback(reason);
        }
        LocalGroupAggregateSpec spec = new LocalGroupAggregateSpec(nativeDescription(agg), inputType, agg.grouping(),
                PartialCalls.of(typeFactory, inputType, aggCalls, retractions, needRetraction, null).calls(), needRetraction);
        return NativeSupport.check(spec, outputType).map(Decision::fallback).orElse(Decision.nativeNode());
    }

    @Override
    protected Transformation<?> translate(StreamExecLocalGroupAggregate flink, NativeTranslation t) {
        Class<?> c = StreamExecLocalGroupAggregate.class;
        int[] grouping = FlinkFields.read(flink, c, "grouping");
        AggregateCall[] aggCalls = FlinkFields.read(flink, c, "aggCalls");
        boolean[] retractions = FlinkFields.read(flink, c, "aggCallNeedRetractions");
        boolean needRetraction = FlinkFields.<Boolean>read(flink, c, "needRetraction");
        FlinkTypeFactory typeFactory = t.planner().getTypeFactory();
        RowType inputType = t.inputType(0);
        String reason = reason(typeFactory, inputType, t.outputType(), grouping, aggCalls, retractions, needRetraction);
        LocalGroupAggregateSpec spec = null;
        if (reason == null) {
            spec = new LocalGroupAggregateSpec(t.description(), inputType, grouping,
                    PartialCalls.of(typeFactory, inputType, aggCalls, retractions, needRetraction, null).calls(), needRetraction);
            reason = t.check(spec, t.outputType()).orElse(null);
        }
        if (reason != null) {
            return t.fallback(reason);
        }
        // a batch is a bundle of Flink's count trigger (MinibatchUtil.createMiniBatchTrigger); not keyed, as Flink's
        return t.oneInput(StreamExecLocalGroupAggregate.LOCAL_GROUP_AGGREGATE_TRANSFORMATION,
                new OneInputNativeOperator<>(spec, t.outputType(), t.batching(true)), null);
    }

    /**
     * Why the local aggregate of these arguments cannot be native before its spec is built, or
     * null: its calls, their partial state, the types crossing.
     */
    static String reason(FlinkTypeFactory typeFactory, RowType inputType, RowType outputType, int[] grouping,
            AggregateCall[] aggCalls, boolean[] retractions, boolean needRetraction) {
        String reason = TwoPhaseAggregates.callsReason(aggCalls);
        if (reason != null) {
            return reason;
        }
        List<GroupAggregateSpec.Call> calls = PartialCalls.of(typeFactory, inputType, aggCalls, retractions, needRetraction, null).calls();
        reason = TwoPhaseAggregates.partialStateReason(calls, inputType);
        return reason != null ? reason : GroupAggregateKind.typeReason(inputType, outputType, grouping, aggCalls);
    }
}
