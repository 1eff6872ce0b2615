package io.ferrystream.ferry.kinds.groupaggregate;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.planner.Decision;
import io.ferrystream.ferry.planner.FlinkFields;
import io.ferrystream.ferry.planner.NativeKind;
import io.ferrystream.ferry.planner.NativeSupport;
import io.ferrystream.ferry.planner.NativeTranslation;
import io.ferrystream.ferry.planner.candidates.GroupAggregateCandidate;

import org.apache.calcite.rel.core.AggregateCall;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.config.ExecutionConfigOptions;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.hint.StateTtlHint;
import org.apache.flink.table.planner.plan.nodes.exec.StateMetadata;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecGroupAggregate;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalGroupAggregate;
import org.apache.flink.table.planner.plan.utils.AggregateInfoList;
import org.apache.flink.table.planner.plan.utils.AggregateUtil;
import org.apache.flink.table.planner.plan.utils.MinibatchUtil;
import org.apache.flink.table.planner.utils.JavaScalaConversionUtil;
import org.apache.flink.table.types.logical.RowType;

import java.util.Arrays;
import java.util.List;

/**
 * The group aggregate kind ({@value GroupAggregateSpec#KIND}): Flink's single-phase GROUP BY
 * ({@code GroupAggFunction}, and {@code MiniBatchGroupAggFunction} under mini-batch) run by
 * {@link FerryGroupAggregateOperator}. The checks Java can make cheaply come first (call shapes,
 * TTL, types); libferry.so then has the last word on the exact spec ({@link NativeSupport}). The
 * operator imports Flink's {@code accState} from a savepoint of Flink's operator and writes it
 * into Ferry's savepoints ({@link FlinkAccStates#singlePhase}).
 */
public final class GroupAggregateKind extends NativeKind<StreamPhysicalGroupAggregate, StreamExecGroupAggregate> {
    /** The kill switch of the native GROUP BY. */
    public static final ConfigOption<Boolean> ENABLED =
            FerryOptions.killSwitch("group-aggregate", "the native GROUP BY (single-phase, with or without mini-batch)");

    public GroupAggregateKind() {
        super(GroupAggregateSpec.KIND, StreamPhysicalGroupAggregate.class, StreamExecGroupAggregate.class, ENABLED,
                GroupAggregateCandidate::new);
    }


    @Override
    protected Decision match(StreamPhysicalGroupAggregate agg, ReadableConfig config) {
        // The partial and final aggregates of a distinct split (partialFinalType) translate to the
        // same StreamExecGroupAggregate as any other: their calls decide.
        GroupAggregateArgs args = GroupAggregateArgs.of(agg);
        String reason = TwoPhaseAggregates.callsReason(args.aggCalls);
        if (reason != null) {
            return Decision.fallback(reason);
        }
        long ttl = effectiveStateTtlMs(stateTtlMs(agg, config), (FlinkTypeFactory) agg.getCluster().getTypeFactory(),
                args.inputType, args.aggCalls, args.aggCallNeedRetractions, args.needRetraction, config);
        reason = typeReason(args.inputType, args.outputType, args.grouping, args.aggCalls);
        if (reason != null) {
            return Decision.fallback(reason);
        }
        // the spec translation builds, name included, so its check there hits the cache
        GroupAggregateSpec spec = GroupAggregateSpecs.build(nativeDescription(agg), args.inputType, args.outputType,
                args.grouping, args.aggCalls, args.aggCallNeedRetractions, args.needRetraction, args.generateUpdateBefore,
                ttl, MinibatchUtil.isMiniBatchEnabled(config));
        return NativeSupport.check(spec, args.outputType).map(Decision::fallback).orElse(Decision.nativeNode());
    }

