package io.ferrystream.ferry.kinds.groupaggregate;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.operators.OneInputNativeOperator;
import io.ferrystream.ferry.planner.Decision;
import io.ferrystream.ferry.planner.FlinkFields;
import io.ferrystream.ferry.planner.NativeKind;
import io.ferrystream.ferry.planner.NativeSupport;
import io.ferrystream.ferry.planner.NativeTranslation;
import io.ferrystream.ferry.planner.candidates.IncrementalGroupAggregateCandidate;

import org.apache.calcite.rel.core.AggregateCall;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.config.ExecutionConfigOptions;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.hint.StateTtlHint;
import org.apache.flink.table.planner.plan.nodes.exec.StateMetadata;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecIncrementalGroupAggregate;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalIncrementalGroupAggregate;
import org.apache.flink.table.types.logical.RowType;

import java.util.List;

/**
 * The incremental aggregate kind ({@value IncrementalGroupAggregateSpec#KIND}): the incremental
 * aggregate of a split DISTINCT under mini-batch (Flink's {@code KeyedMapBundleOperator} running
 * {@code MiniBatchIncrementalGroupAggFunction}), run by the generic one-input operator keyed by the
 * partial grouping fields, one batch per bundle. Its input is the partial rows of the local
 * aggregate below it and its output the partial rows of the global aggregate above it, both
 * Flink's rows, so it is decided on its own: the calls (as the local's), the fields that cross,
 * then Go's verdict on the exact spec. Either exchange around it can be Ferry's columnar one: it
 * reads frames keyed by its partial grouping ({@link #frameKeys}) and writes frames ({@link
 * #writesFrames}).
 */
public final class IncrementalGroupAggregateKind
        extends NativeKind<StreamPhysicalIncrementalGroupAggregate, StreamExecIncrementalGroupAggregate> {
    /** The kill switch of the native incremental aggregate. */
    public static final ConfigOption<Boolean> ENABLED = FerryOptions.killSwitch(
            "incremental-group-aggregate", "the native incremental aggregate of a split DISTINCT under mini-batch");

    public IncrementalGroupAggregateKind() {
        super(IncrementalGroupAggregateSpec.KIND, StreamPhysicalIncrementalGroupAggregate.class,
                StreamExecIncrementalGroupAggregate.class, ENABLED, IncrementalGroupAggregateCandidate::new);
    }


    /** Its operator emits frames of its output rows into a columnar exchange. */
    @Override
    public boolean writesFrames() {
        return true;
    }

    /** It reads frames of the local aggregate's partial rows, keyed by its partial grouping. */
    @Override
    protected int[] frameKeys(StreamPhysicalIncrementalGroupAggregate agg) {
        return agg.partialAggGrouping();
    }

    @Override
    protected Decision match(StreamPhysicalIncrementalGroupAggregate agg, ReadableConfig config) {
        IncrementalGroupAggregateCandidate.Params p = IncrementalGroupAggregateCandidate.params(agg);
        FlinkTypeFactory typeFactory = (FlinkTypeFactory) agg.getCluster().getTypeFactory();
        RowType inputType = FlinkTypeFactory.toLogicalRowType(agg.getInput().getRowType());
        RowType localInput = FlinkTypeFactory.toLogicalRowType(p.partialLocalAggInputRowType());
        RowType outputType = FlinkTypeFactory.toLogicalRowType(agg.getRowType());
        String reason = reason(typeFactory, inputType, outputType, agg.partialAggGrouping(), p.partialOriginalAggCalls(),
                p.partialAggCallNeedRetractions(), p.partialAggNeedRetraction(), localInput);
        if (reason != null) {
            return Decision.fallback(reason);
        }
        Long hint = StateTtlHint.getStateTtlFromHintOnSingleRel(agg.hints());
        long ttlMs = hint != null ? hint : config.get(ExecutionConfigOptions.IDLE_STATE_RETENTION).toMillis();
        IncrementalGroupAggregateSpec spec = new IncrementalGroupAggregateSpec(nativeDescription(agg), inputType,
                agg.partialAggGrouping().length, localInput, specCalls(typeFactory, localInput, p.partialOriginalAggCalls(),
                        p.partialAggCallNeedRetractions(), p.partialAggNeedRetraction()),
                p.finalAggGrouping(), p.partialAggNeedRetraction(), ttlMs);
        return NativeSupport.check(spec, outputType).map(Decision::fallback).orElse(Decision.nativeNode());
    }

    @Override
    protected Transformation<?> translate(StreamExecIncrementalGroupAggregate flink, NativeTranslation t) {
        Class<?> c = StreamExecIncrementalGroupAggregate.class;
        int[] partialGrouping = FlinkFields.read(flink, c, "partialAggGrouping");
        int[] finalGrouping = FlinkFields.read(flink, c, "finalAggGrouping");
        AggregateCall[] calls = FlinkFields.read(flink, c, "partialOriginalAggCalls");
        boolean[] retractions = FlinkFields.read(flink, c, "partialAggCallNeedRetractions");
        RowType localInput = FlinkFields.read(flink, c, "partialLocalAggInputType");
        boolean needRetraction = FlinkFields.<Boolean>read(flink, c, "partialAggNeedRetraction");
        List<StateMetadata> stateMetadata = FlinkFields.read(flink, c, "stateMetadataList");
        FlinkTypeFactory typeFactory = t.planner().getTypeFactory();
        RowType inputType = t.inputType(0);
        // what the planner checked; a plan loaded from JSON is decided here only
        String reason = reason(typeFactory, inputType, t.outputType(), partialGrouping, calls, retractions, needRetraction,
                localInput);
        IncrementalGroupAggregateSpec spec = null;
        if (reason == null) {
            spec = new IncrementalGroupAggregateSpec(t.description(), inputType, partialGrouping.length, localInput,
                    specCalls(typeFactory, localInput, calls, retractions, needRetraction), finalGrouping, needRetraction,
                    StateMetadata.getStateTtlForOneInputOperator(t.config(), stateMetadata));
            reason = t.check(spec, t.outputType()).orElse(null);
        }
        if (reason != null) {
            return t.fallback(reason);
        }
        // a batch is a bundle of Flink's count trigger (MinibatchUtil.createMiniBatchTrigger)
        return t.oneInput(StreamExecIncrementalGroupAggregate.INCREMENTAL_GROUP_AGGREGATE_TRANSFORMATION,
                new OneInputNativeOperator<>(spec, t.outputType(), t.batching(true)), partialGrouping);
    }

    /**
     * Why the incremental aggregate of these arguments cannot be native before its spec is built,
     * or null: its calls, the key layout, their partial state, the fields crossing.
     */
    static String reason(FlinkTypeFactory typeFactory, RowType inputType, RowType outputType, int[] partialGrouping,
            AggregateCall[] calls, boolean[] retractions, boolean needRetraction, RowType localInput) {
        String reason = TwoPhaseAggregates.callsReason(calls);
        if (reason != null) {
            return reason;
        }
        if (!TwoPhaseAggregates.leadingKeys(partialGrouping)) {
            return "partial grouping fields that do not lead the partial rows: not native yet";
        }
        reason = TwoPhaseAggregates.partialStateReason(
                specCalls(typeFactory, localInput, calls, retractions, needRetraction), localInput);
        if (reason == null) {
            reason = fieldsReason("partial field", inputType);
        }
        return reason != null ? reason : fieldsReason("output field", outputType);
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
        return TwoPhaseAggregates.PartialCalls.of(typeFactory, partialLocalAggInputType, partialOriginalAggCalls,
                partialAggCallNeedRetractions, partialAggNeedRetraction, null).calls();
    }
}
