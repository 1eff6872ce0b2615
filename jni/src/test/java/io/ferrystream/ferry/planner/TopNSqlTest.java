package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.topn.TopNSpec;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.math.BigDecimal;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Top-N queries in SQL on a MiniCluster of two TaskManagers, Ferry off and on: at parallelism 1
 * the changelogs equal row for row, at 4 the final tables (as multisets). One source subtask
 * feeds every run, so each partition sees its rows in one order at every parallelism. The rows
 * have ties in every sort key, NULLs, and keys whose rows enter and leave the top over and over.
 */
class TopNSqlTest {
    @RegisterExtension
    static final MiniClusterExtension CLUSTER = MiniClusters.twoByTwo();

    /** The last (lowest) Rank line of the last run's plan. */
    static String lastRank;

    /** 3,000 rows over 40 partitions. */
    static List<Row> rows() {
        List<Row> rows = new ArrayList<>();
        LocalDateTime t0 = LocalDateTime.of(2026, 1, 1, 0, 0);
        for (int i = 0; i < 3000; i++) {
            long k = i % 40;
            int g = i % 7;
            int v = (int) ((i * 7919L) % 101); // ties within a partition
            Integer n = i % 9 == 0 ? null : (int) ((i * 31L) % 23);
            String s = i % 13 == 0 ? null : "s" + ((i * 17) % 29);
            BigDecimal amt = BigDecimal.valueOf((i * 37L) % 2000 - 1000, 2);
            LocalDateTime ts = t0.plusSeconds((i * 53L) % 900); // not in order: sorted, never late for a rank
            rows.add(Row.of(k, g, v, n, s, amt, ts));
        }
        return rows;
    }

    static List<String> run(boolean ferry, int parallelism, Map<String, String> options, String query) throws Exception {
        Configuration conf = new Configuration();
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(parallelism);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        tEnv.getConfig().set(FerryOptions.BATCH_SIZE, 64);
        options.forEach((k, v) -> tEnv.getConfig().set(k, v));
        Ferry.install(tEnv);
        DataStream<Row> source = env.fromData(rows(), Types.ROW_NAMED(new String[] {"k", "g", "v", "n", "s", "amt", "ts"},
                Types.LONG, Types.INT, Types.INT, Types.INT, Types.STRING, Types.BIG_DEC, Types.LOCAL_DATE_TIME))
                .setParallelism(1);
        tEnv.createTemporaryView("T", tEnv.fromDataStream(source, Schema.newBuilder()
                .column("k", "BIGINT").column("g", "INT").column("v", "INT").column("n", "INT").column("s", "STRING")
                .column("amt", "DECIMAL(10, 2)").column("ts", "TIMESTAMP(3)")
                .columnByExpression("pt", "PROCTIME()")
                .watermark("ts", "ts - INTERVAL '1' HOUR").build()));
        String plan = tEnv.explainSql(query);
        List<String> ranks = DeduplicateExplainTest.rankLines(PlannerTests.physicalPlan(plan));
        assertTrue(!ranks.isEmpty(), plan);
        lastRank = ranks.get(ranks.size() - 1);
        int subtasks = 0;
        for (String rank : ranks) {
            assertTrue(rank.contains(ferry ? "ferry=[native]" : "ferry=[disabled"), plan);
            // a rank without partition keys runs in one subtask
            subtasks += rank.contains("partitionBy=[]") ? 1 : parallelism;
        }
        long opened = Ferry.nativeOperatorsOpened(TopNSpec.KIND);
        List<String> rows = new ArrayList<>();
        try (CloseableIterator<Row> it = tEnv.executeSql(query).collect()) {
            it.forEachRemaining(r -> rows.add(r.toString()));
        }
        assertEquals(ferry ? subtasks : 0, Ferry.nativeOperatorsOpened(TopNSpec.KIND) - opened, "native subtasks opened");
        return rows;
    }

    /** A ROW_NUMBER over {@code table} by {@code keys} and {@code order}, filtered on rn by {@code filter}. */
    static String rank(String table, String columns, String keys, String order, String filter) {
        return "SELECT " + columns + " FROM (SELECT *, ROW_NUMBER() OVER ("
                + (keys.isEmpty() ? "" : "PARTITION BY " + keys + " ") + "ORDER BY " + order + ") AS rn FROM " + table
                + ") WHERE " + filter;
    }

