package io.ferrystream.ferry.bench;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.planner.Ferry;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.test.util.MiniClusterWithClientResource;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * Whole SQL jobs under Nexmark's official mini-batch configuration (bundles of 50,000 rows or 2 s,
 * {@code table.optimizer.agg-phase-strategy} AUTO, split distinct aggregation on), at parallelism
 * 2 so the exchanges between the aggregation stages cross subtasks: Ferry off and Ferry on,
 * interleaved after one warm-up job each. Every job writes into {@link ChecksumSink}; every run of
 * a query, either way, must end with the same checksum of its final result, or the benchmark
 * fails. Rows/s is input rows over the job's net runtime. The source is {@link SqlBench}'s.
 */
final class TwoPhaseSqlBench {
    private TwoPhaseSqlBench() {}

    static final int PARALLELISM = 2;

    /** A query: its sink's columns and the SELECT that fills it. */
    record Query(String name, String columns, String select) {
        String sinkDdl(String sink) {
            return "CREATE TEMPORARY TABLE " + sink + " (" + columns + ") WITH ('connector' = 'ferry-checksum', 'name' = '"
                    + sink + "')";
        }
    }

    private static final String RANKS = " COUNT(*) FILTER (WHERE price < 10000),"
            + " COUNT(*) FILTER (WHERE price >= 10000 AND price < 1000000), COUNT(*) FILTER (WHERE price >= 1000000)";

    private static String distinctRanks(String column) {
        return " COUNT(DISTINCT " + column + "), COUNT(DISTINCT " + column + ") FILTER (WHERE price < 10000),"
                + " COUNT(DISTINCT " + column + ") FILTER (WHERE price >= 10000 AND price < 1000000),"
                + " COUNT(DISTINCT " + column + ") FILTER (WHERE price >= 1000000)";
    }

    static final Query Q17 = new Query("q17",
            "auction BIGINT, `day` STRING, total_bids BIGINT, rank1_bids BIGINT, rank2_bids BIGINT, rank3_bids BIGINT,"
                    + " min_price BIGINT, max_price BIGINT, avg_price BIGINT, sum_price BIGINT",
            "SELECT auction, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd'), COUNT(*)," + RANKS
                    + ", MIN(price), MAX(price), AVG(price), SUM(price)"
                    + " FROM bid GROUP BY auction, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd')");

    static final Query Q4 = new Query("q4 aggregation stages", "category BIGINT, avg_final BIGINT",
            "SELECT category, AVG(final) FROM (SELECT id, category, MAX(price) AS final FROM bid GROUP BY id, category)"
                    + " GROUP BY category");

    static final Query Q15 = new Query("q15",
            "`day` STRING, total_bids BIGINT, rank1_bids BIGINT, rank2_bids BIGINT, rank3_bids BIGINT,"
                    + " total_bidders BIGINT, rank1_bidders BIGINT, rank2_bidders BIGINT, rank3_bidders BIGINT,"
                    + " total_auctions BIGINT, rank1_auctions BIGINT, rank2_auctions BIGINT, rank3_auctions BIGINT",
            "SELECT DATE_FORMAT(`dateTime`, 'yyyy-MM-dd'), COUNT(*)," + RANKS + "," + distinctRanks("bidder") + ","
                    + distinctRanks("auction") + " FROM bid GROUP BY DATE_FORMAT(`dateTime`, 'yyyy-MM-dd')");

    static final Query Q16 = new Query("q16",
            "channel STRING, `day` STRING, `minute` STRING, total_bids BIGINT, rank1_bids BIGINT, rank2_bids BIGINT,"
                    + " rank3_bids BIGINT, total_bidders BIGINT, rank1_bidders BIGINT, rank2_bidders BIGINT,"
                    + " rank3_bidders BIGINT, total_auctions BIGINT, rank1_auctions BIGINT, rank2_auctions BIGINT,"
                    + " rank3_auctions BIGINT",
            "SELECT channel, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd'), MAX(DATE_FORMAT(`dateTime`, 'HH:mm')), COUNT(*),"
                    + RANKS + "," + distinctRanks("bidder") + "," + distinctRanks("auction")
                    + " FROM bid GROUP BY channel, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd')");

