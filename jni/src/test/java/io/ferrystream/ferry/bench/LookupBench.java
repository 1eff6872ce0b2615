package io.ferrystream.ferry.bench;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.lookup.PostgresServer;
import io.ferrystream.ferry.planner.Ferry;

import org.apache.flink.api.common.JobExecutionResult;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.test.util.MiniClusterWithClientResource;

import java.net.InetSocketAddress;
import java.sql.Connection;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.TimeUnit;

/**
 * The lookup join against a real PostgreSQL (Debian's server, started by {@link PostgresServer}):
 * Flink's JDBC lookup ({@code JdbcRowDataLookupFunction}, one statement per probe row) against
 * Ferry's batched lookup in Go (one statement per batch), as whole SQL jobs on a MiniCluster
 * (parallelism 1, heap backend): a bounded {@code datagen} probe stream joined with a dimension
 * table of {@code dimRows} rows, the cache off and on ({@code lookup.cache} PARTIAL holding every
 * key), directly on loopback and through a {@link DelayProxy} calibrated to add 1 ms to every
 * round trip (measured before the runs, and reported as measured).
 * Every job writes into {@link ChecksumSink}; all runs of a configuration must end with the same
 * checksum and row count, or the benchmark fails. Rows/s is probe rows over the job's net
 * runtime; Ferry off and on interleaved after one warm-up job each.
 */
final class LookupBench {
    private LookupBench() {}

    /** The round-trip time the proxy adds in the latency configurations. */
    static final long ADDED_ROUND_TRIP_NANOS = DelayProxy.millis(1.0);

    /**
     * One configuration: dimension rows, the cache, the added round-trip latency, probe rows; the
     * added round trip as measured through the proxy (ns; 0 on loopback).
     */
    record Config(int dimRows, boolean cache, boolean latency, long probes, long addedNanos) {
        String label() {
            return String.format(Locale.ROOT, "%s dim rows, cache %s, %s", Bench.count(dimRows), cache ? "on" : "off",
                    latency ? String.format(Locale.ROOT, "+%.2f ms round trip (measured)", addedNanos / 1e6) : "loopback");
        }
    }

    /** One job: its rate, checksum and row count. */
    record Run(boolean ferry, long netMillis, long probes, long checksum, long rows) {
        double rowsPerSecond() {
            return probes * 1000.0 / netMillis;
        }
    }

    static int jobs;

