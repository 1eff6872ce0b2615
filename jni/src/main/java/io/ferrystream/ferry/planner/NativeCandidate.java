package io.ferrystream.ferry.planner;

import org.apache.calcite.rel.RelNode;

import java.util.Optional;

/**
 * A candidate node as Ferry's optimizer program leaves it in the physical plan: a subclass of
 * Flink's node class that carries Ferry's {@link Verdict}, native ({@code ferry=[native]}) or with
 * the reason it stays Flink's ({@code ferry=[reason]}). Being Flink's class, every {@code
 * instanceof} check and metadata handler of the planner still treats it as Flink's node.
 *
 * <p>There is one candidate class per Flink node class (package {@code planner.candidates}), shared
 * by every kind of that class (a {@code RankCandidate} is a deduplication or a Top-N, as its
 * verdict's kind says), and it holds no logic: a constructor from Flink's node, {@code copy}
 * (which keeps the candidate: the planner copies nodes after Ferry's program, and the inherited
 * copy would silently build Flink's plain class), {@code explainTerms} and {@code
 * translateToExecNode} forwarding to the verdict, and {@code getRelTypeName} returning Flink's
 * name, so EXPLAIN and descriptions stay Flink's. What differs by kind, the kind answers.
 *
 * <p>Tools read plans through this interface (the {@code ferry} CLI counts candidates and lists
 * fallback reasons with it) instead of parsing EXPLAIN text.
 */
public interface NativeCandidate {
    /** Ferry's verdict on this node. */
    Verdict verdict();

    /** The operator kind that decided this node ({@code NativeSpec#kind()}). */
    default String nativeKind() {
        return verdict().kind().name();
    }

    /** Why the node stays Flink's; empty when it runs natively. */
    default Optional<String> fallbackReason() {
        return verdict().fallbackReason();
    }

    /**
     * The node's description as its native operator's spec names it ({@code NativeSpec#name()}),
     * the key of {@link Ferry#nativeOperatorsOpenedForNode}: its exec node's, as the verdict's kind
     * says ({@link NativeKind#candidateDescription}).
     */
    default String nativeDescription() {
        return verdict().kind().candidateDescriptionOf((RelNode) this);
    }
}
