package io.ferrystream.ferry.nexmark.runner;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * CI's Nexmark smoke (part of {@code ./build.sh test}): all 23 queries on all three sides over
 * 5,000 events, 200 per second of event time (25 s of it, so windows close, sessions end and
 * auctions expire within a run), one job per side. Every query must end with the same final table
 * on every side (but q12, whose processing-time windows make its result the wall clock's: the
 * runner compares it only where a native operator ran in it), and the queries Ferry runs natively
 * today must still run a native operator, so a parity break or a silent fallback in any of them
 * fails the build. About two minutes on 2 cores.
 */
class NexmarkSmokeTest {
    /** Queries with a native operator on the Ferry side today (docs/nexmark.md#what-runs-natively). */
    private static final Set<String> NATIVE = Set.of("q4", "q5", "q6", "q8", "q9", "q13", "q15", "q16", "q17", "q18", "q19");

    @Test
    void everyQueryEndsWithTheSameTableOnEverySide(@TempDir Path out) throws Exception {
        ByteArrayOutputStream summary = new ByteArrayOutputStream();
        ByteArrayOutputStream progress = new ByteArrayOutputStream();
        int code = NexmarkRunner.run(new String[] {"--events", "5000", "--rate", "200", "--rounds", "1",
                        "--warmup-events", "0", "--parallelism", "2", "--out", out.toString()},
                new PrintStream(summary, true, StandardCharsets.UTF_8), new PrintStream(progress, true, StandardCharsets.UTF_8));
        String log = progress.toString(StandardCharsets.UTF_8) + summary.toString(StandardCharsets.UTF_8);
        assertEquals(0, code, log);

        // Check the raw output itself: one job per query and side, equal results, native where expected.
        List<String> lines = Files.readAllLines(out.resolve("runs.csv"));
        assertEquals(Report.RUNS_HEADER, lines.get(0));
        Map<String, Set<String>> results = new HashMap<>();
        Map<String, Integer> jobs = new HashMap<>();
        Set<String> ranNative = new HashSet<>();
        Set<String> withRows = new HashSet<>();
        Set<String> wallClock = new HashSet<>();
        for (String line : lines.subList(1, lines.size())) {
            String[] f = line.split(",", -1); // the fields up to native_ran hold no commas
            String query = f[0];
            if (!line.endsWith(",\"\"")) { // wall_clock, the last field, names why the result depends on it
                wallClock.add(query);
            }
            jobs.merge(query, 1, Integer::sum);
            results.computeIfAbsent(query, q -> new HashSet<>()).add(f[14] + "/" + f[15]);
            if (f[1].equals("ferry") && Integer.parseInt(f[19]) > 0) {
                ranNative.add(query);
            }
            if (!f[1].equals("ferry") && Integer.parseInt(f[19]) != 0) {
                throw new AssertionError(query + " ran a native operator on " + f[1] + "\n" + log);
            }
            if (Long.parseLong(f[15]) > 0) {
                withRows.add(query);
            }
        }
        assertEquals(QueryScript.NAMES.size(), jobs.size(), log);
        assertEquals(Set.of("q12"), wallClock, "queries whose result depends on the wall clock");
        for (String q : QueryScript.NAMES) {
            assertEquals(3, jobs.get(q), q + ": one job per side\n" + log);
            if (wallClock.contains(q)) {
                continue; // processing-time windows: compared by the runner only where a native operator ran
            }
            assertEquals(1, results.get(q).size(), q + ": results " + results.get(q) + "\n" + log);
            assertTrue(withRows.contains(q), q + " produced no rows: the smoke would compare nothing\n" + log);
        }
        assertTrue(ranNative.containsAll(NATIVE), "native on the Ferry side: " + ranNative + ", expected at least " + NATIVE);
    }
}
