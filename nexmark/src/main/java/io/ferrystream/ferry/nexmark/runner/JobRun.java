package io.ferrystream.ferry.nexmark.runner;

/**
 * One job: a query on one side, its measurements and its result.
 *
 * @param round 0 for the warm-up, then 1, 2, ... for the timed rounds
 * @param events events the source generated
 * @param taskCpuSeconds CPU time of the job's task threads (NaN when not measurable)
 * @param processCpuSeconds CPU time of the TaskManager process(es) over the measured time
 * @param checksum the checksum of the final table (ChecksumSinkFactory)
 * @param added changelog rows that added a row ({@code +I}, {@code +U})
 * @param retracted changelog rows that retracted one ({@code -U}, {@code -D})
 * @param statefulOperators stateful operators of the plan
 * @param nativeRan native nodes whose operator opened in the job (-1: not observable on this cluster)
 * @param nativePlanned nodes Ferry planned native
 * @param operators the stateful operators, those that ran natively marked
 * @param wallClock why the result depends on the wall clock; empty when it does not
 */
record JobRun(String query, Side side, int round, long events, JobStats stats, double taskCpuSeconds,
        double processCpuSeconds, long checksum, long added, long retracted, int statefulOperators, int nativeRan,
        int nativePlanned, String operators, String wallClock) {

    double seconds() {
        return stats.millis() / 1000.0;
    }

    double eventsPerSecond() {
        return events / seconds();
    }

    /** Events per CPU second of the task threads (per core kept busy). */
    double eventsPerTaskCore() {
        return events / taskCpuSeconds;
    }

    /**
     * Events per CPU second: of the task threads where measured (a MiniCluster), else of the
     * TaskManager processes (a standalone cluster).
     */
    double eventsPerCore() {
        return Double.isNaN(taskCpuSeconds) ? eventsPerProcessCore() : eventsPerTaskCore();
    }

    /** Events per CPU second of the whole TaskManager process. */
    double eventsPerProcessCore() {
        return events / processCpuSeconds;
    }

    long finalRows() {
        return added - retracted;
    }

    String checksumHex() {
        return String.format("%016x", checksum);
    }
}
