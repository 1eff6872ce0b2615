package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.apache.flink.util.CloseableIterator;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The same queries on a MiniCluster of two TaskManagers at parallelism 4, with Ferry off and on.
 * The source is a single non-parallel stream feeding the aggregate's hash exchange directly, so
 * each key's rows reach its aggregate subtask in a fixed order: the changelog of every key must be
 * identical, and so must the final result. (Across keys the interleaving of the four subtasks is
 * not deterministic, in Flink as in Ferry.)
 */
class ParallelSqlDifferentialTest {
    @RegisterExtension
    static final MiniClusterExtension CLUSTER = MiniClusters.twoByTwo();

    static final int ROWS = 20000;

    /** Deterministic rows (k BIGINT with NULLs, i INT, b BIGINT with NULLs, d DOUBLE). */
    static List<Row> rows() {
        List<Row> rows = new ArrayList<>();
        for (long id = 0; id < ROWS; id++) {
            rows.add(Row.of(
                    id % 29 == 3 ? null : (id * 7919) % 61,
                    (int) ((id * 31) % 20011) - 10000,
                    id % 7 == 1 ? null : id * 1000003,
                    ((id * 17) % 10007) / 3.0));
        }
        return rows;
    }

    static List<Row> run(boolean ferry, String query) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(4);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
        tEnv.getConfig().set("table.exec.resource.default-parallelism", "4");
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        tEnv.getConfig().set(FerryOptions.BATCH_SIZE, 100);
        Ferry.install(tEnv);
        DataStream<Row> source =
                env.fromData(rows(), Types.ROW_NAMED(new String[] {"k", "i", "b", "d"}, Types.LONG, Types.INT, Types.LONG, Types.DOUBLE));
        tEnv.createTemporaryView("T", tEnv.fromDataStream(source));
        String plan = tEnv.explainSql(query);
        assertTrue(plan.contains(ferry ? "ferry=[native]" : "ferry=[disabled"), plan);
        List<Row> rows = new ArrayList<>();
        try (CloseableIterator<Row> it = tEnv.executeSql(query).collect()) {
            it.forEachRemaining(rows::add);
        }
        return rows;
    }

    /** Each key's changelog, in arrival order; the key is the first field. */
    static Map<String, List<String>> perKey(List<Row> rows) {
        Map<String, List<String>> byKey = new TreeMap<>();
        for (Row r : rows) {
            byKey.computeIfAbsent(String.valueOf(r.getField(0)), k -> new ArrayList<>()).add(r.toString());
        }
        return byKey;
    }

    /** The table a changelog materializes to: each row with its multiplicity. */
    static Map<String, Integer> materialize(List<Row> rows) {
        Map<String, Integer> table = new TreeMap<>();
        for (Row r : rows) {
            Row v = Row.copy(r);
            boolean add = v.getKind() == RowKind.INSERT || v.getKind() == RowKind.UPDATE_AFTER;
            v.setKind(RowKind.INSERT);
            table.merge(v.toString(), add ? 1 : -1, Integer::sum);
            table.remove(v.toString(), 0);
        }
        return table;
    }

    @Test
    void perKeyChangelogsAndFinalResultsMatch() throws Exception {
        String query = "SELECT k, COUNT(*), COUNT(b), SUM(i), MIN(b), MAX(d), AVG(i), AVG(d) FROM T GROUP BY k";
        List<Row> stock = run(false, query);
        List<Row> ferry = run(true, query);
        // Every row updates its key (COUNT(*) changes): +I for the 62 first rows, -U/+U for the rest.
        assertEquals(2 * 20000 - 62, stock.size());
        Map<String, List<String>> want = perKey(stock);
        Map<String, List<String>> got = perKey(ferry);
        assertEquals(want.keySet(), got.keySet());
        for (String key : want.keySet()) {
            List<String> w = want.get(key);
            List<String> g = got.get(key);
            for (int i = 0; i < Math.min(w.size(), g.size()); i++) {
                assertEquals(w.get(i), g.get(i), "key " + key + ": changelog row " + i);
            }
            assertEquals(w.size(), g.size(), "key " + key + ": changelog length");
        }
        assertEquals(materialize(stock), materialize(ferry));
        assertEquals(62, materialize(ferry).size(), "61 keys and the NULL key");
    }

    @Test
    void retractingInputFinalResultsMatch() throws Exception {
        String query =
                "SELECT c, COUNT(*), SUM(top), MIN(top), MAX(top), AVG(top) FROM"
                        + " (SELECT k, MAX(i) AS top, COUNT(*) / 50 AS c FROM T GROUP BY k) GROUP BY c";
        List<Row> stock = run(false, query);
        List<Row> ferry = run(true, query);
        assertTrue(stock.stream().anyMatch(r -> r.getKind() == RowKind.UPDATE_BEFORE || r.getKind() == RowKind.DELETE));
        assertEquals(materialize(stock), materialize(ferry));
    }
}
