package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.operators.FerryGroupAggregateOperator;

import org.apache.flink.table.api.TableConfig;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.planner.calcite.CalciteConfig;
import org.apache.flink.table.planner.plan.optimize.program.FlinkChainedProgram;
import org.apache.flink.table.planner.plan.optimize.program.FlinkOptimizeProgram;
import org.apache.flink.table.planner.plan.optimize.program.FlinkStreamProgram;
import org.apache.flink.table.planner.plan.optimize.program.StreamOptimizeContext;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Installs Ferry into a table environment's planner (flink-semantics.md §1.5 option D, §1.6).
 *
 * <p>{@link #install(TableConfig)} appends one optimizer program, {@value #PROGRAM_NAME}, after
 * Flink's own stream program. It runs on the final physical plan of every query and swaps each
 * supported node for a Ferry node whose ExecNode builds the native operator; every other candidate
 * node keeps Flink's operator and shows in EXPLAIN why ({@code ferry=[reason]}). Call it before
 * the first statement; {@code ferry.*} options are read when a query is planned, so they may be
 * changed at any time after.
 *
 * <p>Needs {@code flink-table-planner_2.12} (not the planner loader) on the class path: the
 * program and the Ferry nodes extend planner classes.
 */
public final class Ferry {
    /** Name of the optimizer program Ferry appends to the stream program chain. */
    public static final String PROGRAM_NAME = "ferry";

    private static final AtomicLong NATIVE_NODES_PLANNED = new AtomicLong();

    private Ferry() {}

    /**
     * Nodes this JVM's planners replaced with a native Ferry node since it started (every
     * optimisation counts, EXPLAIN included). For test reports; not a metric.
     */
    public static long nativeNodesPlanned() {
        return NATIVE_NODES_PLANNED.get();
    }

    /** Native operators opened in this JVM since it started. For test reports; not a metric. */
    public static long nativeOperatorsOpened() {
        return FerryGroupAggregateOperator.openedCount();
    }

    static void countNativeNode() {
        NATIVE_NODES_PLANNED.incrementAndGet();
    }

    /** {@link #install(TableConfig)} on the environment's configuration. */
    public static void install(TableEnvironment tEnv) {
        install(tEnv.getConfig());
    }

    /**
     * Appends Ferry's optimizer program to the stream program of {@code config}. Idempotent. A
     * custom stream program already set through a {@link CalciteConfig} is kept (Ferry runs after
     * it); otherwise the chain is Flink's {@link FlinkStreamProgram#buildProgram}, built now from
     * {@code config}. Flink reads only {@code table.optimizer.join-reorder-enabled} while building
     * it, so set that option before installing Ferry. The existing chain object is not modified:
     * Ferry installs a copy with its program appended.
     */
    public static synchronized void install(TableConfig config) {
        CalciteConfig calciteConfig =
                config.getPlannerConfig().unwrap(CalciteConfig.class).orElse(CalciteConfig.DEFAULT());
        FlinkChainedProgram<StreamOptimizeContext> current =
                calciteConfig.getStreamProgram().isDefined()
                        ? calciteConfig.getStreamProgram().get()
                        : FlinkStreamProgram.buildProgram(config);
        if (current.get(PROGRAM_NAME).isDefined()) {
            return;
        }
        FlinkChainedProgram<StreamOptimizeContext> chain = new FlinkChainedProgram<>();
        for (String name : current.getProgramNames()) {
            FlinkOptimizeProgram<StreamOptimizeContext> program = current.get(name).get();
            chain.addLast(name, program);
        }
        chain.addLast(PROGRAM_NAME, new FerryOptimizeProgram());
        config.setPlannerConfig(CalciteConfig.createBuilder(calciteConfig).replaceStreamProgram(chain).build());
    }

    /** Whether {@link #install} has run on {@code config}. */
    public static boolean isInstalled(TableConfig config) {
        return config.getPlannerConfig()
                .unwrap(CalciteConfig.class)
                .map(c -> c.getStreamProgram().isDefined() && c.getStreamProgram().get().get(PROGRAM_NAME).isDefined())
                .orElse(false);
    }
}
