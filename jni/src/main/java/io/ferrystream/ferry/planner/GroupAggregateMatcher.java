package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.operators.GroupAggregateSpec;

import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.core.AggregateCall;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.config.ExecutionConfigOptions;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.hint.StateTtlHint;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalGroupAggregate;
import org.apache.flink.table.planner.plan.utils.AggregateInfoList;
import org.apache.flink.table.planner.plan.utils.AggregateUtil;
import org.apache.flink.table.planner.plan.utils.MinibatchUtil;
import org.apache.flink.table.planner.utils.JavaScalaConversionUtil;
import org.apache.flink.table.types.logical.RowType;

import java.util.Arrays;
import java.util.Optional;

/**
 * The group aggregate kind's matcher: decides whether one {@link StreamPhysicalGroupAggregate}
 * (Flink's single-phase GROUP BY) runs natively, and records why not. The checks Java can make
 * cheaply come first (mini-batch, distinct split, call shapes, TTL, types); libferry.so then has
 * the last word on the exact spec the ExecNode will open ({@link NativeSupport}), so the planner
 * never picks a node Go would refuse at run time.
 */
public final class GroupAggregateMatcher extends NativeMatcher<StreamPhysicalGroupAggregate> {
    /** The kill switch of the native GROUP BY. */
    public static final ConfigOption<Boolean> ENABLED =
            FerryOptions.killSwitch("group-aggregate", "the native GROUP BY (single-phase, with or without mini-batch)");

    GroupAggregateMatcher() {
        super(GroupAggregateSpec.KIND, StreamPhysicalGroupAggregate.class, ENABLED, FerryStreamExecGroupAggregate.class);
    }

    @Override
    protected Decision match(StreamPhysicalGroupAggregate agg, ReadableConfig config) {
        // The partial and final aggregates of a distinct split (partialFinalType) translate to the
        // same StreamExecGroupAggregate as any other: their calls decide.
        String callsReason = TwoPhaseAggregates.callsReason(JavaScalaConversionUtil.toJava(agg.aggCalls()).toArray(new AggregateCall[0]));
        if (callsReason != null) {
            return Decision.fallback(callsReason);
        }
        // the arguments of the node Ferry would plan, so the spec (name included) is byte for byte
        // the one FerryStreamExecGroupAggregate opens, and its translation-time check hits the cache
        GroupAggregateArgs args = GroupAggregateArgs.of(FerryStreamPhysicalGroupAggregate.of(agg));
        long ttl =
                effectiveStateTtlMs(
                        stateTtlMs(agg, config),
                        (FlinkTypeFactory) agg.getCluster().getTypeFactory(),
                        args.inputType,
                        args.aggCalls,
                        args.aggCallNeedRetractions,
                        args.needRetraction,
                        config);
        String typeReason = typeReason(args.inputType, args.outputType, args.grouping, args.aggCalls);
        if (typeReason != null) {
            return Decision.fallback(typeReason);
        }
        GroupAggregateSpec spec =
                GroupAggregateSpecs.build(
                        args.description,
                        args.inputType,
                        args.outputType,
                        args.grouping,
                        args.aggCalls,
                        args.aggCallNeedRetractions,
                        args.needRetraction,
                        args.generateUpdateBefore,
                        ttl,
                        // StreamExecGroupAggregate then builds MiniBatchGroupAggFunction
                        // (docs/group-aggregate.md#mini-batch)
                        MinibatchUtil.isMiniBatchEnabled(config));
        Optional<String> refused = NativeSupport.check(spec, args.outputType);
        return refused.map(Decision::fallback).orElse(Decision.nativeNode());
    }

    @Override
    protected RelNode nativeNode(StreamPhysicalGroupAggregate agg) {
        return FerryStreamPhysicalGroupAggregate.of(agg);
    }

    @Override
    protected RelNode fallbackNode(StreamPhysicalGroupAggregate agg, String reason) {
        return FerryStreamPhysicalGroupAggregate.fallback(agg, reason);
    }

    /** Why one call cannot be native, or null; Go decides the rest (types, DISTINCT, FILTER, TTL). */
    static String callReason(AggregateCall call) {
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

    /** Why a key, argument or output field cannot cross the Arrow boundary, or null. */
    static String typeReason(RowType in, RowType out, int[] grouping, AggregateCall[] aggCalls) {
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
        for (int i = 0; i < out.getFieldCount(); i++) {
            String r = carriedReason("output field", out.getFieldNames().get(i), out.getTypeAt(i));
            if (r != null) {
                return r;
            }
        }
        return null;
    }
}
