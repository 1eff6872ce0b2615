package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.kinds.intervaljoin.EarlyFireHint;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.hint.RelHint;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableConfig;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.PlannerConfig;
import org.apache.flink.table.planner.calcite.CalciteConfig;
import org.apache.flink.table.planner.plan.optimize.program.FlinkChainedProgram;
import org.apache.flink.table.planner.plan.optimize.program.FlinkStreamProgram;
import org.apache.flink.table.planner.plan.optimize.program.StreamOptimizeContext;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * {@link Ferry#install}: one program appended last and the EARLY_FIRE hint's recorder before
 * Flink's physical program, idempotent, custom programs kept.
 */
class FerryInstallTest {
    private static FlinkChainedProgram<StreamOptimizeContext> streamProgram(TableConfig config) {
        return config.getPlannerConfig().unwrap(CalciteConfig.class).get().getStreamProgram().get();
    }

    @Test
    void appendsOneProgramAfterFlinksAndIsIdempotent() {
        TableEnvironment tEnv = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
        TableConfig config = tEnv.getConfig();
        assertFalse(Ferry.isInstalled(config));
        Ferry.install(tEnv);
        assertTrue(Ferry.isInstalled(config));
        List<String> expected = new ArrayList<>(FlinkStreamProgram.buildProgram(config).getProgramNames());
        expected.add(expected.indexOf(FlinkStreamProgram.PHYSICAL()), EarlyFireHint.RECORDER_NAME);
        expected.add(Ferry.PROGRAM_NAME);
        assertEquals(expected, streamProgram(config).getProgramNames());
        // the EARLY_FIRE hint is registered with Flink's own hints
        assertTrue(config.getPlannerConfig().unwrap(CalciteConfig.class).get().getSqlToRelConverterConfig().get()
                .getHintStrategyTable().validateHint(RelHint.builder("EARLY_FIRE").hintOption("delay", "5s").build()));

        PlannerConfig installed = config.getPlannerConfig();
        Ferry.install(config);
        Ferry.install(tEnv);
        assertSame(installed, config.getPlannerConfig());
        assertEquals(expected, streamProgram(config).getProgramNames());
    }

    @Test
    void keepsACustomStreamProgramWithoutModifyingIt() {
        TableEnvironment tEnv = PlannerTests.newTableEnv(false);
        TableConfig config = tEnv.getConfig();
        AtomicInteger customRuns = new AtomicInteger();
        FlinkChainedProgram<StreamOptimizeContext> custom = FlinkStreamProgram.buildProgram(config);
        custom.addLast("custom", (RelNode root, StreamOptimizeContext ctx) -> {
            customRuns.incrementAndGet();
            return root;
        });
        List<String> customNames = custom.getProgramNames();
        config.setPlannerConfig(CalciteConfig.createBuilder().replaceStreamProgram(custom).build());

        Ferry.install(tEnv);
        List<String> expected = new ArrayList<>(customNames);
        expected.add(expected.indexOf(FlinkStreamProgram.PHYSICAL()), EarlyFireHint.RECORDER_NAME);
        expected.add(Ferry.PROGRAM_NAME);
        assertEquals(expected, streamProgram(config).getProgramNames());
        assertEquals(customNames, custom.getProgramNames(), "the user's chain must not change");

        String plan = PlannerTests.physicalPlan(tEnv.explainSql("SELECT k, SUM(b) FROM T GROUP BY k"));
        assertTrue(customRuns.get() > 0);
        assertEquals(List.of("native"), PlannerTests.ferryTerms(plan), plan);
    }
}
