package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.kinds.deduplicate.DeduplicateKind;
import io.ferrystream.ferry.kinds.groupaggregate.GlobalGroupAggregateKind;
import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateKind;
import io.ferrystream.ferry.kinds.groupaggregate.IncrementalGroupAggregateKind;
import io.ferrystream.ferry.kinds.groupaggregate.LocalGroupAggregateKind;
import io.ferrystream.ferry.kinds.intervaljoin.IntervalJoinKind;
import io.ferrystream.ferry.kinds.lookupjoin.LookupJoinKind;
import io.ferrystream.ferry.kinds.regularjoin.RegularJoinKind;
import io.ferrystream.ferry.kinds.topn.TopNKind;
import io.ferrystream.ferry.kinds.windowaggregate.WindowAggregateKind;
import io.ferrystream.ferry.kinds.windowjoin.WindowJoinKind;

import org.apache.calcite.rel.RelNode;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The registry of native operator kinds, the only list of them: one line per kind. Everything
 * else (the optimizer program, loaded plans, the counters, the support check, the columnar
 * exchange, flink-suites' report) reads it.
 *
 * <p>Each kind translates exec nodes of its own class. Kinds may share a physical class when
 * Flink translates its nodes to different exec nodes (a {@code StreamPhysicalRank} is a
 * deduplication or a Top-N): each then claims its own nodes ({@link NativeKind#claims}), the first
 * registered kind that claims a node takes it, and a node no kind claims stays Flink's, untouched.
 */
public final class NativeKinds {
    private static final List<NativeKind<?, ?>> KINDS = List.of(
            new GroupAggregateKind(),
            new LocalGroupAggregateKind(),
            new GlobalGroupAggregateKind(),
            new IncrementalGroupAggregateKind(),
            new IntervalJoinKind(),
            new WindowJoinKind(),
            new LookupJoinKind(),
            new DeduplicateKind(),
            new TopNKind(),
            new RegularJoinKind(),
            new WindowAggregateKind());

    private static final Map<Class<?>, List<NativeKind<?, ?>>> BY_PHYSICAL_CLASS = new HashMap<>();
    private static final Map<Class<?>, NativeKind<?, ?>> BY_EXEC_CLASS = new HashMap<>();

    static {
        for (NativeKind<?, ?> k : KINDS) {
            BY_PHYSICAL_CLASS.computeIfAbsent(k.physicalClass(), c -> new ArrayList<>()).add(k);
            if (BY_EXEC_CLASS.put(k.execClass(), k) != null) {
                throw new IllegalStateException("two native kinds translate " + k.execClass().getName());
            }
        }
    }

    private NativeKinds() {}

    /** Every kind, in registration order. */
    public static List<NativeKind<?, ?>> all() {
        return KINDS;
    }

    /** The kinds' names ({@code NativeSpec#kind()}), in registration order. */
    public static List<String> names() {
        List<String> names = new ArrayList<>(KINDS.size());
        for (NativeKind<?, ?> k : KINDS) {
            names.add(k.name());
        }
        return names;
    }

    /**
     * The kind that claims {@code node}, of exactly its class ({@link NativeKind#claims}; a {@link
     * NativeKind#preview} kind claims nothing while {@code config} keeps it off), or null.
     */
    static NativeKind<?, ?> forPhysical(RelNode node, ReadableConfig config) {
        List<NativeKind<?, ?>> kinds = BY_PHYSICAL_CLASS.get(node.getClass());
        if (kinds != null) {
            for (NativeKind<?, ?> k : kinds) {
                if (k.claimsNode(node, config)) {
                    return k;
                }
            }
        }
        return null;
    }

    /** The kind that translates exec nodes of exactly {@code node}'s class, or null. */
    static NativeKind<?, ?> forExec(ExecNode<?> node) {
        return BY_EXEC_CLASS.get(node.getClass());
    }

    /** The kind named {@code name}, or null. */
    public static NativeKind<?, ?> ofKind(String name) {
        for (NativeKind<?, ?> k : KINDS) {
            if (k.name().equals(name)) {
                return k;
            }
        }
        return null;
    }
}
