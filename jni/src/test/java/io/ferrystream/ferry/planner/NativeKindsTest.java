package io.ferrystream.ferry.planner;

import static io.ferrystream.ferry.planner.PlannerTests.ferryTerms;
import static io.ferrystream.ferry.planner.PlannerTests.newTableEnv;
import static io.ferrystream.ferry.planner.PlannerTests.physicalPlan;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrystream.ferry.operators.GlobalGroupAggregateSpec;
import io.ferrystream.ferry.operators.FerryLookupJoinOperator;
import io.ferrystream.ferry.operators.GroupAggregateSpec;
import io.ferrystream.ferry.operators.IncrementalGroupAggregateSpec;
import io.ferrystream.ferry.operators.IntervalJoinSpec;
import io.ferrystream.ferry.operators.LocalGroupAggregateSpec;
import io.ferrystream.ferry.operators.WindowJoinSpec;

import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalGlobalGroupAggregate;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalGroupAggregate;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalLocalGroupAggregate;
import org.junit.jupiter.api.Test;

import java.util.List;

/** The registry of native kinds, the per-kind counters, and a kind's own kill switch. */
class NativeKindsTest {
    @Test
    void theGroupAggregateIsRegistered() {
        assertEquals(
                List.of(GroupAggregateSpec.KIND, LocalGroupAggregateSpec.KIND, GlobalGroupAggregateSpec.KIND,
                        IncrementalGroupAggregateSpec.KIND, IntervalJoinSpec.KIND, WindowJoinSpec.KIND,
                        FerryLookupJoinOperator.KIND),
                Ferry.operatorKinds());
        NativeMatcher<?> m = NativeKinds.ofKind(GroupAggregateSpec.KIND);
        assertSame(StreamPhysicalGroupAggregate.class, m.nodeClass());
        assertEquals("ferry.group-aggregate.enabled", m.enabledOption().key());
        assertSame(GroupAggregateMatcher.ENABLED, m.enabledOption());
        assertTrue(m.enabledOption().defaultValue());
        assertEquals(FerryStreamExecGroupAggregate.class.getName(), Ferry.execNodeClassName(GroupAggregateSpec.KIND));
        assertThrows(IllegalArgumentException.class, () -> Ferry.execNodeClassName("no_such_kind"));
        assertEquals(0, Ferry.nativeNodesPlanned("no_such_kind"));
        assertEquals(0, Ferry.nativeOperatorsOpened("no_such_kind"));
    }

    /** The two halves of the two-phase aggregate: Flink's node classes, their own kill switches and exec nodes. */
    @Test
    void theTwoPhaseAggregateIsRegistered() {
        NativeMatcher<?> local = NativeKinds.ofKind(LocalGroupAggregateSpec.KIND);
        assertSame(StreamPhysicalLocalGroupAggregate.class, local.nodeClass());
        assertSame(LocalGroupAggregateMatcher.ENABLED, local.enabledOption());
        assertEquals("ferry.local-group-aggregate.enabled", local.enabledOption().key());
        assertEquals(FerryStreamExecLocalGroupAggregate.class.getName(), Ferry.execNodeClassName(LocalGroupAggregateSpec.KIND));
        NativeMatcher<?> global = NativeKinds.ofKind(GlobalGroupAggregateSpec.KIND);
        assertSame(StreamPhysicalGlobalGroupAggregate.class, global.nodeClass());
        assertSame(GlobalGroupAggregateMatcher.ENABLED, global.enabledOption());
        assertEquals("ferry.global-group-aggregate.enabled", global.enabledOption().key());
        assertEquals(FerryStreamExecGlobalGroupAggregate.class.getName(), Ferry.execNodeClassName(GlobalGroupAggregateSpec.KIND));
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
        tEnv.getConfig().set(GroupAggregateMatcher.ENABLED, false);
        assertEquals(List.of("disabled by ferry.group-aggregate.enabled=false"),
                ferryTerms(physicalPlan(tEnv.explainSql("SELECT k, COUNT(*) FROM T GROUP BY k"))));
        assertEquals(1, Ferry.nativeNodesPlanned(GroupAggregateSpec.KIND) - kind);
        assertEquals(1, Ferry.nativeNodesPlanned() - total);
    }
}
