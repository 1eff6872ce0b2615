package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.kinds.groupaggregate.GlobalGroupAggregateKind;
import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateKind;
import io.ferrystream.ferry.kinds.groupaggregate.IncrementalGroupAggregateKind;
import io.ferrystream.ferry.kinds.groupaggregate.LocalGroupAggregateKind;
import io.ferrystream.ferry.kinds.intervaljoin.IntervalJoinKind;
import io.ferrystream.ferry.kinds.lookupjoin.LookupJoinKind;
import io.ferrystream.ferry.kinds.windowjoin.WindowJoinKind;

import org.apache.calcite.rel.RelNode;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The registry of native operator kinds, the only list of them: one line per kind. Everything
 * else (the optimizer program, loaded plans, the counters, the support check, the columnar
 * exchange, flink-suites' report) reads it.
 */
public final class NativeKinds {
    private static final List<NativeKind<?, ?>> KINDS = List.of(
            new GroupAggregateKind(),
            new LocalGroupAggregateKind(),
            new GlobalGroupAggregateKind(),
            new IncrementalGroupAggregateKind(),
            new IntervalJoinKind(),
            new WindowJoinKind(),
            new LookupJoinKind());

    private static final Map<Class<?>, NativeKind<?, ?>> BY_PHYSICAL_CLASS = new HashMap<>();
    private static final Map<Class<?>, NativeKind<?, ?>> BY_EXEC_CLASS = new HashMap<>();

    static {
        for (NativeKind<?, ?> k : KINDS) {
            if (BY_PHYSICAL_CLASS.put(k.physicalClass(), k) != null) {
                throw new IllegalStateException("two native kinds replace " + k.physicalClass().getName());
            }
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

    /** The kind that replaces nodes of exactly {@code node}'s class, or null. */
    static NativeKind<?, ?> forPhysical(RelNode node) {
        return BY_PHYSICAL_CLASS.get(node.getClass());
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
