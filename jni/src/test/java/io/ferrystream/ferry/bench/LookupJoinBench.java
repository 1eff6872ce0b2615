package io.ferrystream.ferry.bench;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.operators.FerryLookupJoinOperator;
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
 * into a blackhole sink; Flink's operator (Ferry off) and Ferry's (on) interleaved, sync and async
 * lookup. Wall time of the whole job (source and sink included), best of the repetitions. The
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
        out.append("| lookup | Flink (rows/s) | Ferry (rows/s) | Ferry / Flink |\n|---|---:|---:|---:|\n");
        for (boolean async : new boolean[] {false, true}) {
            double[] best = new double[2];
            for (int r = 0; r < reps; r++) {
                for (int side = 0; side < 2; side++) {
                    long n = async ? Math.max(1, rows / 50) : rows;
                    double rate = n / once(side == 1, async, async ? asyncProbeId : probeId, dimId);
                    best[side] = Math.max(best[side], rate);
                    Bench.log("lookup-join %s %s rep %d: %s rows/s", async ? "async" : "sync", side == 1 ? "ferry" : "flink",
                            r, Bench.rate(rate));
                }
            }
            out.append(String.format(Locale.ROOT, "| %s | %s | %s | %.2f |%n", async ? "async (capacity 100), " + Bench.count(rows / 50) + " rows" : "sync, " + Bench.count(rows) + " rows",
                    Bench.rate(best[0]), Bench.rate(best[1]), best[1] / best[0]));
        }
    }

    /** One job's wall time in seconds. */
    private static double once(boolean ferry, boolean async, String probeId, String dimId) throws Exception {
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
        tEnv.executeSql("CREATE TABLE sink (auction BIGINT, extra STRING, v STRING, w BIGINT) WITH ('connector'='blackhole')");
        long opened = Ferry.nativeOperatorsOpened(FerryLookupJoinOperator.KIND);
        long start = System.nanoTime();
        tEnv.executeSql("INSERT INTO sink SELECT B.auction, B.extra, S.v, S.w FROM bid AS B"
                + " JOIN side_input FOR SYSTEM_TIME AS OF B.p AS S ON B.k = S.k").await();
        double seconds = (System.nanoTime() - start) / 1e9;
        if (ferry != Ferry.nativeOperatorsOpened(FerryLookupJoinOperator.KIND) > opened) {
            throw new IllegalStateException("Ferry's lookup join " + (ferry ? "did not run" : "ran with Ferry off"));
        }
        return seconds;
    }
}