    /** The rows a changelog leaves, as a multiset (row → count). */
    static Map<String, Integer> finalRows(List<String> changelog) {
        Map<String, Integer> table = new TreeMap<>();
        for (String row : changelog) {
            String fields = row.substring(3, row.length() - 1);
            int delta = row.startsWith("+I") || row.startsWith("+U") ? 1 : -1;
            table.merge(fields, delta, Integer::sum);
            table.remove(fields, 0);
        }
        return table;
    }

    static void assertSame(Map<String, String> options, String query) throws Exception {
        Map<String, Integer> flinkRows = assertSameAtOne(options, query);
        assertEquals(flinkRows, finalRows(run(true, 4, options, query)), "parallelism 4, " + options + ": " + query);
    }

    /**
     * The changelogs at parallelism 1 only: for an ORDER BY with ties over an input that several
     * subtasks feed at parallelism 4, where the order of tied rows is the arrival order, Flink's
     * own result depends on it. Returns the final rows.
     */
    static Map<String, Integer> assertSameAtOne(Map<String, String> options, String query) throws Exception {
        List<String> flink = run(false, 1, options, query);
        List<String> ferry = run(true, 1, options, query);
        assertTrue(flink.size() >= 5, flink.toString());
        assertEquals(flink, ferry, options + ": " + query);
        Map<String, Integer> flinkRows = finalRows(flink);
        assertTrue(flinkRows.values().stream().allMatch(c -> c > 0), flinkRows.toString());
        return flinkRows;
    }

    /** AppendOnlyTopNFunction: the top rows by many orders, with and without the rank number, with offsets. */
    @ParameterizedTest
    @ValueSource(strings = {"v DESC", "v, s DESC", "n NULLS FIRST, v", "n DESC NULLS LAST, v DESC", "s, n", "amt DESC",
            "ts", "ts DESC, amt", "v DESC, s, ts, amt"})
    void appendOnlyTopN(String order) throws Exception {
        assertSame(Map.of(), rank("T", "k, v, n, s, amt, ts, rn", "k", order, "rn <= 3"));
        assertSame(Map.of(), rank("T", "k, v, n, s, amt, ts", "k", order, "rn <= 3"));
    }

    @Test
    void offsetsAndPartitions() throws Exception {
        assertSame(Map.of(), rank("T", "k, v, s, rn", "k", "v DESC, s", "rn BETWEEN 3 AND 5"));
        assertSame(Map.of(), rank("T", "k, v, s", "k", "v DESC, s", "rn > 2 AND rn <= 5"));
        assertSame(Map.of(), rank("T", "k, g, v, s, rn", "k, g", "v", "rn <= 2"));
        // no partition key: one subtask
        assertSame(Map.of(), rank("T", "k, v, s, rn", "", "v DESC, k", "rn <= 10"));
        assertSame(Map.of(), rank("T", "k, v, s", "", "amt", "rn BETWEEN 5 AND 8"));
    }

    /** FastTop1Function on the insert-only input. */
    @Test
    void top1() throws Exception {
        assertSame(Map.of(), rank("T", "k, v, s, amt", "k", "v DESC", "rn = 1"));
        assertSame(Map.of(), rank("T", "k, v, n, rn", "k", "n DESC NULLS FIRST", "rn = 1"));
        assertSame(Map.of(), rank("T", "k, v, s, ts", "k", "ts DESC, v", "rn <= 1"));
        assertSame(Map.of(), rank("T", "k, v, s, ts", "", "amt DESC, k", "rn = 1"));
    }

    /**
     * FastTop1Function on an upsert input (UpdateFastStrategy: a GROUP BY whose aggregate only
     * grows, the partition within its key).
     */
    @Test
    void top1OverAnUpsertInput() throws Exception {
        String agg = "(SELECT k, g, MAX(v) AS mx, COUNT(*) AS c FROM T GROUP BY k, g)";
        for (String order : List.of("mx DESC", "c DESC, mx DESC")) {
            String query = rank(agg, "k, g, mx, c", "k", order, "rn = 1");
            assertSame(Map.of(), query);
            assertTrue(lastRank.contains("strategy=[UpdateFastStrategy[0,1]]"), lastRank);
        }
    }

