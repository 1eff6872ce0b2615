package io.ferrystream.ferry.bench;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.kinds.lookupjoin.FerryLookupJoinOperator;
import io.ferrystream.ferry.planner.Ferry;

import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.planner.factories.TestValuesTableFactory;
import org.apache.flink.types.Row;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The lookup join in the shape of Nexmark q13 with Flink's {@code values} test lookup source: a
 * bounded probe of {@code rows} rows over 5 dimension keys, parallelism 1, async capacity 100,
 * into {@link ChecksumSink}; Flink's operator (Ferry off) and Ferry's (on), one warm-up job each,
 * then interleaved, sync and async lookup; every job must end with the first one's checksum and
 * row count, or the benchmark fails. Wall time of the whole job (source and sink included);
 * median and min–max of the repetitions. The
 * async source completes each lookup after a random 0-4 ms sleep on a pool of two threads, so the
 * async jobs run a fiftieth of the rows (their rate is the source's, whatever the operator).
 */
final class LookupJoinBench {
    private LookupJoinBench() {}

    static void run(StringBuilder out, long rows, int reps) throws Exception {
        List<Row> probe = new ArrayList<>();
        for (long i = 0; i < rows; i++) {
            probe.add(Row.of(i, (int) (i % 5), "bid" + i));
        }
        List<Row> dim = new ArrayList<>();
        for (int k = 0; k < 5; k++) {
            dim.add(Row.of(k, "side" + k, k * 10L));
        }
        String probeId = TestValuesTableFactory.registerData(probe);
        String asyncProbeId = TestValuesTableFactory.registerData(probe.subList(0, (int) Math.max(1, rows / 50)));
        String dimId = TestValuesTableFactory.registerData(dim);
        out.append(String.format(Locale.ROOT, "### Lookup join, Nexmark q13 shape with Flink's values lookup source"
                + " (parallelism 1, 5 dimension keys, async capacity 100; median of %d interleaved jobs; min–max; commit %s)%n%n",
                reps, System.getProperty("ferry.commit", "unknown")));
        out.append("| lookup | probe rows | Flink: rows/s | Ferry: rows/s | Ferry / Flink | result checksum |\n"
                + "|---|---:|---:|---:|---:|---|\n");
        for (boolean async : new boolean[] {false, true}) {
            long n = async ? Math.max(1, rows / 50) : rows;
            String probeData = async ? asyncProbeId : probeId;
            long[] expected = null;
            double[][] rates = new double[2][reps];
            for (int r = -1; r < reps; r++) { // r = -1: warm-up
                for (int side = 0; side < 2; side++) {
                    long[] sum = new long[2];
                    double rate = n / once(side == 1, async, probeData, dimId, sum);
                    if (expected == null) {
                        expected = sum;
                    } else if (sum[0] != expected[0] || sum[1] != expected[1]) {
                        throw new IllegalStateException(String.format(Locale.ROOT,
                                "lookup-join %s: a %s job's result differs (checksum %016x, %d rows; the first %016x, %d rows)",
                                async ? "async" : "sync", side == 1 ? "Ferry" : "Flink", sum[0], sum[1], expected[0], expected[1]));
                    }
                    if (r >= 0) {
                        rates[side][r] = rate;
                    }
                    Bench.log("lookup-join %s %s %s: %s rows/s, checksum %016x", async ? "async" : "sync",
                            side == 1 ? "ferry" : "flink", r < 0 ? "warm-up" : "rep " + r, Bench.rate(rate), sum[0]);
                }
            }
            double flink = Stats.median(rates[0]);
            double ferry = Stats.median(rates[1]);
            out.append(String.format(Locale.ROOT, "| %s | %s | %s | %s | %.2f× | %016x |%n", async ? "async" : "sync",
                    Bench.count(n), Bench.spread(flink, rates[0]), Bench.spread(ferry, rates[1]), ferry / flink, expected[0]));
        }
        out.append('\n');
    }

    private static int jobs;

    /** One job's wall time in seconds; its sink's checksum and row count into sum. */
    private static double once(boolean ferry, boolean async, String probeId, String dimId, long[] sum) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
        Ferry.install(tEnv);
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        tEnv.getConfig().set("table.exec.async-lookup.buffer-capacity", "100");
        tEnv.executeSql("CREATE TABLE bid (auction BIGINT, k INT, extra STRING, p AS PROCTIME()) WITH ("
                + "'connector'='values', 'bounded'='true', 'data-id'='" + probeId + "')");
        tEnv.executeSql("CREATE TABLE side_input (k INT, v STRING, w BIGINT) WITH ("
                + "'connector'='values', 'bounded'='true', 'async'='" + async + "', 'data-id'='" + dimId + "')");
        String sink = "lookup_sink_" + (++jobs);
        tEnv.executeSql("CREATE TABLE sink (auction BIGINT, extra STRING, v STRING, w BIGINT) WITH ("
                + "'connector'='ferry-checksum', 'name'='" + sink + "')");
        long opened = Ferry.nativeOperatorsOpened(FerryLookupJoinOperator.KIND);
        long start = System.nanoTime();
        tEnv.executeSql("INSERT INTO sink SELECT B.auction, B.extra, S.v, S.w FROM bid AS B"
                + " JOIN side_input FOR SYSTEM_TIME AS OF B.p AS S ON B.k = S.k").await();
        double seconds = (System.nanoTime() - start) / 1e9;
        long[] taken = ChecksumSink.take(sink);
        sum[0] = taken[0];
        sum[1] = taken[1];
        if (ferry != Ferry.nativeOperatorsOpened(FerryLookupJoinOperator.KIND) > opened) {
            throw new IllegalStateException("Ferry's lookup join " + (ferry ? "did not run" : "ran with Ferry off"));
        }
        return seconds;
    }
}
