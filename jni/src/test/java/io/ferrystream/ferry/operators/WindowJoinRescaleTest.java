package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.kinds.windowjoin.FerryWindowJoinOperator;
import io.ferrystream.ferry.kinds.windowjoin.WindowJoinSpec;
import io.ferrystream.ferry.operators.IntervalJoinDifferentialTest.Planned;
import io.ferrystream.ferry.operators.IntervalJoinDifferentialTest.Step;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Rescaling the window join (as {@link IntervalJoinRescaleTest} does for the interval join):
 * Flink's operator and Ferry's run the same stream (20 % NULL keys) at parallelism {@code from},
 * are snapshotted mid-stream with open windows and pending timers, their states merged and cut
 * for parallelism {@code to}, restored and run on. Every subtask's output, rows and watermarks,
 * before and after the rescale, must be identical, row for row.
 */
class WindowJoinRescaleTest {
    @ParameterizedTest(name = "{0} {1} -> {2}")
    @CsvSource({"FULL, 1, 2", "FULL, 2, 1", "LEFT, 2, 3", "ANTI, 3, 2", "INNER, 4, 1"})
    void rescale(String joinType, int from, int to) throws Exception {
        String query = WindowJoinDifferentialTest.query(joinType, WindowJoinDifferentialTest.HOP, "", false);
        Planned stock = WindowJoinDifferentialTest.plan(query, false, 1, null);
        Planned ferry = WindowJoinDifferentialTest.plan(query, true, 1, null);
        WindowJoinSpec spec = ((FerryWindowJoinOperator) ferry.operator()).spec();
        int[] ends = {spec.leftWindowEndIndex(), spec.rightWindowEndIndex()};
        List<Step> steps = new ArrayList<>(WindowJoinDifferentialTest.steps(100L * from + to, 1500, stock, ends, 0, 0));
        steps.removeIf(s -> s.kind() == 's');
        List<Step> before = steps.subList(0, steps.size() / 2);
        List<Step> after = steps.subList(steps.size() / 2, steps.size());
        List<List<String>> want = IntervalJoinRescaleTest.run(stock, before, after, from, to);
        List<List<String>> got = IntervalJoinRescaleTest.run(ferry, before, after, from, to);
        assertEquals(want.size(), got.size());
        int rows = 0;
        for (int s = 0; s < want.size(); s++) {
            List<String> w = want.get(s);
            List<String> g = got.get(s);
            for (int i = 0; i < Math.min(w.size(), g.size()); i++) {
                assertEquals(w.get(i), g.get(i), from + " -> " + to + ", output " + s + ", row " + i);
            }
            assertEquals(w.size(), g.size(), from + " -> " + to + ", output " + s + ": length");
            rows += w.stream().filter(r -> r.startsWith("+I")).count();
        }
        assertTrue(rows > 100, "too little output to say anything: " + rows);
    }
}
