package io.ferrystream.ferry.nexmark.runner;

import io.ferrystream.ferry.planner.NativeCandidate;

import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.type.RelDataTypeField;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;

import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The stateful operators of a query's physical plan as Ferry's optimizer program left it ({@code
 * Ferry.capturePlans()}), and whether its result depends on the wall clock.
 *
 * <p>Stateful operators are the candidate nodes of a native kind ({@link NativeCandidate}: native
 * or with the reason they stay Flink's) and the stateful nodes no kind replaces (joins, window
 * aggregates, Top-N, deduplication, ...), the count a query's native share is taken over, as
 * {@code ferry qualify} takes it. {@link #readsProcessingTime} serves {@code ferry}'s plan analysis
 * (module cli) too.
 */
public final class PlanShape {
    /** A candidate node; {@code reason} is null when Ferry planned it native. */
    record Candidate(String operator, String description, String reason) {
        boolean planned() {
            return reason == null;
        }
    }

    final List<Candidate> candidates = new ArrayList<>();
    /** Flink's stateful nodes that no native kind decides, by operator name. */
    final List<String> others = new ArrayList<>();
    /** Why the result depends on the wall clock (empty: it does not). */
    final Set<String> wallClock = new LinkedHashSet<>();

    private final Map<RelNode, Boolean> seen = new IdentityHashMap<>();

    /** Nodes whose output depends on time attributes: processing time makes their result the wall clock's. */
    private static final Set<String> TIME_DRIVEN = Set.of("GroupWindowAggregate", "WindowAggregate",
            "LocalWindowAggregate", "GlobalWindowAggregate", "WindowTableFunction", "WindowJoin", "WindowRank",
            "WindowDeduplicate", "IntervalJoin", "OverAggregate", "TemporalSort", "Match", "Rank", "Deduplicate");

    /** Flink's stateful nodes that are no native candidate. */
    private static final Set<String> STATEFUL = Set.of("Join", "TemporalJoin", "MultiJoin", "DeltaJoin",
            "GroupWindowAggregate", "WindowAggregate", "GlobalWindowAggregate", "GroupTableAggregate",
            "GroupWindowTableAggregate", "Rank", "Deduplicate", "WindowRank", "WindowDeduplicate", "OverAggregate",
            "TemporalSort", "Sort", "SortLimit", "Limit", "Match", "ChangelogNormalize", "ProcessTableFunction",
            "GroupAggregate", "LocalGroupAggregate", "GlobalGroupAggregate", "IncrementalGroupAggregate", "IntervalJoin",
            "WindowJoin", "LookupJoin");

    PlanShape(List<RelNode> roots) {
        if (roots.isEmpty()) {
            throw new IllegalStateException("Ferry's optimizer program saw no plan: is Ferry installed?");
        }
        for (RelNode root : roots) {
            visit(root);
        }
    }

    int statefulOperators() {
        return candidates.size() + others.size();
    }

    List<Candidate> plannedNative() {
        List<Candidate> l = new ArrayList<>();
        for (Candidate c : candidates) {
            if (c.planned()) {
                l.add(c);
            }
        }
        return Collections.unmodifiableList(l);
    }

    /**
     * The stateful operators for a report, equal ones counted, those whose description is in
     * {@code ranNatively} marked: "LocalGroupAggregate ×2 (native), Join".
     */
    String summary(Set<String> ranNatively) {
        Map<String, Integer> counts = new LinkedHashMap<>();
        for (Candidate c : candidates) {
            counts.merge(c.operator() + (ranNatively.contains(c.description()) ? "\0native" : ""), 1, Integer::sum);
        }
        for (String o : others) {
            counts.merge(o, 1, Integer::sum);
        }
        List<String> parts = new ArrayList<>();
        counts.forEach((key, n) -> {
            String[] opAndMark = key.split("\0", 2);
            parts.add(opAndMark[0] + (n > 1 ? " ×" + n : "") + (opAndMark.length > 1 ? " (native)" : ""));
        });
        return parts.isEmpty() ? "none" : String.join(", ", parts);
    }

    private void visit(RelNode node) {
        if (seen.put(node, Boolean.TRUE) != null) {
            return; // a shared sub-plan counts once
        }
        for (RelNode input : node.getInputs()) {
            visit(input);
        }
        String op = operatorName(node);
        if (node instanceof NativeCandidate c) {
            candidates.add(new Candidate(op, c.nativeDescription(), c.fallbackReason().orElse(null)));
        } else if (STATEFUL.contains(op)) {
            others.add(op);
        }
        if (TIME_DRIVEN.contains(op) && readsProcessingTime(node)) {
            wallClock.add(op + " on processing time");
        }
    }

    /** Flink's name of the node's operator, as EXPLAIN prints it ({@code GroupAggregate}, {@code Join}, ...). */
    static String operatorName(RelNode node) {
        String name = node.getRelTypeName();
        name = name.startsWith("Ferry") ? name.substring("Ferry".length()) : name;
        return name.startsWith("StreamPhysical") ? name.substring("StreamPhysical".length()) : name;
    }

    /** Whether an input of {@code node} carries a processing-time attribute (a PROCTIME() field). */
    public static boolean readsProcessingTime(RelNode node) {
        for (RelNode input : node.getInputs()) {
            for (RelDataTypeField f : input.getRowType().getFieldList()) {
                if (FlinkTypeFactory.isProctimeIndicatorType(f.getType())) {
                    return true;
                }
            }
        }
        return false;
    }
}
