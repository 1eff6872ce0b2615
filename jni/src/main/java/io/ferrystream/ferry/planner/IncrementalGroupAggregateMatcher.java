package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.operators.GroupAggregateSpec;
import io.ferrystream.ferry.operators.IncrementalGroupAggregateSpec;

import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.core.AggregateCall;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.config.ExecutionConfigOptions;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.hint.StateTtlHint;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalIncrementalGroupAggregate;
import org.apache.flink.table.planner.plan.utils.AggregateInfoList;
import org.apache.flink.table.types.logical.RowType;

import java.util.List;
import java.util.Optional;

/**
 * The incremental aggregate kind's matcher: decides whether the {@link
 * StreamPhysicalIncrementalGroupAggregate} of a split DISTINCT under mini-batch runs natively. Its
 * input is the partial rows of the local aggregate below it and its output the partial rows of
 * the global aggregate above it, both Flink's rows, so it is decided on its own: the calls (as
 * the local's), the fields that cross, then Go's verdict on the exact spec.
 */
public final class IncrementalGroupAggregateMatcher extends NativeMatcher<StreamPhysicalIncrementalGroupAggregate> {
    /** The kill switch of the native incremental aggregate. */
    public static final ConfigOption<Boolean> ENABLED = FerryOptions.killSwitch(
            "incremental-group-aggregate", "the native incremental aggregate of a split DISTINCT under mini-batch");

    IncrementalGroupAggregateMatcher() {
        super(IncrementalGroupAggregateSpec.KIND, StreamPhysicalIncrementalGroupAggregate.class, ENABLED,
                FerryStreamExecIncrementalGroupAggregate.class);
    }

    @Override
    protected Decision match(StreamPhysicalIncrementalGroupAggregate agg, ReadableConfig config) {
        FerryStreamPhysicalIncrementalGroupAggregate.Params p = FerryStreamPhysicalIncrementalGroupAggregate.params(agg);
        AggregateCall[] calls = p.partialOriginalAggCalls();
        String reason = TwoPhaseAggregates.callsReason(calls);
        if (reason != null) {
            return Decision.fallback(reason);
        }
        if (!TwoPhaseAggregates.leadingKeys(agg.partialAggGrouping())) {
            return Decision.fallback("partial grouping fields that do not lead the partial rows: not native yet");
        }
        RowType inputType = FlinkTypeFactory.toLogicalRowType(agg.getInput().getRowType());
        RowType localInput = FlinkTypeFactory.toLogicalRowType(p.partialLocalAggInputRowType());
        RowType outputType = FlinkTypeFactory.toLogicalRowType(agg.getRowType());
        FlinkTypeFactory typeFactory = (FlinkTypeFactory) agg.getCluster().getTypeFactory();
        List<GroupAggregateSpec.Call> specCalls =
                specCalls(typeFactory, localInput, calls, p.partialAggCallNeedRetractions(), p.partialAggNeedRetraction());
        reason = TwoPhaseAggregates.partialStateReason(specCalls, localInput);
        if (reason != null) {
            return Decision.fallback(reason);
        }
        reason = TwoPhaseAggregates.fieldsReason("partial field", inputType);
        if (reason == null) {
            reason = TwoPhaseAggregates.fieldsReason("output field", outputType);
        }
        if (reason != null) {
            return Decision.fallback(reason);
        }
        Long hint = StateTtlHint.getStateTtlFromHintOnSingleRel(agg.hints());
        long ttlMs = hint != null ? hint : config.get(ExecutionConfigOptions.IDLE_STATE_RETENTION).toMillis();
        IncrementalGroupAggregateSpec spec = new IncrementalGroupAggregateSpec(agg.getRelDetailedDescription(), inputType,
                agg.partialAggGrouping().length, localInput, specCalls, p.finalAggGrouping(), p.partialAggNeedRetraction(), ttlMs);
        Optional<String> refused = NativeSupport.check(spec, outputType);
        return refused.map(Decision::fallback).orElse(Decision.nativeNode());
    }

    /**
     * The spec's calls: Flink's partial AggregateInfoList (createPartialAggInfoList: data views on
     * the heap, count1 inserted for retracting input), arguments indexing the local input.
     */
    static List<GroupAggregateSpec.Call> specCalls(
            FlinkTypeFactory typeFactory,
            RowType partialLocalAggInputType,
            AggregateCall[] partialOriginalAggCalls,
            boolean[] partialAggCallNeedRetractions,
            boolean partialAggNeedRetraction) {
        AggregateInfoList infos = TwoPhaseAggregates.infoList(typeFactory, partialLocalAggInputType, partialOriginalAggCalls,
                partialAggCallNeedRetractions, partialAggNeedRetraction, null, false);
        return TwoPhaseAggregates.calls(partialOriginalAggCalls, partialAggCallNeedRetractions, partialAggNeedRetraction, infos);
    }

    @Override
    protected RelNode nativeNode(StreamPhysicalIncrementalGroupAggregate agg) {
        return FerryStreamPhysicalIncrementalGroupAggregate.of(agg);
    }

    @Override
    protected RelNode fallbackNode(StreamPhysicalIncrementalGroupAggregate agg, String reason) {
        return FerryStreamPhysicalIncrementalGroupAggregate.fallback(agg, reason);
    }
}
