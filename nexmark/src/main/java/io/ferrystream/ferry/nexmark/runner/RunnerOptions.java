package io.ferrystream.ferry.nexmark.runner;

import org.apache.flink.configuration.Configuration;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The runner's command line ({@code ./build.sh nexmark [QUERIES] [OPTIONS]}, docs/nexmark.md#the-runner).
 *
 * @param queries q0 to q22, or a subset in the order given
 * @param events events per timed job
 * @param warmupEvents events of each side's warm-up job per query (0: no warm-up); by default
 *     {@code events}, with {@code --long} 10 M
 * @param rounds timed rounds; each runs every side once, in an order that rotates
 * @param parallelism every operator's parallelism, and the generator's splits
 * @param rate events per second of event time
 * @param seed the generator's seed
 * @param checkpointInterval Ferry's default 10 s so snapshots are paid within a run; Nexmark's is 3 min
 * @param sides the sides to run
 * @param out the directory for the raw output and the summary
 * @param cluster a standalone cluster's REST address (http://host:port), or null for a MiniCluster
 * @param userJar the jar a standalone cluster runs the job's own classes from (this module's)
 * @param taskManagerPids TaskManager process ids whose CPU a local standalone cluster reports, or empty
 * @param managedMemory the MiniCluster TaskManager's managed memory (RocksDB's and Ferry's budget)
 * @param dynamic {@code -D key=value} options for every job, applied last
 */
