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
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecLocalGroupAggregate;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecRank;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalGlobalGroupAggregate;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalGroupAggregate;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalLocalGroupAggregate;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalRank;
import org.junit.jupiter.api.Test;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

/** The registry of native kinds, the per-kind counters, and a kind's own kill switch. */
class NativeKindsTest {
    @Test
    void theGroupAggregateIsRegistered() {
        assertEquals(
                List.of(GroupAggregateSpec.KIND, LocalGroupAggregateSpec.KIND, GlobalGroupAggregateSpec.KIND,
                        IncrementalGroupAggregateSpec.KIND, IntervalJoinSpec.KIND, WindowJoinSpec.KIND,
                        FerryLookupJoinOperator.KIND, DeduplicateSpec.KIND, TopNSpec.KIND),
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
            assertTrue(k.killSwitch().defaultValue(), k.name());
            assertSame(k, NativeKinds.ofKind(k.name()));
        }
        assertEquals(Ferry.operatorKinds(), NativeKinds.names());
        assertEquals(9, NativeKinds.all().size());
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