    @Override
    protected Transformation<?> translate(StreamExecGroupAggregate flink, NativeTranslation t) {
        Class<?> c = StreamExecGroupAggregate.class;
        int[] grouping = FlinkFields.read(flink, c, "grouping");
        AggregateCall[] aggCalls = FlinkFields.read(flink, c, "aggCalls");
        boolean[] retractions = FlinkFields.read(flink, c, "aggCallNeedRetractions");
        boolean generateUpdateBefore = FlinkFields.<Boolean>read(flink, c, "generateUpdateBefore");
        boolean needRetraction = FlinkFields.<Boolean>read(flink, c, "needRetraction");
        List<StateMetadata> stateMetadata = FlinkFields.read(flink, c, "stateMetadataList");
        RowType inputType = t.inputType(0);
        RowType outputType = t.outputType();
        // what the planner checked; a plan loaded from JSON is decided here only
        String reason = TwoPhaseAggregates.callsReason(aggCalls);
        if (reason == null) {
            reason = typeReason(inputType, outputType, grouping, aggCalls);
        }
        if (reason != null) {
            return t.fallback(reason);
        }
        long ttl = effectiveStateTtlMs(StateMetadata.getStateTtlForOneInputOperator(t.config(), stateMetadata),
                t.planner().getTypeFactory(), inputType, aggCalls, retractions, needRetraction, t.config());
        // under mini-batch StreamExecGroupAggregate builds MiniBatchGroupAggFunction (docs/group-aggregate.md#mini-batch)
        GroupAggregateSpec spec = GroupAggregateSpecs.build(t.description(), inputType, outputType, grouping, aggCalls,
                retractions, needRetraction, generateUpdateBefore, ttl, MinibatchUtil.isMiniBatchEnabled(t.config()));
        reason = t.check(spec, outputType).orElse(null);
        if (reason != null) {
            return t.fallback(reason);
        }
        // mini-batch: a batch is a bundle of Flink's count trigger, cut by size, watermark, barrier
        FerryGroupAggregateOperator operator = new FerryGroupAggregateOperator(spec, outputType, t.batching(spec.miniBatch()));
        operator.importingFlinkState(FlinkAccStates.singlePhase(t.planner().getTypeFactory(), inputType, grouping, aggCalls,
                retractions, needRetraction, ttl));
        return t.oneInput(StreamExecGroupAggregate.GROUP_AGGREGATE_TRANSFORMATION, operator, grouping);
    }

    /** Why one call cannot be native, or null; Go decides the rest (types, DISTINCT, FILTER, TTL). */
    public static String callReason(AggregateCall call) {
        String name = call.getAggregation().getName();
        String function = GroupAggregateSpecs.functionName(call);
        if (function == null) {
            return "aggregate function " + name + ": not native yet";
        }
        if (call.isApproximate()) {
            return "approximate " + function + ": not native yet";
        }
        int argc = call.getArgList().size();
        if (function.equals("COUNT")) {
            if (argc > 1) {
                return "COUNT over " + argc + " arguments: not native yet";
            }
        } else if (argc != 1 && !(function.equals("LISTAGG") && argc == 2)) { // LISTAGG(x, delimiter)
            return function + " over " + argc + " arguments: not native yet";
        }
        return null;
    }

    /**
     * The retention Flink's operator actually applies. Where Flink 2.3 plans its async-state GROUP
     * BY ({@code AsyncStateGroupAggFunction}: async state on, mini-batch off, no call keeps a
     * DataView), the heap and RocksDB backends serve its state through
     * {@code AsyncKeyedStateBackendAdaptor}, whose descriptor conversion
     * ({@code StateDescriptorUtils.transformFromV2ToV1}) drops the TTL config: that operator never
     * expires state, so Ferry's keeps it too (0). ForSt's asynchronous backend applies the TTL, as
     * everything else does: there {@code stateTtlMs} as given.
     */
    static long effectiveStateTtlMs(
            long stateTtlMs,
            FlinkTypeFactory typeFactory,
            RowType inputType,
            AggregateCall[] calls,
            boolean[] callNeedRetractions,
            boolean needRetraction,
            ReadableConfig config) {
        if (stateTtlMs <= 0
                || !config.get(ExecutionConfigOptions.TABLE_EXEC_ASYNC_STATE_ENABLED)
                || !asyncStateThroughAdaptor(config)
                || MinibatchUtil.isMiniBatchEnabled(config)) { // mini-batch comes first in StreamExecGroupAggregate
            return stateTtlMs;
        }
        AggregateInfoList infos =
                AggregateUtil.transformToStreamAggregateInfoList(
                        typeFactory,
                        inputType,
                        JavaScalaConversionUtil.toScala(Arrays.asList(calls)),
                        callNeedRetractions,
                        needRetraction,
                        true,
                        true);
        return AggregateUtil.isAsyncStateEnabled(config, infos) ? 0 : stateTtlMs;
    }

    /** The idle-state retention Flink's ExecNode will use (hint first, then the table option). */
    static long stateTtlMs(StreamPhysicalGroupAggregate agg, ReadableConfig config) {
        Long hint = StateTtlHint.getStateTtlFromHintOnSingleRel(agg.hints());
        return hint != null ? hint : config.get(ExecutionConfigOptions.IDLE_STATE_RETENTION).toMillis();
    }

    /**
     * Why a key, argument or output field cannot cross the Arrow boundary, or null (the
     * single-phase and the local aggregate's check).
     */
    public static String typeReason(RowType in, RowType out, int[] grouping, AggregateCall[] aggCalls) {
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
        return fieldsReason("output field", out);
    }
}
