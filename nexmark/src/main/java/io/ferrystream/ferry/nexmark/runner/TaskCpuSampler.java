package io.ferrystream.ferry.nexmark.runner;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * CPU time of one job on a MiniCluster in this JVM, sampled every {@value #PERIOD_MS} ms by a
 * daemon thread between {@link #start()} and {@link #stop()}:
 *
 * <ul>
 *   <li>its <b>task threads</b>' (Flink runs each task in a thread of the group {@value
 *       #TASK_GROUP}; operator code, Ferry's Go code called through JNI included): each thread's
 *       last sampled CPU time, summed. A thread's CPU between its last sample and its end is
 *       lost, at most {@value #PERIOD_MS} ms per thread;
 *   <li>the <b>whole process</b>' between two instants (every thread: Flink's, the JVM's garbage
 *       collector and compiler, the Go runtime's own threads), interpolated between samples.
 * </ul>
 *
 * One job at a time: every task thread seen between start and stop counts as the job's.
 */
final class TaskCpuSampler {
    static final String TASK_GROUP = "Flink Task Threads";
    static final long PERIOD_MS = 10;

    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    private static final com.sun.management.OperatingSystemMXBean OS =
            (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    private final Map<Long, Long> taskCpu = new HashMap<>();
    /** (epoch ms, process CPU ns) pairs, in time order. */
    private final List<long[]> process = new ArrayList<>();
    private Thread sampler;
    private volatile boolean running;

    TaskCpuSampler() {
        if (!THREADS.isThreadCpuTimeSupported()) {
            throw new IllegalStateException("this JVM cannot measure threads' CPU time");
        }
        THREADS.setThreadCpuTimeEnabled(true);
    }

    synchronized void start() {
        taskCpu.clear();
        process.clear();
        running = true;
        sample();
        sampler = new Thread(this::loop, "nexmark-cpu-sampler");
        sampler.setDaemon(true);
        sampler.start();
    }

    /** Stops sampling once the task threads have ended (waiting up to 5 s for them). */
    void stop() throws InterruptedException {
        long deadline = System.currentTimeMillis() + 5000;
        while (!taskThreads().isEmpty() && System.currentTimeMillis() < deadline) {
            Thread.sleep(PERIOD_MS);
        }
        running = false;
        sampler.join();
        sample();
    }

    /** CPU seconds of the task threads seen since {@link #start()}. */
    synchronized double taskSeconds() {
        long sum = 0;
        for (long ns : taskCpu.values()) {
            sum += ns;
        }
        return sum / 1e9;
    }

    /** CPU seconds the whole process spent between two epoch-ms instants inside the sampled span. */
    synchronized double processSeconds(long fromMs, long toMs) {
        return (processAt(toMs) - processAt(fromMs)) / 1e9;
    }

    private double processAt(long ms) {
        long[] before = process.get(0);
        for (long[] s : process) {
            if (s[0] > ms) {
                if (s[0] == before[0]) {
                    return before[1];
                }
                return before[1] + (double) (s[1] - before[1]) * (ms - before[0]) / (s[0] - before[0]);
            }
            before = s;
        }
        return before[1];
    }

    private void loop() {
        while (running) {
            sample();
            try {
                Thread.sleep(PERIOD_MS);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    private synchronized void sample() {
        process.add(new long[] {System.currentTimeMillis(), OS.getProcessCpuTime()});
        for (Thread t : taskThreads()) {
            long ns = THREADS.getThreadCpuTime(t.getId());
            if (ns >= 0) {
                taskCpu.put(t.getId(), ns);
            }
        }
    }

    private static List<Thread> taskThreads() {
        ThreadGroup root = Thread.currentThread().getThreadGroup();
        while (root.getParent() != null) {
            root = root.getParent();
        }
        Thread[] all = new Thread[root.activeCount() + 64];
        int n = root.enumerate(all, true);
        List<Thread> tasks = new ArrayList<>();
        for (int i = 0; i < n; i++) {
            ThreadGroup g = all[i].getThreadGroup();
            if (g != null && TASK_GROUP.equals(g.getName())) {
                tasks.add(all[i]);
            }
        }
        return tasks;
    }
}
