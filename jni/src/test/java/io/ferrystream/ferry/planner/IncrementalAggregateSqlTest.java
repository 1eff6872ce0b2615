package io.ferrystream.ferry.planner;

import static io.ferrystream.ferry.planner.TwoPhaseSqlDifferentialTest.assertSameResults;
import static io.ferrystream.ferry.planner.TwoPhaseSqlDifferentialTest.run;
import static org.junit.jupiter.api.Assertions.assertEquals;

import io.ferrystream.ferry.operators.IncrementalGroupAggregateSpec;

import org.apache.flink.test.junit5.MiniClusterExtension;

import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.List;
import java.util.Map;

/**
 * Split DISTINCT under mini-batch ({@code table.optimizer.distinct-agg.split.enabled}) on a
 * MiniCluster, Ferry off against Ferry on: Flink plans LocalGroupAggregate → IncrementalGroupAggregate
 * → GlobalGroupAggregate, all three run natively, and the results equal Flink's (row for row at
 * parallelism 1, as final results at 3: {@link TwoPhaseSqlDifferentialTest}).
 */
class IncrementalAggregateSqlTest {
    @RegisterExtension
    static final MiniClusterExtension CLUSTER = MiniClusters.twoByTwo();

    static final Map<String, String> SPLIT = Map.of("table.optimizer.distinct-agg.split.enabled", "true");

    /** Two DISTINCT columns (one with FILTER), plain calls beside them, insert-only input. */
    static final String DISTINCTS =
            "SELECT k, COUNT(DISTINCT i), COUNT(DISTINCT s) FILTER (WHERE i > 0), COUNT(DISTINCT s), SUM(DISTINCT b),"
                    + " COUNT(*), MAX(d), SUM(b) FROM V GROUP BY k";

    @ParameterizedTest(name = "{0}, parallelism {1}")
    @CsvSource({"AUTO, 1", "TWO_PHASE, 1", "AUTO, 3"})
    void splitDistinct(String strategy, int parallelism) throws Exception {
        TwoPhaseSqlDifferentialTest.Run stock = run(false, DISTINCTS, strategy, parallelism, SPLIT);
        long before = Ferry.nativeOperatorsOpened(IncrementalGroupAggregateSpec.KIND);
        TwoPhaseSqlDifferentialTest.Run ferry = run(true, DISTINCTS, strategy, parallelism, SPLIT);
        long opened = Ferry.nativeOperatorsOpened(IncrementalGroupAggregateSpec.KIND) - before;
        assertEquals(List.of("Global: native", "Incremental: native", "Local: native"), ferry.terms());
        assertEquals(parallelism, opened, "native incremental aggregates opened");
        assertEquals(parallelism, ferry.localsOpened(), "native local aggregates opened");
        assertEquals(parallelism, ferry.globalsOpened(), "native global aggregates opened");
        assertSameResults(stock, ferry, parallelism, DISTINCTS);
    }
}
