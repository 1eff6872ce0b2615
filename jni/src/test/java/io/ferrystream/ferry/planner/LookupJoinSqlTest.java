package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.lookupjoin.FerryLookupJoinOperator;
import io.ferrystream.ferry.kinds.lookupjoin.LookupJoinKind;

import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.planner.factories.TestValuesTableFactory;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Lookup joins in SQL on a MiniCluster, Ferry off vs on in one JVM, against Flink's {@code values}
 * test connector (sync and async lookup functions): INNER and LEFT, constant and composite keys,
 * pre-filter, residual condition, projection and filter on the temporal table, NULL keys, several
 * rows per key, the LOOKUP hint's retry. The probe runs at parallelism 1, so sync and ordered
 * async results are compared row for row (order included); unordered async as multisets.
 */
class LookupJoinSqlTest {
    @RegisterExtension
    static final MiniClusterExtension CLUSTER = MiniClusters.twoByTwo();

    /** Probe rows (id BIGINT, len INT, content STRING): NULL ids, repeated ids, missing ids. */
    static List<Row> probeRows() {
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < 600; i++) {
            Long id = i % 17 == 3 ? null : (long) ((i * 7) % 13);
            Integer len = i % 11 == 4 ? null : (i * 3) % 19;
            rows.add(Row.of(id, len, i % 5 == 0 ? "Julian" : "c" + (i % 9)));
        }
        return rows;
    }

    /** Dim rows (age INT, id BIGINT, name STRING): several rows per id, NULL ids and ages, ids 10-12 missing. */
    static List<Row> dimRows() {
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            Long id = i % 10 == 9 ? null : (long) (i % 10);
            rows.add(Row.of(i % 7 == 2 ? null : 10 + i, id, i % 4 == 0 ? "Julian" : "n" + i));
        }
        return rows;
    }

    static StreamTableEnvironment env(boolean ferry, boolean async, String dimOptions) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
        Ferry.install(tEnv);
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        tEnv.getConfig().set(FerryOptions.BATCH_SIZE, 64);
        tEnv.getConfig().set("table.exec.async-lookup.buffer-capacity", "7");
        tEnv.executeSql("CREATE TABLE src (id BIGINT, len INT, content STRING, proctime AS PROCTIME()) WITH ("
                + "'connector'='values', 'bounded'='true', 'data-id'='" + TestValuesTableFactory.registerData(probeRows()) + "')");
        tEnv.executeSql("CREATE TABLE user_table (age INT, id BIGINT, name STRING, a2 AS age * 2) WITH ("
                + "'connector'='values', 'bounded'='true', 'async'='" + async + "', 'data-id'='"
                + TestValuesTableFactory.registerData(dimRows()) + "'" + dimOptions + ")");
        return tEnv;
    }

    static final String[] QUERIES = {
        // INNER, one field key, several rows per key
        "SELECT T.id, T.len, T.content, D.name, D.age FROM src AS T JOIN user_table FOR SYSTEM_TIME AS OF T.proctime AS D ON T.id = D.id",
        // LEFT with a pre-filter and a residual condition
        "SELECT T.id, T.len, D.name, D.age FROM src AS T LEFT JOIN user_table FOR SYSTEM_TIME AS OF T.proctime AS D"
                + " ON T.id = D.id AND T.len > 5 AND D.age > T.len + 10",
        // composite key (two fields), LEFT
        "SELECT T.id, T.content, D.age FROM src AS T LEFT JOIN user_table FOR SYSTEM_TIME AS OF T.proctime AS D"
                + " ON T.id = D.id AND T.content = D.name",
        // constant key plus field key, INNER
        "SELECT T.id, T.len, D.age FROM src AS T JOIN user_table FOR SYSTEM_TIME AS OF T.proctime AS D"
                + " ON T.id = D.id AND D.name = 'Julian'",
        // calc on the temporal table: projection and filter, LEFT
        "SELECT T.id, D.a2, D.name FROM src AS T LEFT JOIN user_table FOR SYSTEM_TIME AS OF T.proctime AS D"
                + " ON T.id = D.id AND D.age > 15",
        // a computed probe key with NULLs (never looked up), LEFT
        "SELECT T.id, T.len, D.name FROM src AS T LEFT JOIN user_table FOR SYSTEM_TIME AS OF T.proctime AS D"
                + " ON T.len + 10 = D.age",
    };

    static List<String> run(boolean ferry, boolean async, String dimOptions, String query, String configKey, String configValue)
            throws Exception {
        StreamTableEnvironment tEnv = env(ferry, async, dimOptions);
        if (configKey != null) {
            tEnv.getConfig().set(configKey, configValue);
        }
        String plan = tEnv.explainSql(query);
        assertTrue(plan.contains(ferry ? "ferry=[native]" : "ferry=[disabled by ferry.enabled=false]"), plan);
        long opened = Ferry.nativeOperatorsOpened(FerryLookupJoinOperator.KIND);
        List<String> rows = new ArrayList<>();
        try (CloseableIterator<Row> it = tEnv.executeSql(query).collect()) {
            it.forEachRemaining(r -> rows.add(r.toString()));
        }
        assertEquals(ferry, Ferry.nativeOperatorsOpened(FerryLookupJoinOperator.KIND) > opened,
                "Ferry's lookup join operator opened");
        return rows;
    }

    @ParameterizedTest(name = "query {0}, async {1}, {2}")
    @CsvSource({
        "0,false,", "1,false,", "2,false,", "3,false,", "4,false,", "5,false,",
        "0,true,ORDERED", "1,true,ORDERED", "2,true,ORDERED", "3,true,ORDERED", "4,true,ORDERED", "5,true,ORDERED",
        "0,true,ALLOW_UNORDERED", "1,true,ALLOW_UNORDERED", "4,true,ALLOW_UNORDERED",
    })
    void sameRowsAsFlink(int query, boolean async, String outputMode) throws Exception {
        String key = outputMode == null ? null : "table.exec.async-lookup.output-mode";
        List<String> flink = run(false, async, "", QUERIES[query], key, outputMode);
        List<String> ferry = run(true, async, "", QUERIES[query], key, outputMode);
        assertFalse(flink.isEmpty());
        if ("ALLOW_UNORDERED".equals(outputMode)) {
            Collections.sort(flink);
            Collections.sort(ferry);
        }
        assertEquals(flink, ferry);
    }

    /**
     * The LOOKUP hint's lookup_miss retry (inside Flink's function: RetryableLookupFunctionDelegator),
     * against a dim table that answers nothing for the first two calls per key. Which probe row of a
     * key gets the misses depends on the order in which the key's lookups and retries reach the
     * table: a key's probe rows are 13 apart, more than the async capacity (7), so in Flink's
     * ordered queue, which keeps a completed request until the ones before it completed, a key's
     * requests never overlap; Ferry must keep the same bound (with a bound on uncompleted requests
     * only, a later row of the key could be looked up between an earlier row's attempts).
     */
    @ParameterizedTest(name = "async {0}, max-attempts {1}")
    @CsvSource({"false,1", "false,3", "true,1", "true,3"})
    void retryHint(boolean async, int maxAttempts) throws Exception {
        String query = "SELECT /*+ LOOKUP('table'='D', 'retry-predicate'='lookup_miss', 'retry-strategy'='fixed_delay',"
                + " 'fixed-delay'='1ms', 'max-attempts'='" + maxAttempts + "') */ T.id, T.len, D.name"
                + " FROM src AS T LEFT JOIN user_table FOR SYSTEM_TIME AS OF T.proctime AS D ON T.id = D.id";
        String opts = ", 'start-lookup-threshold'='2'";
        List<String> flink = run(false, async, opts, query, null, null);
        List<String> ferry = run(true, async, opts, query, null, null);
        assertEquals(flink, ferry);
        assertFalse(ferry.isEmpty());
    }

    @Test
    void killSwitchKeepsFlinksOperator() {
        StreamTableEnvironment tEnv = env(true, false, "");
        tEnv.getConfig().set(LookupJoinKind.ENABLED, false);
        String plan = tEnv.explainSql(QUERIES[0]);
        assertTrue(plan.contains("ferry=[disabled by ferry.lookup-join.enabled=false]"), plan);
    }
}
