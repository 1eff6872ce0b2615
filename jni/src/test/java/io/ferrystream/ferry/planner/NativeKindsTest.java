package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.kinds.deduplicate.DeduplicateKind;
import io.ferrystream.ferry.kinds.deduplicate.DeduplicateSpec;
import io.ferrystream.ferry.kinds.groupaggregate.GlobalGroupAggregateKind;
import io.ferrystream.ferry.kinds.groupaggregate.GlobalGroupAggregateSpec;
import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateKind;
import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateSpec;
import io.ferrystream.ferry.kinds.groupaggregate.IncrementalGroupAggregateSpec;
import io.ferrystream.ferry.kinds.groupaggregate.LocalGroupAggregateKind;
import io.ferrystream.ferry.kinds.groupaggregate.LocalGroupAggregateSpec;
import io.ferrystream.ferry.kinds.intervaljoin.IntervalJoinSpec;
import io.ferrystream.ferry.kinds.lookupjoin.FerryLookupJoinOperator;
import io.ferrystream.ferry.kinds.regularjoin.RegularJoinKind;
import io.ferrystream.ferry.kinds.regularjoin.RegularJoinSpec;
import io.ferrystream.ferry.kinds.windowaggregate.WindowAggregateKind;
import io.ferrystream.ferry.kinds.windowaggregate.WindowAggregateSpec;
import io.ferrystream.ferry.kinds.topn.TopNKind;
import io.ferrystream.ferry.kinds.topn.TopNSpec;
import io.ferrystream.ferry.kinds.windowjoin.WindowJoinSpec;

import static io.ferrystream.ferry.planner.PlannerTests.ferryTerms;
import static io.ferrystream.ferry.planner.PlannerTests.newTableEnv;
import static io.ferrystream.ferry.planner.PlannerTests.physicalPlan;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecDeduplicate;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecGlobalGroupAggregate;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecGroupAggregate;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecJoin;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecWindowAggregate;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecLocalGroupAggregate;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecRank;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalGlobalGroupAggregate;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalGroupAggregate;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalJoin;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalWindowAggregate;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalLocalGroupAggregate;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalRank;
import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** The registry of native kinds, the per-kind counters, and a kind's own kill switch. */
class NativeKindsTest {
    @Test
    void theGroupAggregateIsRegistered() {
        assertEquals(
                List.of(GroupAggregateSpec.KIND, LocalGroupAggregateSpec.KIND, GlobalGroupAggregateSpec.KIND,
                        IncrementalGroupAggregateSpec.KIND, IntervalJoinSpec.KIND, WindowJoinSpec.KIND,
                        FerryLookupJoinOperator.KIND, DeduplicateSpec.KIND, TopNSpec.KIND, RegularJoinSpec.KIND,
                        WindowAggregateSpec.KIND),
                Ferry.operatorKinds());
        NativeKind<?, ?> m = NativeKinds.ofKind(GroupAggregateSpec.KIND);
        assertSame(StreamPhysicalGroupAggregate.class, m.physicalClass());
        assertSame(StreamExecGroupAggregate.class, m.execClass());
        assertEquals("ferry.group-aggregate.enabled", m.killSwitch().key());
        assertSame(GroupAggregateKind.ENABLED, m.killSwitch());
        assertTrue(m.killSwitch().defaultValue());
        assertEquals(NativeExecNode.class.getName(), Ferry.execNodeClassName(GroupAggregateSpec.KIND));
        assertThrows(IllegalArgumentException.class, () -> Ferry.execNodeClassName("no_such_kind"));
        assertEquals(0, Ferry.nativeNodesPlanned("no_such_kind"));
        assertEquals(0, Ferry.nativeOperatorsOpened("no_such_kind"));
    }

    /** The two halves of the two-phase aggregate: Flink's node classes, their own kill switches and exec nodes. */
    @Test
    void theTwoPhaseAggregateIsRegistered() {
        NativeKind<?, ?> local = NativeKinds.ofKind(LocalGroupAggregateSpec.KIND);
        assertSame(StreamPhysicalLocalGroupAggregate.class, local.physicalClass());
        assertSame(StreamExecLocalGroupAggregate.class, local.execClass());
        assertSame(LocalGroupAggregateKind.ENABLED, local.killSwitch());
        assertEquals("ferry.local-group-aggregate.enabled", local.killSwitch().key());
        assertEquals(NativeExecNode.class.getName(), Ferry.execNodeClassName(LocalGroupAggregateSpec.KIND));
        NativeKind<?, ?> global = NativeKinds.ofKind(GlobalGroupAggregateSpec.KIND);
        assertSame(StreamPhysicalGlobalGroupAggregate.class, global.physicalClass());
        assertSame(StreamExecGlobalGroupAggregate.class, global.execClass());
        assertSame(GlobalGroupAggregateKind.ENABLED, global.killSwitch());
        assertEquals("ferry.global-group-aggregate.enabled", global.killSwitch().key());
        assertEquals(NativeExecNode.class.getName(), Ferry.execNodeClassName(GlobalGroupAggregateSpec.KIND));
    }