    /**
     * A top 1 ordered by two fields without the rank number: Flink's changelog inference takes it
     * for a deduplication and declares its output insert-only (no mini-batch), yet its
     * FastTop1Function emits +U rows whenever the top changes, and the Top-N after it
     * (AppendOnlyTopNFunction, planned for an insert-only input) takes them as rows. Ferry runs
     * both with the same parameters and emits what Flink emits.
     */
    @Test
    void aTopNAfterATop1ThatFlinkDeclaresInsertOnly() throws Exception {
        String top1 = rank("T", "k, g, v, s", "k, g", "v DESC, s", "rn = 1");
        String query = rank("(" + top1 + ")", "k, g, v, s, rn", "k", "g DESC", "rn <= 3");
        assertSame(Map.of(), query);
        assertTrue(lastRank.contains("rankEnd=1]"), lastRank);
    }

    /**
     * UpdatableTopNFunction: more than the top 1 of an upsert input (a GROUP BY whose MAX and
     * COUNT only grow, the partition within its key), by MAX or COUNT with a group key breaking
     * ties, with and without the rank number, offsets, no partition key; ties left to arrival
     * order at parallelism 1.
     */
    @Test
    void updatableTopN() throws Exception {
        String agg = "(SELECT k, g, MAX(v) AS mx, COUNT(*) AS c FROM T GROUP BY k, g)";
        for (String columns : List.of("k, g, mx, c", "k, g, mx, c, rn")) {
            for (String order : List.of("mx DESC, g", "c DESC, g DESC")) {
                assertSame(Map.of(), rank(agg, columns, "k", order, "rn <= 3"));
                assertTrue(lastRank.contains("strategy=[UpdateFastStrategy[0,1]]"), lastRank);
            }
            assertSame(Map.of(), rank(agg, columns, "", "mx DESC, k, g", "rn <= 5"));
        }
        assertSame(Map.of(), rank(agg, "k, g, mx, c, rn", "k", "c DESC, g", "rn BETWEEN 2 AND 4"));
        assertSameAtOne(Map.of(), rank(agg, "k, g, mx, c, rn", "k", "mx DESC", "rn <= 3"));
        assertSameAtOne(Map.of(), rank(agg, "k, g, mx, c", "k", "c DESC", "rn > 1 AND rn <= 3"));
        assertTrue(lastRank.contains("strategy=[UpdateFastStrategy[0,1]]"), lastRank);
    }

    /**
     * RetractableTopNFunction: an input with retractions (a GROUP BY whose SUM may fall; the same
     * with its key projected away, so that no upsert key is left and equal rows repeat), top N and
     * top 1, with the rank number and offsets, no partition key; ties at parallelism 1.
     */
    @Test
    void retractableTopN() throws Exception {
        String agg = "(SELECT k, g, SUM(v - 50) AS sm, COUNT(*) AS c FROM T GROUP BY k, g)";
        for (String columns : List.of("k, g, sm", "k, g, sm, rn")) {
            assertSame(Map.of(), rank(agg, columns, "k", "sm DESC, g", "rn <= 3"));
            assertTrue(lastRank.contains("strategy=[RetractStrategy]"), lastRank);
            assertSame(Map.of(), rank(agg, columns, "k", "sm, g", "rn = 1"));
            assertSame(Map.of(), rank(agg, columns, "", "sm DESC, k, g", "rn <= 5"));
        }
        assertSame(Map.of(), rank(agg, "k, g, sm, rn", "k", "sm DESC, g", "rn BETWEEN 2 AND 4"));
        assertSameAtOne(Map.of(), rank(agg, "k, g, sm, rn", "k", "sm DESC", "rn <= 3"));
        // no upsert key: the rows (g, sm, c) of several k repeat in a partition
        String keyless = "(SELECT g, MOD(sm, 7) AS m, c FROM " + agg + ")";
        assertSameAtOne(Map.of(), rank(keyless, "g, m, c, rn", "g", "m DESC, c", "rn <= 4"));
        assertTrue(lastRank.contains("strategy=[RetractStrategy]"), lastRank);
        assertSameAtOne(Map.of(), rank(keyless, "g, m, c", "g", "m, c DESC", "rn <= 2"));
    }

    /** AppendOnlyFirstNFunction: ORDER BY the processing time ascending, each key's first rows in arrival order. */
    @Test
    void firstN() throws Exception {
        assertSame(Map.of(), rank("T", "k, v, s, rn", "k", "pt", "rn <= 3"));
        assertSame(Map.of(), rank("T", "k, v, s", "k", "pt", "rn BETWEEN 2 AND 4"));
        assertSame(Map.of(), rank("T", "k, v, s", "", "pt", "rn <= 5"));
        assertSame(Map.of("table.exec.state.ttl", "1 h"), rank("T", "k, v, s, rn", "k", "pt", "rn <= 2"));
    }
}
