package io.ferrystream.ferry.bench;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.planner.Ferry;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.ExplainDetail;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.test.util.MiniClusterWithClientResource;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * SQL end to end on a MiniCluster (1 TaskManager, 1 slot, parallelism 1, mini-batch off unless
 * {@link #miniBatchSize} is set, heap state backend): a bounded {@code datagen} sequence with
 * derived bid columns, a GROUP BY, a {@link ChecksumSink}; Ferry off, Ferry on, Ferry on with the
 * columnar exchange off, and a baseline without the aggregation, interleaved. Every run of a
 * query with the aggregation, on any side, must end with the same checksum of its final table
 * (the baseline's runs with one of their own), or the benchmark fails. Rows/s is input rows over
 * the job's net runtime (JobMaster: from submission to the end of the job, deployment included).
 */
final class SqlBench {
    private SqlBench() {}

    /**
     * A benchmark query: its sink's columns and the SELECT that fills it, how many GroupAggregates
     * it plans, and its baseline: the same source and projections without the aggregation (one
     * chained task, no exchange), the ceiling the rest of the pipeline puts on the job.
     */
    record Query(String name, String columns, String select, int groupAggregates, String baseColumns, String baseSelect) {}

    /** How a query runs: Flink's aggregates, Ferry's, or the baseline without aggregates. */
    enum Mode {
        STOCK("stock", false),
        FERRY("ferry", true),
        /**
         * Ferry on with Flink's row exchange between native stages (ferry.exchange.columnar.enabled
         * false). A single-phase plan has no exchange between two native stages for the columnar
         * exchange to carry, so there it is Ferry's plan again: a second run of the same job.
         */
        FERRY_ROWS("ferry, row exchange", true),
        BASELINE("no aggregate", false);

        final String label;
        final boolean ferry;

        Mode(String label, boolean ferry) {
            this.label = label;
            this.ferry = ferry;
        }
    }

    /**
     * Nexmark q17: per auction and day, COUNT(*), three {@code COUNT(*) FILTER (WHERE ...)} price
     * ranks, MIN, MAX, AVG, SUM of the price.
     */
    static final Query Q17 = new Query(
            "q17",
            "auction BIGINT, `day` STRING, total_bids BIGINT, rank1_bids BIGINT, rank2_bids BIGINT, rank3_bids BIGINT,"
                    + " min_price BIGINT, max_price BIGINT, avg_price BIGINT, sum_price BIGINT",
            "SELECT auction, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd') AS `day`, COUNT(*) AS total_bids,"
                    + " COUNT(*) FILTER (WHERE price < 10000) AS rank1_bids,"
                    + " COUNT(*) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bids,"
                    + " COUNT(*) FILTER (WHERE price >= 1000000) AS rank3_bids,"
                    + " MIN(price) AS min_price, MAX(price) AS max_price, AVG(price) AS avg_price, SUM(price) AS sum_price"
                    + " FROM bid GROUP BY auction, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd')",
            1,
            "auction BIGINT, `day` STRING, price BIGINT, r1 BOOLEAN, r2 BOOLEAN, r3 BOOLEAN",
            "SELECT auction, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd'), price, price < 10000,"
                    + " price >= 10000 AND price < 1000000, price >= 1000000 FROM bid");

    /**
     * Nexmark q4's aggregation stages over one generated table instead of the auction-bid join:
     * the highest price per auction and category (a MAX that updates), then the average of those
     * per category (an AVG over a retracting input).
     */
    static final Query Q4 = new Query(
            "q4 aggregation stages",
            "category BIGINT, avg_final BIGINT",
            "SELECT category, AVG(final) FROM"
                    + " (SELECT id, category, MAX(price) AS final FROM bid GROUP BY id, category) GROUP BY category",
            2,
            "id BIGINT, category BIGINT, price BIGINT",
            "SELECT id, category, price FROM bid");

    /**
     * The source: {@code seq} 0..rows-1 from datagen's sequence generator, and a view deriving
     * Nexmark-shaped bid columns from it with multiplicative hashes (deterministic): half of the
     * bids on 16 hot auctions, the rest uniform over {@code keys} auctions; price uniform in
     * [100, 10^7); event time 200 ms apart from 2026-01-01 (rows * 0.2 s spans several days);
     * category = 10 + auction mod 5 (Nexmark's five categories), id = auction; bidder uniform over
     * {@code keys} bidders, channel one of four names by bidder.
     */
    static void createSource(StreamTableEnvironment tEnv, long rows, int keys) {
        tEnv.executeSql("CREATE TEMPORARY TABLE gen (seq BIGINT) WITH ('connector' = 'datagen',"
                + " 'fields.seq.kind' = 'sequence', 'fields.seq.start' = '0', 'fields.seq.end' = '" + (rows - 1) + "',"
                + " 'rows-per-second' = '1000000000')");
        long hotStride = Math.max(1, keys / 16);
        tEnv.executeSql("CREATE TEMPORARY VIEW hashed AS SELECT seq,"
                + " MOD(seq * 2654435761, 4294967291) AS h1, MOD(seq * 40503 + 12345, 2147483647) AS h2,"
                + " MOD(seq * 1103515245 + 12345, 2147483629) AS h3 FROM gen");
        tEnv.executeSql("CREATE TEMPORARY VIEW bid AS SELECT auction, auction AS id, 10 + MOD(auction, 5) AS category,"
                + " price, `dateTime`, bidder, CASE MOD(bidder, 4) WHEN 0 THEN 'Google' WHEN 1 THEN 'Facebook'"
                + " WHEN 2 THEN 'Baidu' ELSE 'Apple' END AS channel FROM (SELECT"
                + " CASE WHEN MOD(h1, 2) = 0 THEN 1000 + MOD(h1 / 2, 16) * " + hotStride
                + " ELSE 1000 + MOD(h1 / 2, " + keys + ") END AS auction,"
                + " 100 + MOD(h2, 9999900) AS price,"
                + " 1000 + MOD(h3, " + keys + ") AS bidder,"
                + " CAST(TO_TIMESTAMP_LTZ(1767225600000 + seq * 200, 3) AS TIMESTAMP(3)) AS `dateTime`"
                + " FROM hashed)");
    }

    /**
     * Rows per mini-batch bundle ({@code -sql-minibatch}); 0 runs with mini-batch off. With it on,
     * the aggregation stays single-phase (table.optimizer.agg-phase-strategy ONE_PHASE) and the
     * bundle closes on size or after a latency of 1 s.
     */
    static int miniBatchSize = 0;

    static StreamTableEnvironment tableEnv(Mode mode, long rows, int keys) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
        tEnv.getConfig().set("table.exec.resource.default-parallelism", "1");
        tEnv.getConfig().set("table.exec.mini-batch.enabled", Boolean.toString(miniBatchSize > 0));
        if (miniBatchSize > 0) {
            tEnv.getConfig().set("table.exec.mini-batch.size", Integer.toString(miniBatchSize));
            tEnv.getConfig().set("table.exec.mini-batch.allow-latency", "1 s");
            tEnv.getConfig().set("table.optimizer.agg-phase-strategy", "ONE_PHASE");
        }
        tEnv.getConfig().set("table.local-time-zone", "UTC");
        tEnv.getConfig().set(FerryOptions.ENABLED, mode.ferry);
        tEnv.getConfig().set(FerryOptions.EXCHANGE_COLUMNAR, mode != Mode.FERRY_ROWS);
        tEnv.getConfig().set(FerryOptions.BATCH_SIZE, 1024);
        Ferry.install(tEnv);
        createSource(tEnv, rows, keys);
        return tEnv;
    }

    /**
     * Checks the plan: with Ferry on every GroupAggregate of the optimized plan is
     * {@code ferry=[native]} and the job graph runs FerryGroupAggregate operators; with Ferry off
     * none is. Returns the GroupAggregate lines of the optimized physical plan.
     */
    static List<String> checkPlan(StreamTableEnvironment tEnv, String insert, int groupAggregates, boolean ferry) {
        String plan = tEnv.explainSql(insert, ExplainDetail.JSON_EXECUTION_PLAN);
        int at = plan.indexOf("== Optimized Physical Plan ==");
        int end = plan.indexOf("== Optimized Execution Plan ==");
        if (at < 0 || end < 0) {
            throw new IllegalStateException("unexpected EXPLAIN output:\n" + plan);
        }
        List<String> aggs = new ArrayList<>();
        for (String line : plan.substring(at, end).split("\n")) {
            if (line.contains("GroupAggregate(")) {
                aggs.add(line.trim());
                if (line.contains("ferry=[native]") != ferry) {
                    throw new IllegalStateException("ferry=" + ferry + " but the plan has " + line.trim() + "\n" + plan);
                }
            }
        }
        if (aggs.size() != groupAggregates) {
            throw new IllegalStateException(groupAggregates + " GroupAggregates expected:\n" + plan);
        }
        int natives = plan.split("FerryGroupAggregate", -1).length - 1;
        if (ferry ? natives == 0 : natives != 0) {
            throw new IllegalStateException("ferry=" + ferry + " but the job graph has " + natives
                    + " FerryGroupAggregate mentions:\n" + plan);
        }
        return aggs;
    }

    /** One job run, with the checksum and changelog row count of its sink ({@link ChecksumSink}). */
    record Run(String query, Mode mode, long rows, long netMillis, long clientMillis, long checksum, long changelogRows) {
        double rowsPerSecond() {
            return rows * 1000.0 / netMillis;
        }
    }

    static int jobs;

    static Run runOnce(Query q, Mode mode, long rows, int keys, boolean printPlan) throws Exception {
        boolean base = mode == Mode.BASELINE;
        StreamTableEnvironment tEnv = tableEnv(mode, rows, keys);
        String sink = "sink_" + (++jobs);
        tEnv.executeSql("CREATE TEMPORARY TABLE " + sink + " (" + (base ? q.baseColumns() : q.columns())
                + ") WITH ('connector' = 'ferry-checksum', 'name' = '" + sink + "')");
        String insert = "INSERT INTO " + sink + " " + (base ? q.baseSelect() : q.select());
        List<String> aggs = checkPlan(tEnv, insert, base ? 0 : q.groupAggregates(), mode.ferry);
        if (printPlan) {
            for (String a : aggs) {
                Bench.log("  %s: %s", mode.label, a);
            }
        }
        long t0 = System.nanoTime();
        TableResult result = tEnv.executeSql(insert);
        JobExecutionResult job = result.getJobClient().orElseThrow().getJobExecutionResult().get();
        long t1 = System.nanoTime();
        long[] sum = ChecksumSink.take(sink);
        return new Run(q.name(), mode, rows, job.getNetRuntime(TimeUnit.MILLISECONDS), (t1 - t0) / 1_000_000, sum[0], sum[1]);
    }

    /** Results of one query: the Ferry-off and Ferry-on runs after warm-up. */
    record Result(Query query, long rows, int keys, List<Run> runs) {
        double[] rates(Mode mode) {
            return runs.stream().filter(r -> r.mode() == mode).mapToDouble(Run::rowsPerSecond).toArray();
        }

        double median(Mode mode) {
            return Stats.median(rates(mode));
        }

        /** The checksum every run with the aggregation ended with ({@link #checkResults}). */
        long checksum() {
            return runs.stream().filter(r -> r.mode() != Mode.BASELINE).findFirst().map(Run::checksum).orElse(0L);
        }
    }

    static MiniClusterWithClientResource startCluster() throws Exception {
        MiniClusterWithClientResource cluster = new MiniClusterWithClientResource(
                new MiniClusterResourceConfiguration.Builder()
                        .setNumberTaskManagers(1)
                        .setNumberSlotsPerTaskManager(1)
                        .build());
        cluster.before(); // also makes it the context environment
        return cluster;
    }

    static Result run(Query q, long rows, int keys, int reps, boolean ferryOnly) throws Exception {
        Mode[] modes = ferryOnly ? new Mode[] {Mode.FERRY} : Mode.values();
        Bench.log("%s: %s", q.name(), q.select());
        // Warm-up: one small job each way (class loading, JIT) before the timed runs.
        List<Run> warmups = new ArrayList<>();
        for (Mode mode : modes) {
            Run w = runOnce(q, mode, Math.max(1, rows / 4), keys, true);
            warmups.add(w);
            Bench.log("warm-up %-12s %s rows/s (%d ms), checksum %016x", mode.label, Bench.rate(w.rowsPerSecond()),
                    w.netMillis(), w.checksum());
        }
        List<Run> runs = new ArrayList<>();
        for (int rep = 1; rep <= reps; rep++) {
            for (Mode mode : modes) {
                System.gc();
                Run r = runOnce(q, mode, rows, keys, false);
                runs.add(r);
                Bench.log(String.format(Locale.ROOT, "rep %d %-12s %s rows/s (net %d ms, client %d ms), checksum %016x,"
                                + " %d changelog rows", rep, mode.label, Bench.rate(r.rowsPerSecond()), r.netMillis(),
                        r.clientMillis(), r.checksum(), r.changelogRows()));
            }
        }
        checkResults(q, warmups);
        checkResults(q, runs);
        return new Result(q, rows, keys, runs);
    }

    /** Fails unless every run with the aggregation ended with one checksum, and every baseline run with one. */
    static void checkResults(Query q, List<Run> runs) {
        Long aggregated = null;
        Long baseline = null;
        for (Run r : runs) {
            boolean base = r.mode() == Mode.BASELINE;
            Long want = base ? baseline : aggregated;
            if (want == null) {
                if (base) {
                    baseline = r.checksum();
                } else {
                    aggregated = r.checksum();
                }
            } else if (want != r.checksum()) {
                throw new IllegalStateException(String.format(Locale.ROOT, "%s: the %s run's result differs (checksum"
                        + " %016x, an earlier run's %016x)", q.name(), r.mode().label, r.checksum(), want));
            }
        }
    }
}