    /**
     * The job: every probe row (seq) looks up key 1 + (a hash of seq) mod (dimRows × 1.1), so about
     * one probe in eleven misses; INNER join, the dimension row's three columns into the sink.
     */
    static Run runOnce(Config c, boolean ferry, String url, String user, String password) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env, EnvironmentSettings.inStreamingMode());
        tEnv.getConfig().set("table.exec.resource.default-parallelism", "1");
        tEnv.getConfig().set("table.local-time-zone", "UTC");
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        Ferry.install(tEnv);
        tEnv.executeSql("CREATE TEMPORARY TABLE gen (seq BIGINT, pt AS PROCTIME()) WITH ('connector' = 'datagen',"
                + " 'fields.seq.kind' = 'sequence', 'fields.seq.start' = '0', 'fields.seq.end' = '" + (c.probes() - 1)
                + "', 'rows-per-second' = '1000000000')");
        long space = c.dimRows() + c.dimRows() / 10;
        tEnv.executeSql("CREATE TEMPORARY VIEW probe AS SELECT seq, 1 + MOD(seq * 2654435761, " + space + ") AS k, pt FROM gen");
        String cache = c.cache()
                ? ", 'lookup.cache' = 'PARTIAL', 'lookup.partial-cache.max-rows' = '" + (2 * space) + "'"
                : "";
        tEnv.executeSql("CREATE TEMPORARY TABLE dim (id BIGINT, name STRING, price BIGINT, updated TIMESTAMP(3))"
                + " WITH ('connector' = 'jdbc', 'url' = '" + url + "', 'table-name' = 'dim', 'username' = '" + user
                + "', 'password' = '" + password + "'" + cache + ")");
        String sink = "sink_" + (++jobs);
        tEnv.executeSql("CREATE TEMPORARY TABLE " + sink + " (seq BIGINT, k BIGINT, name STRING, price BIGINT,"
                + " updated TIMESTAMP(3)) WITH ('connector' = 'ferry-checksum', 'name' = '" + sink + "')");
        String insert = "INSERT INTO " + sink + " SELECT p.seq, p.k, d.name, d.price, d.updated FROM probe AS p"
                + " JOIN dim FOR SYSTEM_TIME AS OF p.pt AS d ON p.k = d.id";
        String plan = tEnv.explainSql(insert);
        String join = plan.lines().filter(l -> l.contains("LookupJoin(")).findFirst()
                .orElseThrow(() -> new IllegalStateException("no LookupJoin in the plan:\n" + plan));
        if (join.contains("ferry=[native") != ferry) {
            throw new IllegalStateException("ferry=" + ferry + " but the plan has " + join.trim());
        }
        TableResult result = tEnv.executeSql(insert);
        JobExecutionResult job = result.getJobClient().orElseThrow().getJobExecutionResult().get();
        long[] sum = ChecksumSink.take(sink);
        return new Run(ferry, job.getNetRuntime(TimeUnit.MILLISECONDS), c.probes(), sum[0], sum[1]);
    }

    /** Creates table dim with ids 1..rows (name, price and time derived from the id). */
    static void createDim(PostgresServer pg, int rows) throws Exception {
        try (Connection conn = pg.connect(); Statement st = conn.createStatement()) {
            st.execute("DROP TABLE IF EXISTS dim");
            st.execute("CREATE TABLE dim (id BIGINT PRIMARY KEY, name VARCHAR(32), price BIGINT, updated TIMESTAMP(3))");
            st.execute("INSERT INTO dim SELECT i, 'item-' || i, (i::bigint * 7919) % 100000,"
                    + " TIMESTAMP '2026-01-01 00:00:00' + i * INTERVAL '1 second' FROM generate_series(1, " + rows + ") AS i");
            st.execute("ANALYZE dim");
        }
    }

    static List<Config> configs(long probes, long latencyProbes, long addedNanos) {
        List<Config> out = new ArrayList<>();
        for (int dim : new int[] {10_000, 1_000_000}) {
            for (boolean latency : new boolean[] {false, true}) {
                for (boolean cache : new boolean[] {false, true}) {
                    out.add(new Config(dim, cache, latency, latency ? latencyProbes : probes, latency ? addedNanos : 0));
                }
            }
        }
        return out;
    }

    /** Runs every configuration and appends the table. */
    static void table(StringBuilder out, long probes, long latencyProbes, int reps, String commit) throws Exception {
        MiniClusterWithClientResource cluster = new MiniClusterWithClientResource(
                new MiniClusterResourceConfiguration.Builder().setNumberTaskManagers(1).setNumberSlotsPerTaskManager(1).build());
        cluster.before();
        List<String> rows = new ArrayList<>();
        long added;
        try (PostgresServer pg = PostgresServer.start();
                DelayProxy proxy = new DelayProxy(new InetSocketAddress(pg.env.get("PGHOST"),
                        Integer.parseInt(pg.env.get("PGPORT"))), ADDED_ROUND_TRIP_NANOS / 2)) {
            String delayed = "jdbc:postgresql://" + proxy.address() + "/" + pg.env.get("PGDATABASE");
            added = proxy.calibrate(pg.url(), delayed, pg.user(), pg.password(), ADDED_ROUND_TRIP_NANOS);
            int loaded = -1;
            for (Config c : configs(probes, latencyProbes, added)) {
                if (c.dimRows() != loaded) {
                    createDim(pg, c.dimRows());
                    loaded = c.dimRows();
                }
                rows.add(run(c, c.latency() ? delayed : pg.url(), pg.user(), pg.password(), reps));
            }
            long after = DelayProxy.roundTripNanos(delayed, pg.user(), pg.password())
                    - DelayProxy.roundTripNanos(pg.url(), pg.user(), pg.password());
            Bench.log("delay proxy after the runs: %.3f ms added to a round trip (one-way delay %d µs)", after / 1e6,
                    proxy.delayNanos() / 1000);
        } finally {
            cluster.after();
        }
        out.append(String.format(Locale.ROOT,
                "### Lookup join against PostgreSQL: Flink's JDBC lookup vs Ferry's (MiniCluster, parallelism 1,"
                        + " INNER join on a BIGINT key, about 1 probe in 11 missing; median of %d interleaved runs; min–max;"
                        + " commit %s; the proxy's added round trip as measured before the runs: %.3f ms)%n%n", reps, commit,
                added / 1e6));
        out.append("| configuration | probe rows | Flink: rows/s | Ferry: rows/s | Ferry / Flink | joined rows | result checksum |\n"
                + "|---|---:|---:|---:|---:|---:|---|\n");
        rows.forEach(out::append);
        out.append('\n');
    }

    static String run(Config c, String url, String user, String password, int reps) throws Exception {
        Bench.log("lookup %s: %s probe rows", c.label(), Bench.count(c.probes()));
        for (boolean ferry : new boolean[] {false, true}) {
            Run w = runOnce(c, ferry, url, user, password);
            Bench.log("warm-up %-5s %s rows/s (%d ms), checksum %016x, %d rows", ferry ? "ferry" : "flink",
                    Bench.rate(w.rowsPerSecond()), w.netMillis(), w.checksum(), w.rows());
        }
        List<Run> runs = new ArrayList<>();
        for (int rep = 1; rep <= reps; rep++) {
            for (boolean ferry : new boolean[] {false, true}) {
                System.gc();
                Run r = runOnce(c, ferry, url, user, password);
                runs.add(r);
                Bench.log("rep %d %-5s %s rows/s (net %d ms), checksum %016x, %d rows", rep, ferry ? "ferry" : "flink",
                        Bench.rate(r.rowsPerSecond()), r.netMillis(), r.checksum(), r.rows());
            }
        }
        Run first = runs.get(0);
        for (Run r : runs) {
            if (r.checksum() != first.checksum() || r.rows() != first.rows()) {
                throw new IllegalStateException(String.format(Locale.ROOT,
                        "%s: a %s run's result differs (checksum %016x, %d rows; Flink's first %016x, %d rows)", c.label(),
                        r.ferry() ? "Ferry" : "Flink", r.checksum(), r.rows(), first.checksum(), first.rows()));
            }
        }
        double[] flink = runs.stream().filter(r -> !r.ferry()).mapToDouble(Run::rowsPerSecond).toArray();
        double[] ferry = runs.stream().filter(Run::ferry).mapToDouble(Run::rowsPerSecond).toArray();
        double fm = Stats.median(flink);
        double nm = Stats.median(ferry);
        return String.format(Locale.ROOT, "| %s | %s | %s | %s | %.1f× | %s | %016x |%n", c.label(), Bench.count(c.probes()),
                Bench.spread(fm, flink), Bench.spread(nm, ferry), nm / fm, Bench.count(first.rows()), first.checksum());
    }
}
