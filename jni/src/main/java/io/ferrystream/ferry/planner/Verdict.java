package io.ferrystream.ferry.planner;

import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.RelWriter;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNodeBase;

import javax.annotation.Nullable;

import java.util.Objects;
import java.util.Optional;

/**
 * Ferry's verdict on one candidate node of the physical plan: the kind that decided it, the
 * {@link Decision} (native, or the reason the node stays Flink's) and what the kind carries from
 * planning to translation, its payload (opaque to everything but the kind; null for most kinds).
 * A candidate node ({@link NativeCandidate}) holds its verdict and forwards to it: its EXPLAIN
 * terms come from {@link #explain}, its exec node from {@link #translate}.
 */
public final class Verdict {
    private final NativeKind<?, ?> kind;
    private final Decision decision;
    @Nullable private final Object payload;

    Verdict(NativeKind<?, ?> kind, Decision decision, @Nullable Object payload) {
        this.kind = Objects.requireNonNull(kind);
        this.decision = Objects.requireNonNull(decision);
        this.payload = payload;
    }

    public NativeKind<?, ?> kind() {
        return kind;
    }

    public boolean isNative() {
        return decision.isNative();
    }

    /** Why the node stays Flink's; empty when it runs natively. */
    public Optional<String> fallbackReason() {
        return Optional.ofNullable(decision.reason());
    }

    /** The kind's payload, or null. */
    @Nullable
    @SuppressWarnings("unchecked")
    public <T> T payload() {
        return (T) payload;
    }

    /** This verdict turned into a fallback for {@code reason}, the payload kept. */
    public Verdict fallback(String reason) {
        return new Verdict(kind, Decision.fallback(reason), payload);
    }

    /**
     * The verdict of {@code copy}, a copy of a candidate with this verdict that Flink's planner
     * made with a changed parameter after Ferry's program ({@code StreamPhysicalRank#copy(strategy)},
     * {@code StreamPhysicalLookupJoin#copy(upsertMaterialize)}): the kind's ({@link NativeKind#verdictOfCopy}).
     */
    public Verdict ofCopy(RelNode copy) {
        return kind.verdictOfCopyOf(copy, this);
    }

    /** The value of the node's {@code ferry} term in EXPLAIN: {@code native} or the reason. */
    public String term() {
        return decision.toString();
    }

    /** {@code candidate}'s EXPLAIN terms: Flink's ({@code flinkTerms}), then the kind's ({@link NativeKind#explainTerms}). */
    public RelWriter explain(RelNode candidate, RelWriter flinkTerms) {
        return kind.explain(candidate, this, flinkTerms);
    }

    /**
     * The candidate's exec node, given the one Flink's node translates to: that one for a node
     * that stays Flink's, else Ferry's {@link NativeExecNode} around it.
     */
    public ExecNode<?> translate(ExecNode<?> flinks) {
        return isNative() ? new NativeExecNode(kind, (ExecNodeBase<?>) flinks, payload) : flinks;
    }

    @Override
    public String toString() {
        return kind.name() + ": " + decision;
    }
}
