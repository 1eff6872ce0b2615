package io.ferrystream.ferry.cli;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Configuration the way a Flink SQL user writes it: the SQL Client's {@code SET}/{@code RESET} in a
 * script, {@code -D key=value} and {@code --conf DIR} (a Flink config.yaml) on the command line,
 * each shown in the run's output, each reaching the plan and the jobs of both sides.
 */
class FerryCliConfigTest {
    @TempDir Path dir;

    private static final String SOURCE =
            "CREATE TABLE s (id BIGINT) WITH ('connector' = 'datagen', 'fields.id.kind' = 'sequence',"
                    + " 'fields.id.start' = '1', 'fields.id.end' = '5000');";

    /**
     * A mini-batch script as a Flink user writes it: SET statements, a datagen table, a GROUP BY.
     * With single-phase aggregation the GROUP BY runs natively on the Ferry side and compares
     * identical; after RESET of the phase strategy Flink plans its default two-phase aggregation,
     * whose local and global aggregates run natively too.
     */
    @Test
    void setAndResetInAScript() throws Exception {
        String script = Cli.script(dir, "minibatch.sql",
                "SET 'table.exec.mini-batch.enabled' = 'true';",
                "SET 'table.exec.mini-batch.allow-latency' = '1 s';",
                "SET 'table.exec.mini-batch.size' = '1000';",
                "SET 'table.optimizer.agg-phase-strategy' = 'ONE_PHASE';",
                SOURCE,
                "SELECT MOD(id, 10) AS k, COUNT(*) AS n, SUM(id) AS total FROM s GROUP BY MOD(id, 10);",
                "RESET 'table.optimizer.agg-phase-strategy';",
                "SELECT MOD(id, 10) AS k, COUNT(*) AS n FROM s GROUP BY MOD(id, 10);");
        Cli.Result r = Cli.run("sql", script, "--mode", "compare", "--require-native", "--max-rows", "0");
        assertEquals(0, r.code(), r.toString());
        String out = r.out();
        assertTrue(out.contains("SET table.exec.mini-batch.enabled = true   (both sides)"), r.toString());
        assertTrue(out.contains("in effect from SET: table.exec.mini-batch.enabled = true, table.exec.mini-batch.allow-latency"
                + " = 1 s, table.exec.mini-batch.size = 1000, table.optimizer.agg-phase-strategy = ONE_PHASE"), r.toString());
        assertTrue(out.contains("MiniBatchAssigner(interval=[1000ms], mode=[ProcTime])"), r.toString());
        assertTrue(out.contains("RESET table.optimizer.agg-phase-strategy   (back to Flink's default)"), r.toString());
        String[] queries = out.split("-- query 2");
        assertTrue(queries[0].contains("native: 1 of 1 candidate nodes ran natively (1 native operator subtask opened)"), r.toString());
        assertTrue(queries[1].contains("native: 2 of 2 candidate nodes ran natively (2 native operator subtasks opened)"), r.toString());
        assertTrue(queries[1].contains("  native    LocalGroupAggregate("), r.toString());
        assertTrue(queries[1].contains("  native    GlobalGroupAggregate("), r.toString());
        // a processing-time mini-batch: compared as the final result
        assertTrue(out.contains("query 1: IDENTICAL final result") && out.contains("query 2: IDENTICAL final result"), r.toString());
        assertTrue(out.strip().endsWith("IDENTICAL"), r.toString());
        long[] n = r.nativeCount();
        assertEquals(3, n[0]);
        assertEquals(3, n[1]);
    }

    /** -D options reach both sides' planners and show in the header with their origin; both forms parse. */
    @Test
    void dynamicOptions() throws Exception {
        String script = Cli.script(dir, "plain.sql", SOURCE,
                "SELECT MOD(id, 7) AS k, MAX(id) AS top FROM s GROUP BY MOD(id, 7);");
        Cli.Result r = Cli.run("sql", script, "--mode", "compare", "--require-native", "--max-rows", "0",
                "-D", "table.exec.mini-batch.enabled=true", "-Dtable.exec.mini-batch.allow-latency=1 h",
                "-D", "table.exec.mini-batch.size=100", "-D", "table.optimizer.agg-phase-strategy=ONE_PHASE");
        assertEquals(0, r.code(), r.toString());
        assertTrue(r.out().contains("  table.exec.mini-batch.enabled = true   (-D)"), r.toString());
        assertTrue(r.out().contains("  table.exec.mini-batch.allow-latency = 1 h   (-D)"), r.toString());
        assertTrue(r.out().contains("MiniBatchAssigner(interval=[3600000ms], mode=[ProcTime])"), r.toString());
        assertEquals(1, r.nativeCount()[0]);
    }