    static final List<Query> QUERIES = List.of(Q17, Q4, Q15, Q16);

    static StreamTableEnvironment tableEnv(SqlBench.Mode mode, long rows, int keys) {
        boolean ferry = mode != SqlBench.Mode.STOCK;
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(PARALLELISM);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
        tEnv.getConfig().set("table.exec.resource.default-parallelism", Integer.toString(PARALLELISM));
        tEnv.getConfig().set("table.exec.mini-batch.enabled", "true");
        tEnv.getConfig().set("table.exec.mini-batch.allow-latency", "2 s");
        tEnv.getConfig().set("table.exec.mini-batch.size", "50000");
        tEnv.getConfig().set("table.optimizer.distinct-agg.split.enabled", "true");
        tEnv.getConfig().set("table.local-time-zone", "UTC");
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        tEnv.getConfig().set(FerryOptions.EXCHANGE_COLUMNAR, mode != SqlBench.Mode.FERRY_ROWS);
        Ferry.install(tEnv);
        SqlBench.createSource(tEnv, rows, keys);
        return tEnv;
    }

    /** The aggregation nodes of the optimized physical plan ({@code …GroupAggregate(}) and how many of them are native. */
    record Nodes(int total, int nativeCount, int columnar, List<String> lines) {}

    static Nodes nodes(StreamTableEnvironment tEnv, String insert) {
        String plan = tEnv.explainSql(insert);
        int at = plan.indexOf("== Optimized Physical Plan ==");
        int end = plan.indexOf("== Optimized Execution Plan ==");
        if (at < 0 || end < 0) {
            throw new IllegalStateException("unexpected EXPLAIN output:\n" + plan);
        }
        List<String> lines = new ArrayList<>();
        int natives = 0;
        int columnar = 0;
        for (String line : plan.substring(at, end).split("\n")) {
            if (line.contains("ferry=[columnar]")) {
                columnar++;
            }
            if (line.contains("GroupAggregate(")) {
                lines.add(line.trim());
                if (line.contains("ferry=[native]")) {
                    natives++;
                }
            }
        }
        return new Nodes(lines.size(), natives, columnar, lines);
    }

    /** One job run: its rate, its checksum and changelog row count. */
    record Run(SqlBench.Mode mode, long rows, long netMillis, long checksum, long changelogRows) {
        double rowsPerSecond() {
            return rows * 1000.0 / netMillis;
        }
    }

    static int jobs;

    static Run runOnce(Query q, SqlBench.Mode mode, long rows, int keys, List<Nodes> plans) throws Exception {
        boolean ferry = mode != SqlBench.Mode.STOCK;
        StreamTableEnvironment tEnv = tableEnv(mode, rows, keys);
        String sink = "sink_" + (++jobs);
        tEnv.executeSql(q.sinkDdl(sink));
        String insert = "INSERT INTO " + sink + " " + q.select();
        Nodes nodes = nodes(tEnv, insert);
        if (!ferry && nodes.nativeCount() != 0) {
            throw new IllegalStateException("Ferry off but native nodes: " + nodes.lines());
        }
        plans.add(nodes);
        TableResult result = tEnv.executeSql(insert);
        JobExecutionResult job = result.getJobClient().orElseThrow().getJobExecutionResult().get();
        long[] sum = ChecksumSink.take(sink);
        return new Run(mode, rows, job.getNetRuntime(TimeUnit.MILLISECONDS), sum[0], sum[1]);
    }

    /** Results of one query: the timed runs, and the aggregation nodes with Ferry on. */
    record Result(Query query, List<Run> runs, Nodes ferryNodes) {
        double[] rates(SqlBench.Mode mode) {
            return runs.stream().filter(r -> r.mode() == mode).mapToDouble(Run::rowsPerSecond).toArray();
        }

        double median(SqlBench.Mode mode) {
            return Stats.median(rates(mode));
        }
    }

