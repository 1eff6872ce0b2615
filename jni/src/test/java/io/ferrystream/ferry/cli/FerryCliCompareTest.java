package io.ferrystream.ferry.cli;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * `ferry sql --mode compare` over the example scripts: every query, run with Flink's operators and
 * with Ferry's on an embedded MiniCluster at parallelism 1, must produce the identical changelog,
 * and every GROUP BY of the scripts must have run natively.
 */
class FerryCliCompareTest {
    static String compare(String script) throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        int code = new FerryCli(new PrintStream(bytes, true, StandardCharsets.UTF_8))
                .run(new String[] {"sql", "../examples/" + script, "--mode", "compare", "--max-rows", "1"});
        String out = bytes.toString(StandardCharsets.UTF_8);
        assertEquals(0, code, out);
        assertTrue(out.strip().endsWith("IDENTICAL"), out);
        return out;
    }

    /** Compares a script whose every GROUP BY must run natively, with this many queries. */
    static void compareAllNative(String script, int queries) throws Exception {
        String out = compare(script);
        String ferryRun = out.substring(out.indexOf("== Ferry (ferry.enabled = true)"));
        assertTrue(ferryRun.contains("ferry=[native]"), ferryRun);
        assertFalse(ferryRun.contains("not native yet"), "every GROUP BY of the script runs natively:\n" + ferryRun);
        assertEquals(queries, out.split("IDENTICAL \\(", -1).length - 1, out);
    }

    @Test
    void everyRowOfTheGroupByTable() throws Exception {
        compareAllNative("group-by-types.sql", 10);
    }

    @Test
    void groupByShapes() throws Exception {
        compareAllNative("group-by-shapes.sql", 7);
    }

    @Test
    void nexmarkExample() throws Exception {
        compare("nexmark-groupby.sql");
    }
}