    /**
     * --conf reads a Flink config.yaml (nested keys too, as Flink reads it); its parallelism 2 makes
     * the changelog order depend on timing, so compare checks the final result and says why.
     */
    @Test
    void confDirectory() throws Exception {
        Path conf = Files.createDirectories(dir.resolve("conf"));
        Files.writeString(conf.resolve("config.yaml"), String.join("\n",
                "parallelism:",
                "  default: 2",
                "ferry.batch.size: 64",
                "table.exec.state.ttl: 0 ms",
                ""), StandardCharsets.UTF_8);
        String script = Cli.script(dir, "conf.sql", SOURCE,
                "SELECT MOD(id, 11) AS k, COUNT(*) AS n, SUM(id) AS total FROM s GROUP BY MOD(id, 11);");
        Cli.Result r = Cli.run("sql", script, "--mode", "compare", "--require-native", "--max-rows", "0",
                "--conf", conf.toString());
        assertEquals(0, r.code(), r.toString());
        assertTrue(r.out().contains("  parallelism.default = 2   (--conf " + conf.resolve("config.yaml") + ")"), r.toString());
        assertTrue(r.out().contains("  ferry.batch.size = 64   (--conf"), r.toString());
        assertTrue(r.out().contains("IDENTICAL final result"), r.toString());
        assertTrue(r.out().contains("parallelism 2: each keyed operator receives"), r.toString());
        long[] n = r.nativeCount();
        assertEquals(1, n[0]);
        assertEquals(2, n[2], "two subtasks of the native GROUP BY opened:\n" + r);

        Cli.Result missing = Cli.run("sql", script, "--conf", dir.resolve("nowhere").toString());
        assertEquals(FerryCli.ERROR, missing.code(), missing.toString());
        assertTrue(missing.err().contains("no config.yaml"), missing.toString());
    }

    /** --require-native fails when no native operator opened at all, even without a fallback. */
    @Test
    void requireNativeWithNothingNative() throws Exception {
        String script = Cli.script(dir, "stateless.sql", SOURCE, "SELECT id * 2 FROM s WHERE id < 10;");
        Cli.Result r = Cli.run("sql", script, "--require-native");
        assertEquals(FerryCli.NOT_NATIVE, r.code(), r.toString());
        assertTrue(r.out().contains("no native operator opened in the whole run"), r.toString());
        assertTrue(r.out().contains("WARNING: no operator ran natively"), r.toString());
    }

    /**
     * Random datagen rows differ from run to run: a stateless query over them differs on both sides
     * without failing the run (only Flink's operators ran), a native GROUP BY over them fails it
     * (exit 1): compare cannot tell there whose difference it is.
     */
    @Test
    void randomSourceIsNotComparable() throws Exception {
        String script = Cli.script(dir, "random.sql",
                "CREATE TABLE r (k INT, v BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '200',"
                        + " 'fields.k.min' = '0', 'fields.k.max' = '4');",
                "SELECT k, v FROM r;",
                "SELECT k, SUM(v) FROM r GROUP BY k;");
        Cli.Result r = Cli.run("sql", script, "--mode", "compare", "--max-rows", "0");
        assertEquals(FerryCli.DIFFERENT, r.code(), r.toString());
        assertTrue(r.out().contains("query 1: DIFFERENT, as expected"), r.toString());
        assertTrue(r.out().contains("datagen table r generates random k, v"), r.toString());
        assertTrue(r.out().contains("query 2: DIFFERENT: final row"), r.toString());
        assertTrue(r.out().strip().endsWith("DIFFERENT"), r.toString());
    }

    /** A failing statement stops the run with exit code 2, naming the script's line. */
    @Test
    void failingStatement() throws Exception {
        String script = Cli.script(dir, "bad.sql", SOURCE, "", "SELECT nope FROM s;");
        Cli.Result r = Cli.run("sql", script);
        assertEquals(FerryCli.ERROR, r.code(), r.toString());
        assertTrue(r.err().contains(script + ":3: SELECT nope FROM s"), r.toString());
        assertTrue(r.err().contains("nope"), r.toString());
        assertEquals(FerryCli.ERROR, Cli.run("sql", script, "--mode", "fast").code());
        assertEquals(FerryCli.ERROR, Cli.run("sql", script, "--mode", "stock", "--require-native").code());
    }

    /** explain plans without running: candidates, reasons and how compare would compare. */
    @Test
    void explain() {
        Cli.Result r = Cli.run("explain", Cli.example("compare-timing.sql"));
        assertEquals(0, r.code(), r.toString());
        assertTrue(r.out().contains("changelog: order not deterministic (Join reads 2 inputs, interleaved by arrival)"), r.toString());
        assertTrue(r.out().contains("native: 2 of 2 candidate nodes planned native"), r.toString());
        assertFalse(r.out().contains("changelog rows"), r.toString());
    }
}
