package io.ferrystream.ferry.nexmark.runner;

import org.apache.flink.api.common.JobID;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.DeploymentOptions;
import org.apache.flink.configuration.PipelineOptions;
import org.apache.flink.configuration.RestOptions;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A standalone Flink cluster reached over its REST API (docs/nexmark.md#a-long-run-on-a-standalone-cluster):
 * jobs go to it with this module's jar as their user jar; what the JobManager recorded of a
 * finished job comes from its REST API. CPU is the TaskManager processes' (Nexmark's own measure),
 * read from {@code /proc} when their process ids are given (a cluster on this machine, such as
 * {@code scripts/cluster.sh} starts), else from each TaskManager's {@code Status.JVM.CPU.Time}
 * metric (as fresh as the cluster's metric fetcher makes it), both sampled every second and
 * interpolated over the job's measured time. Task threads' CPU and the native operators that
 * opened are not observable from here: runs report what Ferry planned.
 */
final class RemoteCluster implements Cluster {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final long CLOCK_TICKS = 100; // USER_HZ of /proc/PID/stat on Linux

    private final String rest;
    private final Path jar;
    private final List<Long> pids;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
    private final List<long[]> cpuSamples = new ArrayList<>();
    private Thread sampler;
    private volatile boolean sampling;

    RemoteCluster(String rest, Path jar, List<Long> pids) throws IOException {
        this.rest = rest;
        this.jar = jar.toAbsolutePath();
        this.pids = pids;
        if (!Files.isRegularFile(this.jar)) {
            throw new IllegalArgumentException("--jar " + jar + " is no file");
        }
        get("/overview"); // fails now, with the address in the message, if nothing answers there
    }

    @Override
    public StreamExecutionEnvironment environment(Configuration job) {
        URI uri = URI.create(rest);
        Configuration c = new Configuration(job);
        c.set(DeploymentOptions.TARGET, "remote");
        c.set(DeploymentOptions.ATTACHED, true);
        c.set(RestOptions.ADDRESS, uri.getHost());
        c.set(RestOptions.PORT, uri.getPort());
        c.set(PipelineOptions.JARS, List.of(jar.toUri().toString()));
        return new StreamExecutionEnvironment(c);
    }

    @Override
    public synchronized void beginJob() throws Exception {
        cpuSamples.clear();
        sampling = true;
        sampleCpu();
        sampler = new Thread(() -> {
            while (sampling) {
                try {
                    Thread.sleep(1000);
                    sampleCpu();
                } catch (InterruptedException e) {
                    return;
                } catch (Exception e) {
                    throw new IllegalStateException("cannot read the TaskManagers' CPU time", e);
                }
            }
        }, "nexmark-cluster-cpu");
        sampler.setDaemon(true);
        sampler.start();
    }

    @Override
    public Finished endJob(JobID id) throws Exception {
        sampling = false;
        sampler.interrupt();
        sampler.join();
        sampleCpu();
        String job = "/jobs/" + id;
        JsonNode overview = get(job);
        if (!"FINISHED".equals(overview.path("state").asText())) {
            throw new IllegalStateException("job " + id + " ended " + overview.path("state").asText());
        }
        long running = 0;
        for (JsonNode v : overview.path("vertices")) {
            for (JsonNode s : get(job + "/vertices/" + v.path("id").asText() + "/subtasktimes").path("subtasks")) {
                running = Math.max(running, s.path("timestamps").path("RUNNING").asLong());
            }
        }
        long finished = overview.path("timestamps").path("FINISHED").asLong();

        JsonNode checkpoints = get(job + "/checkpoints");
        int completed = checkpoints.path("counts").path("completed").asInt();
        long peak = -1;
        double sync = 0;
        double async = 0;
        long snapshots = 0;
        int seen = 0;
        for (JsonNode c : checkpoints.path("history")) {
            if (!"COMPLETED".equals(c.path("status").asText()) || c.path("is_savepoint").asBoolean()) {
                continue;
            }
            seen++;
            peak = Math.max(peak, c.path("state_size").asLong());
            String details = job + "/checkpoints/details/" + c.path("id").asText();
            for (JsonNode v : overview.path("vertices")) {
                for (JsonNode s : get(details + "/subtasks/" + v.path("id").asText()).path("subtasks")) {
                    JsonNode d = s.path("checkpoint");
                    if (!d.isMissingNode()) {
                        sync += d.path("sync").asLong();
                        async += d.path("async").asLong();
                        snapshots++;
                    }
                }
            }
        }
        if (seen != completed) {
            throw new IllegalStateException(completed + " checkpoints completed but the REST history holds " + seen
                    + ": raise web.checkpoints.history in the cluster's config.yaml");
        }
        JobStats stats = new JobStats(running, finished, completed, snapshots == 0 ? Double.NaN : sync / snapshots,
                snapshots == 0 ? Double.NaN : async / snapshots, peak);
        return new Finished(stats, Double.NaN, cpuBetween(running, finished));
    }

    @Override
    public Map<String, Long> nativeOpened() {
        return null;
    }

    @Override
    public String describe() {
        return "a standalone cluster at " + rest + " (TaskManager CPU from "
                + (pids.isEmpty() ? "its Status.JVM.CPU.Time metrics" : "/proc of processes " + pids) + ")";
    }

    @Override
    public void close() {}

    /** Total CPU of the TaskManagers, ns, with the time it was read. */
    private synchronized void sampleCpu() throws Exception {
        long now = System.currentTimeMillis();
        long ns = 0;
        if (!pids.isEmpty()) {
            for (long pid : pids) {
                String[] f = Files.readString(Path.of("/proc", Long.toString(pid), "stat"))
                        .replaceFirst("^.*\\) ", "").split(" ");
                // fields after "(comm) ": state is index 0, utime 11, stime 12
                ns += (Long.parseLong(f[11]) + Long.parseLong(f[12])) * (1_000_000_000L / CLOCK_TICKS);
            }
        } else {
            for (JsonNode tm : get("/taskmanagers").path("taskmanagers")) {
                for (JsonNode m : get("/taskmanagers/" + tm.path("id").asText() + "/metrics?get=Status.JVM.CPU.Time")) {
                    ns += m.path("value").asLong();
                }
            }
        }
        cpuSamples.add(new long[] {now, ns});
    }

    private synchronized double cpuBetween(long from, long to) {
        return (cpuAt(to) - cpuAt(from)) / 1e9;
    }

    private double cpuAt(long ms) {
        long[] before = cpuSamples.get(0);
        for (long[] s : cpuSamples) {
            if (s[0] > ms) {
                return s[0] == before[0] ? before[1]
                        : before[1] + (double) (s[1] - before[1]) * (ms - before[0]) / (s[0] - before[0]);
            }
            before = s;
        }
        return before[1];
    }

    private JsonNode get(String path) throws IOException {
        HttpRequest request = HttpRequest.newBuilder(URI.create(rest + path)).timeout(Duration.ofSeconds(30)).GET().build();
        HttpResponse<String> response;
        try {
            response = http.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted: GET " + rest + path, e);
        } catch (IOException e) {
            throw new IOException("no answer from the cluster's REST API: GET " + rest + path + ": " + e, e);
        }
        if (response.statusCode() != 200) {
            throw new IOException("GET " + rest + path + ": HTTP " + response.statusCode() + ": " + response.body());
        }
        return JSON.readTree(response.body());
    }
}
