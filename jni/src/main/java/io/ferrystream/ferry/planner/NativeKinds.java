package io.ferrystream.ferry.planner;

import org.apache.calcite.rel.RelNode;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The native operator kinds the planner knows: one {@link NativeMatcher} each. A new kind adds
 * its matcher here.
 */
public final class NativeKinds {
    private static final List<NativeMatcher<?>> MATCHERS =
            List.of(new GroupAggregateMatcher(), new LocalGroupAggregateMatcher(), new GlobalGroupAggregateMatcher(),
                    new IncrementalGroupAggregateMatcher(), new IntervalJoinMatcher(), new WindowJoinMatcher(),
                    new LookupJoinMatcher());

    private static final Map<Class<?>, NativeMatcher<?>> BY_NODE_CLASS = new HashMap<>();

    static {
        for (NativeMatcher<?> m : MATCHERS) {
            if (BY_NODE_CLASS.put(m.nodeClass(), m) != null) {
                throw new IllegalStateException("two native kinds replace " + m.nodeClass().getName());
            }
        }
    }

    private NativeKinds() {}

    /** Every kind's matcher, in registration order. */
    public static List<NativeMatcher<?>> matchers() {
        return MATCHERS;
    }

    /** The kinds' names ({@code NativeSpec#kind()}), in registration order. */
    public static List<String> kinds() {
        List<String> kinds = new ArrayList<>(MATCHERS.size());
        for (NativeMatcher<?> m : MATCHERS) {
            kinds.add(m.kind());
        }
        return kinds;
    }

    /** The matcher of the kind that replaces nodes of exactly {@code node}'s class, or null. */
    static NativeMatcher<?> forNode(RelNode node) {
        return BY_NODE_CLASS.get(node.getClass());
    }

    /** The matcher of {@code kind}, or null. */
    static NativeMatcher<?> ofKind(String kind) {
        for (NativeMatcher<?> m : MATCHERS) {
            if (m.kind().equals(kind)) {
                return m;
            }
        }
        return null;
    }
}
