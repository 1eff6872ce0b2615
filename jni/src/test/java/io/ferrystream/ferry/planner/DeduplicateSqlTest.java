package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.deduplicate.DeduplicateSpec;

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

import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Deduplications in SQL on a MiniCluster of two TaskManagers, Ferry off and on, on the heap and
 * RocksDB state backends (set on the job, where a job's backend is usually set): at parallelism 1
 * the changelogs equal row for row (the insert-only first row on RocksDB, which fires equal timers
 * in its own order, as multisets), at 4 the final tables. The processing-time last row over runs
 * of equal rows gives different changelogs on the two backends (the heap keeps the stored row's
 * kind), and Ferry gives each backend's. Watermarks lag the row times by an hour, so no row is
 * late and the insert-only first row goes out at the end.
 */
class DeduplicateSqlTest {
    @RegisterExtension
    static final MiniClusterExtension CLUSTER = MiniClusters.twoByTwo();

    /** 3,000 rows over 50 keys; each key's rows from one source subtask at parallelism 1 or 4. */
    static List<Row> rows() {
        List<Row> rows = new ArrayList<>();
        LocalDateTime t0 = LocalDateTime.of(2026, 1, 1, 0, 0);
        for (int i = 0; i < 3000; i++) {
            long k = i % 50;
            // runs of equal (k, era) rows, row times with ties
            rows.add(Row.of(k, i / 400, "v" + (i * 7919 % 13), t0.plusSeconds(i / 120)));
        }
        return rows;
    }

    static List<String> run(boolean ferry, String backend, int parallelism, Map<String, String> options, String query)
            throws Exception {
        Configuration conf = new Configuration();
        conf.setString("state.backend.type", backend);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(parallelism);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        tEnv.getConfig().set(FerryOptions.BATCH_SIZE, 64);
        options.forEach((k, v) -> tEnv.getConfig().set(k, v));
        Ferry.install(tEnv);
        // one source subtask: the rows of a key keep their order at every parallelism
        DataStream<Row> source = env.fromData(rows(), Types.ROW_NAMED(new String[] {"k", "era", "v", "ts"},
                Types.LONG, Types.INT, Types.STRING, Types.LOCAL_DATE_TIME)).setParallelism(1);
        tEnv.createTemporaryView("T", tEnv.fromDataStream(source, Schema.newBuilder()
                .column("k", "BIGINT").column("era", "INT").column("v", "STRING").column("ts", "TIMESTAMP(3)")
                .columnByExpression("pt", "PROCTIME()")
                .watermark("ts", "ts - INTERVAL '1' HOUR").build()));
        String plan = tEnv.explainSql(query);
        assertTrue(plan.contains(ferry ? "ferry=[native]" : "ferry=[disabled"), plan);
        long opened = Ferry.nativeOperatorsOpened(DeduplicateSpec.KIND);
        List<String> rows = new ArrayList<>();
        try (CloseableIterator<Row> it = tEnv.executeSql(query).collect()) {
            it.forEachRemaining(r -> rows.add(r.toString()));
        }
        assertEquals(ferry ? parallelism : 0, Ferry.nativeOperatorsOpened(DeduplicateSpec.KIND) - opened, "native subtasks opened");
        return rows;
    }

    static String dedup(String columns, String order) {
        return "SELECT " + columns + " FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY " + order + ") AS rn FROM T)"
                + " WHERE rn = 1";
    }

    /** The table a changelog keyed by its first field leaves. */
    static Map<String, String> finalTable(List<String> changelog) {
        Map<String, String> table = new TreeMap<>();
        for (String row : changelog) {
            String fields = row.substring(3, row.length() - 1);
            String key = fields.split(", ")[0];
            if (row.startsWith("+I") || row.startsWith("+U")) {
                table.put(key, fields);
            } else {
                table.remove(key);
            }
        }
        return table;
    }

    /** Every form at parallelism 1 (changelogs row for row) and 4 (final tables), on both backends. */
    @ParameterizedTest
    @ValueSource(strings = {"hashmap", "rocksdb"})
    void everyFormMatchesFlinks(String backend) throws Exception {
        Map<String, String> miniBatch = Map.of("table.exec.mini-batch.enabled", "true",
                "table.exec.mini-batch.allow-latency", "1 h", "table.exec.mini-batch.size", "37");
        for (Map<String, String> options : List.of(Map.<String, String>of(), miniBatch)) {
            for (String query : List.of(dedup("k, era, v, ts", "ts DESC"), dedup("k, era, v, ts", "ts"),
                    dedup("k, era", "pt DESC"), dedup("k, era, v", "pt"))) {
                List<String> flink = run(false, backend, 1, options, query);
                List<String> ferry = run(true, backend, 1, options, query);
                assertTrue(flink.size() >= 50, flink.toString());
                if (backend.equals("rocksdb") && options.isEmpty() && query.endsWith("ORDER BY ts) AS rn FROM T) WHERE rn = 1")) {
                    // the insert-only first row emits on timers, which RocksDB fires in another order
                    flink.sort(null);
                    ferry.sort(null);
                }
                assertEquals(flink, ferry, backend + " " + options + ": " + query);
                assertEquals(finalTable(flink), finalTable(run(true, backend, 4, options, query)),
                        "parallelism 4, " + backend + " " + options + ": " + query);
            }
        }
    }

    /**
     * The processing-time last row over runs of equal rows: Flink's heap backend emits an equal row
     * again right after an update, RocksDB does not; Ferry's operator, planned and run on either,
     * gives that backend's changelog.
     */
    @Test
    void equalRowsFollowTheBackend() throws Exception {
        String query = dedup("k, era", "pt DESC");
        List<String> heap = run(false, "hashmap", 1, Map.of(), query);
        List<String> rocks = run(false, "rocksdb", 1, Map.of(), query);
        assertNotEquals(heap.size(), rocks.size(), "Flink's two backends emit the same changelog here");
        assertEquals(heap, run(true, "hashmap", 1, Map.of(), query));
        assertEquals(rocks, run(true, "rocksdb", 1, Map.of(), query));
    }
}
