package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.intervaljoin.FlinkIntervalJoinState;
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
import java.time.LocalDateTime;
import java.util.List;

import static io.ferrystream.ferry.planner.FailoverTest.RECORDS;
import static io.ferrystream.ferry.planner.FailoverTest.ROWS;
import static io.ferrystream.ferry.planner.FailoverTest.reset;
import static io.ferrystream.ferry.planner.FailoverTest.result;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An event-time interval join in a MiniCluster job stopped with a savepoint mid-stream and resumed
 * with Ferry switched (docs/state.md, "The interval join"): Ferry's operator imports the caches,
 * cleanup times and timers of Flink's, and Flink's restores those Ferry's wrote, on the HashMap,
 * RocksDB and ForSt backends; the final table equals that of a run never stopped.
 */
class IntervalJoinSavepointSwitchTest {
    @RegisterExtension
    static final MiniClusterExtension CLUSTER = MiniClusters.twoByTwo();

    /**
     * A FULL join of the stream with itself within [-2 s, +1 s] (both sides padded, so NULL keys
     * are kept on both and a savepoint of Ferry's writes them), aggregated per k % 7. Rows are in
     * time order per source subtask and the watermark lags a second, so no row is late: the result
     * does not depend on timing.
     */
    static final String QUERY = "SELECT g, COUNT(*) AS n, SUM(lv) AS sl, SUM(rv) AS sr, COUNT(lv) AS nl, COUNT(rv) AS nr"
            + " FROM (SELECT COALESCE(L.k, R.k) % 7 AS g, L.v AS lv, R.v AS rv FROM T L FULL JOIN T R"
            + " ON L.k = R.k AND R.rt BETWEEN L.rt - INTERVAL '2' SECOND AND L.rt + INTERVAL '1' SECOND) GROUP BY g";

    static final LocalDateTime EPOCH = LocalDateTime.of(2026, 1, 1, 0, 0);

    /** FailoverTest's rows with a row time: one millisecond per sequence number. */
    static Row row(long id) {
        Row r = FailoverTest.row(id);
        return Row.of(r.getField(0), r.getField(1), EPOCH.plusNanos(id * 1_000_000L));
    }

    /**
     * The end of event time as the interval join forwards it: the final watermark less the join's
     * watermark delay.
     */
    static final long END_OF_TIME = Long.MAX_VALUE - 3_600_000;

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
                .watermark("rt", "rt - INTERVAL '1' SECOND").build()));
        Table result = tEnv.sqlQuery(QUERY);
        String plan = result.explain();
        tEnv.toChangelogStream(result)
                .keyBy(r -> String.valueOf(r.getField(0)))
                .process(new FailoverTest.Materialize(END_OF_TIME)).uid("materialize")
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
        assertTrue(job.plan.contains("IntervalJoin"), job.plan);
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

        long imported = FlinkIntervalJoinState.importedKeys();
        String stock = savepointMidStream(false, conf, dir.resolve("stock"));
        assertEquals(want, resume(true, conf, stock), backend + ": Flink's savepoint resumed with Ferry on");
        assertTrue(FlinkIntervalJoinState.importedKeys() > imported, backend + ": Ferry imported Flink's interval join state");

        long opened = AbstractNativeOperator.openedCount();
        String ferry = savepointMidStream(true, conf, dir.resolve("ferry"));
        assertTrue(AbstractNativeOperator.openedCount() > opened, backend + ": Ferry's operators ran before the savepoint");
        assertEquals(want, resume(false, conf, ferry), backend + ": Ferry's savepoint resumed with Ferry off");
    }
}
