package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateKind;
import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateSpec;
import io.ferrystream.ferry.kinds.regularjoin.FerryRegularJoinOperator;
import io.ferrystream.ferry.kinds.regularjoin.RegularJoinKind;

import org.apache.flink.api.dag.Transformation;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.operators.SimpleOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperatorFactory;
import org.apache.flink.streaming.api.transformations.OneInputTransformation;
import org.apache.flink.streaming.api.transformations.TwoInputTransformation;
import org.apache.flink.table.api.CompiledPlan;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.PlanReference;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.api.internal.TableEnvironmentImpl;
import org.apache.flink.table.delegation.InternalPlan;
import org.apache.flink.table.delegation.Planner;
import org.apache.flink.table.operations.ModifyOperation;
import org.apache.flink.table.planner.factories.TestValuesTableFactory;
import org.apache.flink.table.planner.plan.ExecNodeGraphInternalPlan;
import org.apache.flink.table.planner.plan.nodes.exec.ExecEdge;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNode;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecGroupAggregate;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecJoin;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Ferry's one exec node, {@link NativeExecNode}, without the planner shim: a plan compiled in the
 * table environment runs its native nodes; translation falls back to Flink's operator, with Flink's
 * UID and the reason recorded, when the options changed since planning or, in a plan loaded from
 * JSON and handed to {@link Ferry#substituteLoadedPlan}, when the kind's checks or Go refuse the
 * node. The results are always Flink's.
 */
class NativeExecNodeTest {
    @RegisterExtension
    static final MiniClusterExtension CLUSTER = MiniClusters.twoByTwo();

    private static final String AGG = "INSERT INTO %s SELECT k, COUNT(*), SUM(b) FROM src GROUP BY k";
    /** AVG(DISTINCT) stays Flink's: Go refuses it ("aggs[1]: AVG(DISTINCT): not native yet"). */
    private static final String AVG_DISTINCT = "INSERT INTO %s SELECT k, SUM(b), AVG(DISTINCT i) FROM src GROUP BY k";
    /** Sinks are named apart: the values connector keeps every run's results by the sink's name. */
    private static int sinks;

    private static List<Row> rows() {
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < 400; i++) {
            rows.add(Row.of(i * 7919 % 13, (long) (i % 101), i % 9));
        }
        return rows;
    }

    /** One run: a table environment at parallelism 1 reading {@link #rows}, and its sink's name. */
    private record Env(StreamTableEnvironment tEnv, String sink) {
        String sql(String insert) {
            return String.format(insert, sink);
        }

        CompiledPlan compile(String insert) {
            return tEnv.compilePlanSql(sql(insert));
        }

        /** The sink's final rows after {@code plan} ran, sorted. */
        List<String> run(CompiledPlan plan) throws Exception {
            plan.execute().await();
            return TestValuesTableFactory.getResultsAsStrings(sink).stream().sorted().toList();
        }
    }

    /** A table environment at parallelism 1 reading {@link #rows} into a retracting values sink of its own. */
    private static Env env(boolean ferry) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
        Ferry.install(tEnv);
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        tEnv.executeSql("CREATE TABLE src (k INT, b BIGINT, i INT) WITH ('connector' = 'values', 'bounded' = 'true',"
                + " 'data-id' = '" + TestValuesTableFactory.registerData(rows()) + "')");
        String sink = "sink" + ++sinks;
        tEnv.executeSql("CREATE TABLE " + sink + " (k INT, n BIGINT, s BIGINT) WITH ('connector' = 'values',"
                + " 'sink-insert-only' = 'false')");
        return new Env(tEnv, sink);
    }

    @AfterEach
    void clear() {
        TestValuesTableFactory.clearAllData();
    }

    /** The plan of {@code insert}, as {@code COMPILE PLAN} would write it, through the planner's API. */
    private static ExecNodeGraphInternalPlan compile(Env env, String insert) {
        TableEnvironmentImpl impl = (TableEnvironmentImpl) env.tEnv();
        ModifyOperation op = (ModifyOperation) impl.getParser().parse(env.sql(insert)).get(0);
        return (ExecNodeGraphInternalPlan) impl.getPlanner().compilePlan(List.of(op));
    }

    /** The one node of class {@code type} in {@code plan}'s graph. */
    private static <T> T node(InternalPlan plan, Class<T> type) {
        List<T> found = new ArrayList<>();
        Deque<ExecNode<?>> todo = new ArrayDeque<>(((ExecNodeGraphInternalPlan) plan).getExecNodeGraph().getRootNodes());
        while (!todo.isEmpty()) {
            ExecNode<?> n = todo.pop();
            if (type.isInstance(n) && !found.contains(type.cast(n))) {
                found.add(type.cast(n));
            }
            for (ExecEdge e : n.getInputEdges()) {
                todo.push(e.getSource());
            }
        }
        assertEquals(1, found.size(), "one " + type.getSimpleName() + ": " + found);
        return found.get(0);
    }

    /** The transformation of {@code transformations} whose UID is {@code uid}. */
    private static Transformation<?> withUid(List<Transformation<?>> transformations, String uid) {
        for (Transformation<?> root : transformations) {
            for (Transformation<?> t : root.getTransitivePredecessors()) {
                if (uid.equals(t.getUid())) {
                    return t;
                }
            }
        }
        throw new AssertionError("no transformation with UID " + uid);
    }

    private static String operatorClass(Transformation<?> t) {
        StreamOperatorFactory<?> f = t instanceof TwoInputTransformation<?, ?, ?> two
                ? two.getOperatorFactory()
                : ((OneInputTransformation<?, ?>) t).getOperatorFactory();
        return f instanceof SimpleOperatorFactory ? ((SimpleOperatorFactory<?>) f).getOperator().getClass().getName()
                : f.getClass().getName();
    }

    /** {@code compilePlanSql(…).execute()} holds Ferry's node and runs it, shim or not. */
    @Test
    void aPlanCompiledHereRunsNatively() throws Exception {
        Env flink = env(false);
        List<String> want = flink.run(flink.compile(AGG));
        assertEquals(13, want.size(), "one row per key: " + want);
        long opened = Ferry.nativeOperatorsOpened(GroupAggregateSpec.KIND);
        Env ferry = env(true);
        assertEquals(want, ferry.run(ferry.compile(AGG)));
        assertEquals(1, Ferry.nativeOperatorsOpened(GroupAggregateSpec.KIND) - opened, "Ferry's operator ran");
    }

    /**
     * A kill switch turned off between planning and translation: the node planned native
     * translates to Flink's operator, with Flink's UID, and says why.
     */
    @Test
    void switchedOffAfterPlanningRunsFlinksOperatorWithTheSameUid() throws Exception {
        Env env = env(true);
        StreamTableEnvironment tEnv = env.tEnv();
        ExecNodeGraphInternalPlan plan = compile(env, AGG);
        NativeExecNode ferry = node(plan, NativeExecNode.class);
        assertEquals(GroupAggregateSpec.KIND, ferry.kind().name());
        assertTrue(ferry.flinkNode() instanceof StreamExecGroupAggregate, ferry.flinkNode().toString());
        assertEquals(Optional.empty(), ferry.fallbackReason());
        String uid = ferry.getId() + "_" + StreamExecGroupAggregate.GROUP_AGGREGATE_TRANSFORMATION;

        tEnv.getConfig().set(GroupAggregateKind.ENABLED, false);
        Transformation<?> agg = withUid(((TableEnvironmentImpl) tEnv).getPlanner().translatePlan(plan), uid);
        assertEquals(Optional.of("disabled by ferry.group-aggregate.enabled=false"), ferry.fallbackReason());
        assertFalse(operatorClass(agg).startsWith("io.ferrystream."), "Flink's operator: " + operatorClass(agg));
        assertFalse(agg.getName().contains("Ferry"), "Flink's name: " + agg.getName());

        // the same on a job that runs: Flink's operator, Flink's results
        Env flink = env(false);
        List<String> want = flink.run(flink.compile(AGG));
        Env off = env(true);
        CompiledPlan compiled = off.compile(AGG);
        off.tEnv().getConfig().set(GroupAggregateKind.ENABLED, false);
        long opened = Ferry.nativeOperatorsOpened(GroupAggregateSpec.KIND);
        assertEquals(want, off.run(compiled));
        assertEquals(0, Ferry.nativeOperatorsOpened(GroupAggregateSpec.KIND) - opened, "no native operator ran");
    }

    /**
     * A plan loaded from JSON, compiled with Ferry off: {@link Ferry#substituteLoadedPlan} puts
     * Ferry's node in place of Flink's group aggregate, and translation decides as the planner
     * would have. Supported: Ferry's operator with the plan's UID. Refused by Go: Flink's operator,
     * with the UID and the reason EXPLAIN would show.
     */
    @Test
    void aLoadedPlanIsDecidedAtTranslation() throws Exception {
        for (String insert : List.of(AGG, AVG_DISTINCT)) {
            String json = env(false).compile(insert).asJsonString();
            Planner planner = ((TableEnvironmentImpl) env(true).tEnv()).getPlanner();
            InternalPlan plan = planner.loadPlan(PlanReference.fromJsonString(json));
            StreamExecGroupAggregate flinks = node(plan, StreamExecGroupAggregate.class);
            assertEquals(1, Ferry.substituteLoadedPlan(((ExecNodeGraphInternalPlan) plan).getExecNodeGraph()));
            assertEquals(0, Ferry.substituteLoadedPlan(((ExecNodeGraphInternalPlan) plan).getExecNodeGraph()), "idempotent");
            NativeExecNode ferry = node(plan, NativeExecNode.class);
            assertTrue(ferry.flinkNode() == flinks, "Ferry's node wraps the plan's");
            assertEquals(flinks.getId(), ferry.getId());
            assertEquals(flinks.getDescription(), ferry.getDescription());

            String uid = flinks.getId() + "_" + StreamExecGroupAggregate.GROUP_AGGREGATE_TRANSFORMATION;
            Transformation<?> agg = withUid(planner.translatePlan(plan), uid);
            if (insert.equals(AGG)) {
                assertEquals(Optional.empty(), ferry.fallbackReason());
                assertEquals("io.ferrystream.ferry.kinds.groupaggregate.FerryGroupAggregateOperator", operatorClass(agg));
                assertTrue(agg.getName().startsWith("FerryGroupAggregate["), agg.getName());
            } else {
                assertEquals(Optional.of("aggs[1]: AVG(DISTINCT): not native yet"), ferry.fallbackReason());
                assertFalse(operatorClass(agg).startsWith("io.ferrystream."), "Flink's operator: " + operatorClass(agg));
                assertNotNull(agg.getName());
            }
        }
    }

    /**
     * A loaded plan's node of a preview kind (the regular join): while the kind is off, Flink's
     * operator, and no candidate (as the planner leaves such a node); switched on, Ferry's.
     */
    @Test
    void aLoadedPlanOfAPreviewKindIsNoCandidateWhileOff() throws Exception {
        String insert = "INSERT INTO %s SELECT a.k, a.b, CAST(c.i AS BIGINT) FROM src a JOIN src c ON a.k = c.k";
        String json = env(false).compile(insert).asJsonString();
        for (boolean on : new boolean[] {false, true}) {
            Env env = env(true);
            env.tEnv().getConfig().set(RegularJoinKind.ENABLED, on);
            Planner planner = ((TableEnvironmentImpl) env.tEnv()).getPlanner();
            InternalPlan plan = planner.loadPlan(PlanReference.fromJsonString(json));
            StreamExecJoin flinks = node(plan, StreamExecJoin.class);
            assertEquals(1, Ferry.substituteLoadedPlan(((ExecNodeGraphInternalPlan) plan).getExecNodeGraph()));
            NativeExecNode ferry = node(plan, NativeExecNode.class);
            Transformation<?> join = withUid(planner.translatePlan(plan), flinks.getId() + "_" + StreamExecJoin.JOIN_TRANSFORMATION);
            assertEquals(on, ferry.isCandidate());
            if (on) {
                assertEquals(Optional.empty(), ferry.fallbackReason());
                assertEquals(FerryRegularJoinOperator.class.getName(), operatorClass(join));
            } else {
                assertEquals(Optional.of("disabled by ferry.regular-join.enabled=false"), ferry.fallbackReason());
                assertFalse(operatorClass(join).startsWith("io.ferrystream."), "Flink's operator: " + operatorClass(join));
            }
        }
    }
}
