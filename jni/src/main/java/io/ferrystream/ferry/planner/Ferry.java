package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.operators.AbstractNativeOperator;

import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.hint.HintStrategyTable;
import org.apache.calcite.sql2rel.SqlToRelConverter;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.TableConfig;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.planner.plan.nodes.exec.ExecNodeGraph;
import org.apache.flink.table.api.config.OptimizerConfigOptions;
import org.apache.flink.table.planner.calcite.CalciteConfig;
import org.apache.flink.table.planner.calcite.FlinkRelFactories;
import org.apache.flink.table.planner.hint.FlinkHintStrategies;
import org.apache.flink.table.planner.plan.optimize.program.FlinkChainedProgram;
import org.apache.flink.table.planner.plan.optimize.program.FlinkStreamProgram;
import org.apache.flink.table.planner.plan.optimize.program.StreamOptimizeContext;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Installs Ferry into a table environment's planner (docs/jvm.md#how-ferry-enters-flinks-planner).
 *
 * <p>{@link #install(TableConfig)} appends one optimizer program, {@value #PROGRAM_NAME}, after
 * Flink's own stream program. It runs on the final physical plan of every query and marks each
 * node a registered kind takes ({@link NativeKinds}): a supported one translates to Ferry's exec
 * node, which builds the native operator; every other candidate keeps Flink's operator and shows in
 * EXPLAIN why ({@code ferry=[reason]}). It also adds the hints and the programs before Flink's
 * physical program that kinds declare (the interval join's {@code EARLY_FIRE}). Call it before the
 * first statement; {@code ferry.*} options are read when a query is planned, so they may be
 * changed at any time after.
 *
 * <p>Needs {@code flink-table-planner_2.12} (not the planner loader) on the class path: the
 * program and the Ferry nodes extend planner classes.
 */
public final class Ferry {
    /** Name of the optimizer program Ferry appends to the stream program chain. */
    public static final String PROGRAM_NAME = "ferry";

    /** Nodes planned native per kind. */
    private static final Map<String, AtomicLong> NATIVE_NODES_PLANNED = new ConcurrentHashMap<>();

    private Ferry() {}

    /**
     * The native operator kinds this Ferry plans (e.g. {@code group_aggregate}), the keys of the
     * per-kind counters.
     */
    public static List<String> operatorKinds() {
        return NativeKinds.names();
    }

    /**
     * The class of {@code kind}'s exec node ({@link NativeExecNode}, every kind's), whose logger
     * reports (at WARN) a node that fell back to Flink's operator at translation. For test reports.
     */
    public static String execNodeClassName(String kind) {
        if (NativeKinds.ofKind(kind) == null) {
            throw new IllegalArgumentException("no native operator kind " + kind + "; kinds: " + operatorKinds());
        }
        return NativeExecNode.class.getName();
    }

    /**
     * Nodes this JVM's planners replaced with a native Ferry node since it started (every
     * optimisation counts, EXPLAIN included), of every kind. For test reports; not a metric.
     */
    public static long nativeNodesPlanned() {
        long sum = 0;
        for (AtomicLong n : NATIVE_NODES_PLANNED.values()) {
            sum += n.get();
        }
        return sum;
    }

    /** {@link #nativeNodesPlanned()} of one kind. */
    public static long nativeNodesPlanned(String kind) {
        AtomicLong n = NATIVE_NODES_PLANNED.get(kind);
        return n == null ? 0 : n.get();
    }

    /** Native operators opened in this JVM since it started, of every kind. For test reports; not a metric. */
    public static long nativeOperatorsOpened() {
        return AbstractNativeOperator.openedCount();
    }

    /** {@link #nativeOperatorsOpened()} of one kind. */
    public static long nativeOperatorsOpened(String kind) {
        return AbstractNativeOperator.openedCount(kind);
    }

    /**
     * Native operator subtasks opened in this JVM since it started for the native node {@code
     * description} ({@link NativeCandidate#nativeDescription()}, the spec's name): what ran of one
     * plan node. For tools and test reports; not a metric.
     */
    public static long nativeOperatorsOpenedForNode(String description) {
        return AbstractNativeOperator.openedCountForName(description);
    }

    /**
     * A snapshot of {@link #nativeOperatorsOpenedForNode} for every node that opened an operator
     * in this JVM: take one before a job and one after, and the difference is what the job ran.
     */
    public static Map<String, Long> nativeOperatorsOpenedPerNode() {
        return AbstractNativeOperator.openedCountsByName();
    }

    /**
     * Records the physical plans Ferry's program produces on the calling thread (each optimisation
     * of a query: EXPLAIN, execution) until the capture is closed. The roots are the final
     * physical plans with Ferry's nodes in place ({@link NativeCandidate}); tools walk them instead
     * of parsing EXPLAIN text. Captures do not nest.
     */
    public static PlanCapture capturePlans() {
        if (FerryOptimizeProgram.CAPTURE.get() != null) {
            throw new IllegalStateException("a plan capture is already open on this thread");
        }
        PlanCapture capture = new PlanCapture();
        FerryOptimizeProgram.CAPTURE.set(capture.plans);
        return capture;
    }

    /** The plans {@link #capturePlans()} recorded; closing it stops recording. */
    public static final class PlanCapture implements AutoCloseable {
        private final List<RelNode> plans = new ArrayList<>();

        private PlanCapture() {}

        /** The physical plan roots recorded so far, in order. */
        public List<RelNode> plans() {
            return Collections.unmodifiableList(plans);
        }

        @Override
        public void close() {
            if (FerryOptimizeProgram.CAPTURE.get() == plans) {
                FerryOptimizeProgram.CAPTURE.remove();
            }
        }
    }

    static void countNativeNode(String kind) {
        NATIVE_NODES_PLANNED.computeIfAbsent(kind, k -> new AtomicLong()).incrementAndGet();
    }

    /** {@link #install(TableConfig)} on the environment's configuration. */
    public static void install(TableEnvironment tEnv) {
        install(tEnv.getConfig());
    }

    /**
     * Gives a plan loaded from JSON ({@code EXECUTE PLAN}, {@code CompiledPlan#execute}) Ferry's
     * nodes before Flink translates it ({@link LoadedPlans}); the planner shim calls it for every
     * such plan. Returns how many nodes it replaced.
     */
    public static int substituteLoadedPlan(ExecNodeGraph graph) {
        return LoadedPlans.substitute(graph);
    }

    /**
     * Appends Ferry's optimizer program to the stream program of {@code config}. Idempotent. A
     * custom stream program already set through a {@link CalciteConfig} is kept (Ferry runs after
     * it; the existing chain object is not modified: Ferry installs a copy with its program
     * appended). Without one, the chain is Flink's {@link FlinkStreamProgram}, which follows the
     * table configuration as Flink's own does: an option it reads may still be changed after Ferry
     * is installed (the planner shim installs Ferry when a table environment is created, before
     * any {@code SET}); see {@link FlinkStreamProgramThenFerry}.
     */
    public static synchronized void install(TableConfig config) {
        CalciteConfig calciteConfig =
                config.getPlannerConfig().unwrap(CalciteConfig.class).orElse(CalciteConfig.DEFAULT());
        FlinkChainedProgram<StreamOptimizeContext> chain;
        if (calciteConfig.getStreamProgram().isDefined()) {
            FlinkChainedProgram<StreamOptimizeContext> current = calciteConfig.getStreamProgram().get();
            if (current.get(PROGRAM_NAME).isDefined()) {
                return;
            }
            chain = new FlinkChainedProgram<>();
            for (String name : current.getProgramNames()) {
                chain.addLast(name, current.get(name).get());
            }
        } else {
            chain = new FlinkStreamProgramThenFerry(config);
        }
        addKindPrograms(chain);
        chain.addLast(PROGRAM_NAME, new FerryOptimizeProgram());
        config.setPlannerConfig(CalciteConfig.createBuilder(calciteConfig)
                .replaceStreamProgram(chain)
                .replaceSqlToRelConverterConfig(withKindHints(calciteConfig, config))
                .build());
    }

    /**
     * Puts the programs kinds need before Flink's physical program ({@link
     * NativeKind#programsBeforePhysical}) there, if the chain has one.
     */
    private static void addKindPrograms(FlinkChainedProgram<StreamOptimizeContext> chain) {
        if (chain.get(FlinkStreamProgram.PHYSICAL()).isEmpty()) {
            return;
        }
        for (NativeKind<?, ?> kind : NativeKinds.all()) {
            kind.programsBeforePhysical().forEach((name, program) -> {
                if (chain.get(name).isEmpty()) {
                    chain.addBefore(FlinkStreamProgram.PHYSICAL(), name, program);
                }
            });
        }
    }

    /** The names of the programs kinds put before Flink's physical program. */
    private static Set<String> kindProgramNames() {
        Set<String> names = new HashSet<>();
        for (NativeKind<?, ?> kind : NativeKinds.all()) {
            names.addAll(kind.programsBeforePhysical().keySet());
        }
        return names;
    }

    /** {@code hints} with every kind's hints added ({@link NativeKind#withHints}). */
    private static HintStrategyTable withKindHints(HintStrategyTable hints) {
        for (NativeKind<?, ?> kind : NativeKinds.all()) {
            hints = kind.withHints(hints);
        }
        return hints;
    }

    /**
     * The SQL-to-rel configuration with the kinds' hints registered ({@code EARLY_FIRE}): a custom
     * one set through the {@link CalciteConfig} with the hints added to its hint table; otherwise
     * Flink's default (PlannerContext#getSqlToRelConverterConfig) with the hints added, reading
     * {@code table.optimizer.sql2rel.project-merge.enabled} when a query is converted, as Flink does.
     */
    private static SqlToRelConverter.Config withKindHints(CalciteConfig calciteConfig, TableConfig tableConfig) {
        if (calciteConfig.getSqlToRelConverterConfig().isDefined()) {
            SqlToRelConverter.Config custom = calciteConfig.getSqlToRelConverterConfig().get();
            return custom.withHintStrategyTable(withKindHints(custom.getHintStrategyTable()));
        }
        return SqlToRelConverter.config()
                .withTrimUnusedFields(false)
                .withHintStrategyTable(withKindHints(FlinkHintStrategies.createHintStrategyTable()))
                .withInSubQueryThreshold(Integer.MAX_VALUE)
                .withExpand(false)
                .withRelBuilderFactory(FlinkRelFactories.FLINK_REL_BUILDER())
                .addRelBuilderConfigTransform(c -> tableConfig.get(
                                OptimizerConfigOptions.TABLE_OPTIMIZER_SQL2REL_PROJECT_MERGE_ENABLED)
                        ? c
                        : c.withBloat(-1));
    }

    /**
     * Flink's default stream program, then Ferry's. Flink builds its program anew for every
     * optimisation from the table configuration, and {@code buildProgram} reads {@code
     * table.optimizer.join-reorder-enabled} (only that, in 2.3.0; it adds a program when true).
     * This chain holds Flink's programs as built at install and runs them while that option keeps
     * its value; once it has changed, it runs Flink's program built from the current
     * configuration instead, then the programs that are not Flink's (Ferry's; the kinds' programs run inside Flink's).
     */
    static final class FlinkStreamProgramThenFerry extends FlinkChainedProgram<StreamOptimizeContext> {
        private final boolean joinReorder;
        private final Set<String> flinkPrograms = new HashSet<>();

        FlinkStreamProgramThenFerry(ReadableConfig config) {
            joinReorder = config.get(OptimizerConfigOptions.TABLE_OPTIMIZER_JOIN_REORDER_ENABLED);
            FlinkChainedProgram<StreamOptimizeContext> flinks = FlinkStreamProgram.buildProgram(config);
            for (String name : flinks.getProgramNames()) {
                flinkPrograms.add(name);
                addLast(name, flinks.get(name).get());
            }
        }

        @Override
        public RelNode optimize(RelNode root, StreamOptimizeContext context) {
            TableConfig config = context.getTableConfig();
            if (config.get(OptimizerConfigOptions.TABLE_OPTIMIZER_JOIN_REORDER_ENABLED) == joinReorder) {
                return super.optimize(root, context);
            }
            FlinkChainedProgram<StreamOptimizeContext> flinks = FlinkStreamProgram.buildProgram(config);
            addKindPrograms(flinks);
            RelNode rel = flinks.optimize(root, context);
            Set<String> kindPrograms = kindProgramNames();
            for (String name : getProgramNames()) {
                if (!flinkPrograms.contains(name) && !kindPrograms.contains(name)) {
                    rel = get(name).get().optimize(rel, context);
                }
            }
            return rel;
        }
    }

    /** Whether {@link #install} has run on {@code config}. */
    public static boolean isInstalled(TableConfig config) {
        return config.getPlannerConfig()
                .unwrap(CalciteConfig.class)
                .map(c -> c.getStreamProgram().isDefined() && c.getStreamProgram().get().get(PROGRAM_NAME).isDefined())
                .orElse(false);
    }
}
