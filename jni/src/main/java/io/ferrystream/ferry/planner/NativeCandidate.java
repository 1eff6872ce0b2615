package io.ferrystream.ferry.planner;

import java.util.Optional;

/**
 * A candidate node as Ferry's optimizer program leaves it in the physical plan: the subclass of
 * Flink's node that a registered kind put in its place, either native ({@code ferry=[native]}) or
 * with the reason it stays Flink's ({@code ferry=[reason]}). Tools read plans through this
 * interface (the {@code ferry} CLI counts candidates and lists fallback reasons with it) instead
 * of parsing EXPLAIN text.
 */
public interface NativeCandidate {
    /** The operator kind of the matcher that decided this node ({@code NativeSpec#kind()}). */
    String nativeKind();

    /** Why the node stays Flink's; empty when it runs natively. */
    Optional<String> fallbackReason();

    /**
     * The node's description as its native operator's spec names it ({@code NativeSpec#name()}),
     * the key of {@link Ferry#nativeOperatorsOpenedForNode}.
     */
    String nativeDescription();
}