    static Result run(Query q, long rows, int keys, int reps) throws Exception {
        SqlBench.Mode[] modes = {SqlBench.Mode.STOCK, SqlBench.Mode.FERRY_ROWS, SqlBench.Mode.FERRY};
        Bench.log("%s: %s", q.name(), q.select());
        List<Nodes> plans = new ArrayList<>();
        for (SqlBench.Mode mode : modes) {
            Run w = runOnce(q, mode, rows, keys, plans);
            Bench.log("warm-up %-6s %s rows/s (%d ms), checksum %016x", mode.label, Bench.rate(w.rowsPerSecond()),
                    w.netMillis(), w.checksum());
        }
        Nodes ferryNodes = plans.get(2);
        for (String line : ferryNodes.lines()) {
            Bench.log("  ferry: %s", line);
        }
        List<Run> runs = new ArrayList<>();
        for (int rep = 1; rep <= reps; rep++) {
            for (SqlBench.Mode mode : modes) {
                System.gc();
                Run r = runOnce(q, mode, rows, keys, plans);
                runs.add(r);
                Bench.log(String.format(Locale.ROOT, "rep %d %-6s %s rows/s (net %d ms), checksum %016x, %d changelog rows",
                        rep, mode.label, Bench.rate(r.rowsPerSecond()), r.netMillis(), r.checksum(), r.changelogRows()));
            }
        }
        long expected = runs.get(0).checksum();
        for (Run r : runs) {
            if (r.checksum() != expected) {
                throw new IllegalStateException(String.format(Locale.ROOT,
                        "%s: the %s run's result differs (checksum %016x, the first stock run's %016x)", q.name(),
                        r.mode().label, r.checksum(), expected));
            }
        }
        return new Result(q, runs, ferryNodes);
    }

    static MiniClusterWithClientResource startCluster() throws Exception {
        MiniClusterWithClientResource cluster = new MiniClusterWithClientResource(
                new MiniClusterResourceConfiguration.Builder()
                        .setNumberTaskManagers(1)
                        .setNumberSlotsPerTaskManager(PARALLELISM)
                        .build());
        cluster.before();
        return cluster;
    }

    /** Runs every query and appends the table. */
    static void table(StringBuilder out, long rows, int keys, int reps, String commit) throws Exception {
        MiniClusterWithClientResource cluster = startCluster();
        List<Result> results = new ArrayList<>();
        try {
            for (Query q : QUERIES) {
                results.add(run(q, rows, keys, reps));
            }
        } finally {
            cluster.after();
        }
        out.append(String.format(Locale.ROOT,
                "### SQL end to end, two-phase mini-batch (MiniCluster, 1 TaskManager, parallelism %d, heap backend,"
                        + " bundles of 50,000 rows or 2 s, AUTO, split distinct on; %s input rows, %s auctions and bidders;"
                        + " median of %d interleaved runs; min–max; commit %s)%n%n",
                PARALLELISM, Bench.count(rows), Bench.count(keys), reps, commit));
        out.append("| query | aggregation nodes native (Ferry on) | columnar exchanges | Ferry off: rows/s"
                + " | Ferry on, row exchange: rows/s | Ferry on, columnar: rows/s | row exchange / Flink | columnar / Flink |"
                + " result checksum |\n|---|---|---:|---:|---:|---:|---:|---:|---|\n");
        for (Result r : results) {
            double stock = r.median(SqlBench.Mode.STOCK);
            out.append(String.format(Locale.ROOT, "| %s | %d of %d | %d | %s | %s | %s | %.2f× | %.2f× | %016x |%n", r.query().name(),
                    r.ferryNodes().nativeCount(), r.ferryNodes().total(), r.ferryNodes().columnar(),
                    Bench.spread(stock, r.rates(SqlBench.Mode.STOCK)),
                    Bench.spread(r.median(SqlBench.Mode.FERRY_ROWS), r.rates(SqlBench.Mode.FERRY_ROWS)),
                    Bench.spread(r.median(SqlBench.Mode.FERRY), r.rates(SqlBench.Mode.FERRY)),
                    r.median(SqlBench.Mode.FERRY_ROWS) / stock, r.median(SqlBench.Mode.FERRY) / stock,
                    r.runs().get(0).checksum()));
        }
        out.append('\n');
    }
}