record RunnerOptions(List<String> queries, long events, long warmupEvents, int rounds, int parallelism, long rate,
        long seed, Duration checkpointInterval, List<Side> sides, Path out, String cluster, Path userJar,
        List<Long> taskManagerPids, String managedMemory, Map<String, String> dynamic) {

    static final String USAGE = """
            usage: nexmark [QUERIES] [--events N] [--parallelism P] [--rounds N] [--warmup-events N] [--rate N]
                           [--seed N] [--checkpoint-interval 10s] [--sides heap,rocksdb,ferry] [--out DIR]
                           [--long] [--cluster http://HOST:PORT --jar NEXMARK_JAR [--tm-pids PID,...]]
                           [--managed-memory 1g] [-D key=value]...
              QUERIES  q0 to q22, comma or space separated (default: all 23)
              --long   Nexmark's suite size: 100 M events per job, one timed round after warm-ups of 10 M
                       (for a real cluster)
            """;

    static RunnerOptions parse(String[] args) {
        List<String> queries = new ArrayList<>();
        long events = 1_000_000;
        Long warmup = null;
        boolean longRun = false;
        int rounds = 3;
        int parallelism = 2;
        long rate = 10_000_000;
        long seed = 1;
        Duration interval = Duration.ofSeconds(10);
        List<Side> sides = List.of(Side.HEAP, Side.ROCKSDB, Side.FERRY);
        Path out = Path.of("build", "nexmark");
        String cluster = null;
        Path jar = null;
        List<Long> pids = new ArrayList<>();
        String managed = "1g";
        Map<String, String> dynamic = new LinkedHashMap<>();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (!a.startsWith("-")) {
                for (String q : a.split(",")) {
                    if (!q.isBlank()) {
                        queries.add(query(q.strip()));
                    }
                }
                continue;
            }
            if (a.equals("--long")) {
                events = 100_000_000;
                rounds = 1;
                longRun = true;
                continue;
            }
            if (a.equals("-h") || a.equals("--help")) {
                throw new IllegalArgumentException(USAGE);
            }
            String v;
            if (a.startsWith("-D") && a.length() > 2) {
                v = a.substring(2);
            } else {
                if (i + 1 >= args.length) {
                    throw new IllegalArgumentException(a + " needs a value\n" + USAGE);
                }
                v = args[++i];
            }
            switch (a.startsWith("-D") ? "-D" : a) {
                case "--events" -> events = count(a, v);
                case "--warmup-events" -> warmup = count(a, v);
                case "--rounds" -> rounds = (int) count(a, v);
                case "--parallelism" -> parallelism = (int) count(a, v);
                case "--rate" -> rate = count(a, v);
                case "--seed" -> seed = Long.parseLong(v);
                case "--checkpoint-interval" -> interval = duration(v);
                case "--sides" -> sides = sides(v);
                case "--out" -> out = Path.of(v);
                case "--cluster" -> cluster = v.replaceAll("/+$", "");
                case "--jar" -> jar = Path.of(v);
                case "--tm-pids" -> {
                    for (String p : v.split(",")) {
                        pids.add(Long.parseLong(p.strip()));
                    }
                }
                case "--managed-memory" -> managed = v;
                case "-D" -> {
                    int eq = v.indexOf('=');
                    if (eq <= 0) {
                        throw new IllegalArgumentException("-D wants key=value, got " + v);
                    }
                    dynamic.put(v.substring(0, eq).strip(), v.substring(eq + 1).strip());
                }
                default -> throw new IllegalArgumentException("unknown option " + a + "\n" + USAGE);
            }
        }
        if (events <= 0 || rounds <= 0 || parallelism <= 0 || rate <= 0) {
            throw new IllegalArgumentException("--events, --rounds, --parallelism and --rate must be positive\n" + USAGE);
        }
        if (events < parallelism) {
            throw new IllegalArgumentException("--events (" + events + ") must be at least --parallelism (" + parallelism + ")");
        }
        if (cluster != null && jar == null) {
            throw new IllegalArgumentException("--cluster needs --jar: the nexmark jar the cluster runs the job's classes from");
        }
        long warmupEvents = warmup != null ? warmup : longRun ? 10_000_000 : events;
        if (warmupEvents != 0 && warmupEvents < parallelism) {
            throw new IllegalArgumentException("--warmup-events must be 0 (no warm-up) or at least --parallelism");
        }
        return new RunnerOptions(queries.isEmpty() ? QueryScript.NAMES : List.copyOf(queries), events, warmupEvents, rounds,
                parallelism, rate, seed, interval, sides, out, cluster, jar, List.copyOf(pids), managed, dynamic);
    }

    /**
     * The configuration every job starts from: Nexmark's (mini-batch of 50,000 rows or 2 s, split
     * distinct aggregation, exactly-once checkpoints, none after tasks finish) with this run's
     * parallelism and checkpoint interval, then {@code -D}.
     */
    Configuration jobConfiguration() {
        Configuration c = new Configuration();
        c.setString("parallelism.default", Integer.toString(parallelism));
        c.setString("execution.checkpointing.interval", interval());
        c.setString("execution.checkpointing.mode", "EXACTLY_ONCE");
        c.setString("execution.checkpointing.checkpoints-after-tasks-finish", "false");
        if (cluster == null) { // a standalone cluster checkpoints where its configuration says
            c.setString("execution.checkpointing.dir", out.toAbsolutePath().resolve("checkpoints").toUri().toString());
        }
        c.setString("table.exec.mini-batch.enabled", "true");
        c.setString("table.exec.mini-batch.allow-latency", "2 s");
        c.setString("table.exec.mini-batch.size", "50000");
        c.setString("table.optimizer.distinct-agg.split.enabled", "true");
        c.setString("table.local-time-zone", "UTC");
        dynamic.forEach(c::setString);
        return c;
    }

    /** The MiniCluster's configuration: its TaskManager's managed memory, every checkpoint kept in the statistics. */
    Configuration clusterConfiguration() {
        Configuration c = new Configuration();
        c.setString("taskmanager.memory.managed.size", managedMemory);
        c.setString("web.checkpoints.history", "100000");
        dynamic.forEach(c::setString);
        return c;
    }

    /** The scripts' variables but EVENTS. */
    Map<String, String> variables(Path sideInput) {
        return Map.of("RATE", Long.toString(rate), "SEED", Long.toString(seed),
                "SIDE_INPUT", sideInput.toAbsolutePath().toString());
    }

    String interval() {
        return checkpointInterval.toMillis() + " ms";
    }

    private static String query(String q) {
        String name = q.toLowerCase(Locale.ROOT);
        if (!QueryScript.NAMES.contains(name)) {
            throw new IllegalArgumentException("no Nexmark query " + q + "; queries are q0 to q22\n" + USAGE);
        }
        return name;
    }

    private static List<Side> sides(String v) {
        List<Side> s = new ArrayList<>();
        for (String id : v.split(",")) {
            s.add(Side.of(id.strip()));
        }
        return List.copyOf(s);
    }

    /** 1000, 10K, 2.5M, 100M. */
    static long count(String option, String v) {
        String t = v.strip().toUpperCase(Locale.ROOT);
        double mul = 1;
        if (t.endsWith("K")) {
            mul = 1e3;
        } else if (t.endsWith("M")) {
            mul = 1e6;
        } else if (t.endsWith("G") || t.endsWith("B")) {
            mul = 1e9;
        }
        if (mul != 1) {
            t = t.substring(0, t.length() - 1);
        }
        try {
            return Math.round(Double.parseDouble(t) * mul);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + " wants a count such as 1000, 10K or 2.5M, got " + v);
        }
    }

    private static Duration duration(String v) {
        try {
            return org.apache.flink.util.TimeUtils.parseDuration(v);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("--checkpoint-interval wants a duration such as 10s or 3min, got " + v);
        }
    }
}