    /**
     * Every kind is one descriptor in the registry: Flink's exec class of its own (one kind per
     * class, found by exact class), its name as its spec says it, its kill switch. Every kind has
     * a physical class of its own too, but the deduplication and the Top-N, which claim disjoint
     * nodes of Flink's {@code StreamPhysicalRank} (as Flink translates them to different exec
     * nodes).
     */
    @Test
    void everyKindIsOneDescriptor() {
        Set<Class<?>> physical = new HashSet<>();
        Set<Class<?>> exec = new HashSet<>();
        for (NativeKind<?, ?> k : NativeKinds.all()) {
            assertTrue(physical.add(k.physicalClass()) || k.name().equals(TopNSpec.KIND), "one kind for " + k.physicalClass());
            assertTrue(exec.add(k.execClass()), "one kind for " + k.execClass());
            assertEquals("ferry." + k.name().replace('_', '-') + ".enabled", k.killSwitch().key());
            // every kind is on by default but the previews
            assertEquals(!k.name().equals(RegularJoinSpec.KIND) && !k.name().equals(WindowAggregateSpec.KIND),
                    k.killSwitch().defaultValue(), k.name());
            assertEquals(!k.killSwitch().defaultValue(), k.preview(), k.name());
            assertSame(k, NativeKinds.ofKind(k.name()));
        }
        assertEquals(Ferry.operatorKinds(), NativeKinds.names());
        assertEquals(11, NativeKinds.all().size());
        assertEquals(null, NativeKinds.ofKind("no_such_kind"));
        NativeKind<?, ?> dedup = NativeKinds.ofKind(DeduplicateSpec.KIND);
        assertSame(StreamPhysicalRank.class, dedup.physicalClass());
        assertSame(StreamExecDeduplicate.class, dedup.execClass());
        assertSame(DeduplicateKind.ENABLED, dedup.killSwitch());
        assertEquals("ferry.deduplicate.enabled", dedup.killSwitch().key());
        NativeKind<?, ?> topN = NativeKinds.ofKind(TopNSpec.KIND);
        assertSame(StreamPhysicalRank.class, topN.physicalClass());
        assertSame(StreamExecRank.class, topN.execClass());
        assertSame(TopNKind.ENABLED, topN.killSwitch());
        assertEquals("ferry.top-n.enabled", topN.killSwitch().key());
        NativeKind<?, ?> join = NativeKinds.ofKind(RegularJoinSpec.KIND);
        assertSame(StreamPhysicalJoin.class, join.physicalClass());
        assertSame(StreamExecJoin.class, join.execClass());
        assertSame(RegularJoinKind.ENABLED, join.killSwitch());
        assertEquals("ferry.regular-join.enabled", join.killSwitch().key());
        NativeKind<?, ?> window = NativeKinds.ofKind(WindowAggregateSpec.KIND);
        assertSame(StreamPhysicalWindowAggregate.class, window.physicalClass());
        assertSame(StreamExecWindowAggregate.class, window.execClass());
        assertSame(WindowAggregateKind.ENABLED, window.killSwitch());
        assertEquals("ferry.window-aggregate.enabled", window.killSwitch().key());
    }

    /**
     * A preview kind (its switch off by default) claims nothing while it is off, whichever switch
     * keeps it off: no term, no count, Flink's plan; on, it marks its nodes. A kind on by default
     * and switched off still marks its nodes with the reason (above).
     */
    @Test
    void aPreviewKindClaimsNothingWhileOff() {
        String join = "SELECT * FROM T a JOIN T b ON a.k = b.k";
        for (Map<String, String> options : List.of(Map.<String, String>of(), Map.of("ferry.regular-join.enabled", "false"),
                Map.of("ferry.regular-join.enabled", "true", "ferry.enabled", "false"))) {
            TableEnvironment tEnv = newTableEnv(true);
            options.forEach((k, v) -> tEnv.getConfig().set(k, v));
            assertEquals(List.of(), ferryTerms(physicalPlan(tEnv.explainSql(join))), options.toString());
        }
        TableEnvironment tEnv = newTableEnv(true);
        tEnv.getConfig().set(RegularJoinKind.ENABLED, true);
        long planned = Ferry.nativeNodesPlanned(RegularJoinSpec.KIND);
        // T's ARRAY column cannot cross: the join is a candidate that falls back
        assertEquals(List.of("left field arr of type ARRAY<INT>: not carried across the native boundary"),
                ferryTerms(physicalPlan(tEnv.explainSql(join))));
        assertEquals(List.of("native"), ferryTerms(physicalPlan(tEnv.explainSql(
                "SELECT * FROM (SELECT k, i FROM T) a JOIN (SELECT k, b FROM T) b ON a.k = b.k"))));
        assertEquals(1, Ferry.nativeNodesPlanned(RegularJoinSpec.KIND) - planned);
    }

    /** A node planned native counts for its kind and in the total; a fallback counts nowhere. */
    @Test
    void plannedNodesCountPerKind() {
        TableEnvironment tEnv = newTableEnv(true);
        long total = Ferry.nativeNodesPlanned();
        long kind = Ferry.nativeNodesPlanned(GroupAggregateSpec.KIND);
        assertEquals(List.of("native"), ferryTerms(physicalPlan(tEnv.explainSql("SELECT k, COUNT(*) FROM T GROUP BY k"))));
        assertEquals(1, Ferry.nativeNodesPlanned(GroupAggregateSpec.KIND) - kind);
        assertEquals(1, Ferry.nativeNodesPlanned() - total);
        tEnv.getConfig().set(GroupAggregateKind.ENABLED, false);
        assertEquals(List.of("disabled by ferry.group-aggregate.enabled=false"),
                ferryTerms(physicalPlan(tEnv.explainSql("SELECT k, COUNT(*) FROM T GROUP BY k"))));
        assertEquals(1, Ferry.nativeNodesPlanned(GroupAggregateSpec.KIND) - kind);
        assertEquals(1, Ferry.nativeNodesPlanned() - total);
    }
}
