package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.deduplicate.FlinkDeduplicateState;
import io.ferrystream.ferry.operators.AbstractNativeOperator;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.StateRecoveryOptions;
import org.apache.flink.connector.datagen.source.DataGeneratorSource;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.v2.DiscardingSink;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.Table;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;

import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import static io.ferrystream.ferry.planner.FailoverTest.RECORDS;
import static io.ferrystream.ferry.planner.FailoverTest.ROWS;
import static io.ferrystream.ferry.planner.FailoverTest.reset;
import static io.ferrystream.ferry.planner.FailoverTest.result;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The insert-only row-time first row ({@code RowTimeDeduplicateKeepFirstRowFunction}) in a
 * MiniCluster job stopped with a savepoint mid-stream and resumed with Ferry switched (docs/state.md,
 * "The deduplication"): Ferry's operator imports the waiting rows, emitted flags and timers of
 * Flink's, and Flink's restores those Ferry's wrote, on the HashMap, RocksDB and ForSt backends; the
 * final table equals that of a run never stopped.
 */
class DeduplicateSavepointSwitchTest {
    @RegisterExtension
    static final MiniClusterExtension CLUSTER = MiniClusters.twoByTwo();

    /**
     * Each key's first row by row time, aggregated per k % 7. Rows are in time order per source
     * subtask and the watermark lags a second, so no row is late: the result does not depend on
     * timing.
     */
    static final String QUERY = "SELECT g, COUNT(*) AS n, SUM(v) AS s, MAX(v) AS m, MIN(ms) AS lo, MAX(ms) AS hi"
            + " FROM (SELECT k % 7 AS g, v, ms FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY k ORDER BY rt) AS rn FROM T)"
            + " WHERE rn = 1) GROUP BY g";

    static FailoverTest.Job job(boolean ferry, double rowsPerSecond, Configuration extra) {
        Configuration conf = new Configuration();
        conf.set(CheckpointingOptions.CHECKPOINTING_INTERVAL, Duration.ofMillis(100));
        conf.addAll(extra);
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment(conf);
        env.setParallelism(2);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
        tEnv.getConfig().set("table.exec.resource.default-parallelism", "2");
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        tEnv.getConfig().set(FerryOptions.BATCH_SIZE, 100);
        Ferry.install(tEnv);
        DataGeneratorSource<Row> source = new DataGeneratorSource<>(
                IntervalJoinSavepointSwitchTest::row,
                ROWS,
                rowsPerSecond > 0 ? RateLimiterStrategy.perSecond(rowsPerSecond) : RateLimiterStrategy.noOp(),
                Types.ROW_NAMED(new String[] {"k", "v", "rt"}, Types.LONG, Types.LONG, Types.LOCAL_DATE_TIME));
        DataStream<Row> rows = env.fromSource(source, WatermarkStrategy.noWatermarks(), "sequence").uid("sequence")
                .map(new FailoverTest.Gate()).uid("gate")
                .returns(Types.ROW_NAMED(new String[] {"k", "v", "rt"}, Types.LONG, Types.LONG, Types.LOCAL_DATE_TIME));
        tEnv.createTemporaryView("T", tEnv.fromDataStream(rows, Schema.newBuilder()
                .column("k", "BIGINT").column("v", "BIGINT").column("rt", "TIMESTAMP(3)")
                .columnByExpression("ms", "EXTRACT(MILLISECOND FROM rt) + 1000 * EXTRACT(SECOND FROM rt)"
                        + " + 60000 * EXTRACT(MINUTE FROM rt)")
                .watermark("rt", "rt - INTERVAL '1' SECOND").build()));
        Table result = tEnv.sqlQuery(QUERY);
        String plan = result.explain();
        tEnv.toChangelogStream(result)
                .keyBy(r -> String.valueOf(r.getField(0)))
                .process(new FailoverTest.Materialize(Long.MAX_VALUE)).uid("materialize")
                .sinkTo(new DiscardingSink<>()).uid("discard");
        return new FailoverTest.Job(env, plan);
    }

    static List<String> run(boolean ferry, Configuration conf) throws Exception {
        reset(false);
        job(ferry, 0, conf).env.execute(ferry ? "Ferry" : "Flink");
        assertEquals(ROWS, RECORDS.get());
        return result();
    }

    /** Runs until a third of the rows went through, then stops with a savepoint. */
    static String savepointMidStream(boolean ferry, Configuration conf, Path dir) throws Exception {
        FailoverTest.Job job = job(ferry, 10_000, conf);
        assertTrue(job.plan.contains("outputInsertOnly=[true]"), job.plan);
        assertEquals(ferry, !job.plan.contains("ferry=[disabled"), job.plan);
        return FailoverTest.savepointMidStream(job, conf, dir, Duration.ofSeconds(60));
    }

    static List<String> resume(boolean ferry, Configuration conf, String savepoint) throws Exception {
        reset(false);
        Configuration c = new Configuration(conf);
        c.set(StateRecoveryOptions.SAVEPOINT_PATH, savepoint);
        FailoverTest.Job job = job(ferry, 0, c);
        job.env.execute(ferry ? "Ferry on" : "Ferry off");
        return result();
    }

    @ParameterizedTest
    @ValueSource(strings = {"hashmap", "rocksdb", "forst"})
    void switchingAcrossASavepoint(String backend, @TempDir Path dir) throws Exception {
        Configuration conf = SavepointSwitchTest.backend(backend);
        List<String> want = run(false, conf);
        assertTrue(want.size() >= 7, "one row per k % 7: " + want);

        long imported = FlinkDeduplicateState.importedKeys();
        String stock = savepointMidStream(false, conf, dir.resolve("stock"));
        assertEquals(want, resume(true, conf, stock), backend + ": Flink's savepoint resumed with Ferry on");
        assertTrue(FlinkDeduplicateState.importedKeys() > imported, backend + ": Ferry imported Flink's deduplicate state");

        long opened = AbstractNativeOperator.openedCount();
        String ferry = savepointMidStream(true, conf, dir.resolve("ferry"));
        assertTrue(AbstractNativeOperator.openedCount() > opened, backend + ": Ferry's operators ran before the savepoint");
        assertEquals(want, resume(false, conf, ferry), backend + ": Ferry's savepoint resumed with Ferry off");
    }
}
