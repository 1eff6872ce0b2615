package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.FerryOptions.OverBudget;
import io.ferrystream.ferry.nativelib.FerryException;
import io.ferrystream.ferry.nativelib.NativeLibrary;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.memory.ManagedMemoryUseCase;
import org.apache.flink.runtime.execution.Environment;
import org.apache.flink.runtime.memory.MemoryManager;
import org.apache.flink.runtime.memory.MemoryReservationException;
import org.apache.flink.streaming.api.graph.StreamConfig;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Locale;

/**
 * A native operator's share of its slot's managed memory: the bytes Flink's {@link MemoryManager}
 * computes for the operator's fraction of use case {@link ManagedMemoryUseCase#OPERATOR} (the
 * planner declares {@link FerryOptions#MEMORY_WEIGHT} as its weight), reserved from that
 * MemoryManager when the operator initializes and released when it closes, so Flink's {@code
 * Status.Flink.Memory.Managed.Used} counts it. Go holds the operator's state outside the JVM, in
 * the memory Flink set aside as managed; the state and the operator's Arrow batches must fit the
 * budget. When they do not, or when the slot has no managed memory for the operator, {@link
 * FerryOptions#MEMORY_OVER_BUDGET} decides: WARN (the default) logs once what to raise and runs on
 * outside the budget, as Flink's heap state backend keeps its state whatever the managed memory;
 * FAIL fails the task naming what to raise (docs/state.md#memory).
 *
 * <p>The Go runtime's soft limit ({@code ferry_init}'s {@code memory_limit_bytes}) is the sum of
 * the budgets of the process's open native operators plus {@link #GO_BASE_BYTES}, so Go collects
 * garbage before its heap grows past what Flink budgeted. An operator without a fraction of the
 * slot (its transformation declared no weight: {@code ferry.memory.weight: 0}) is unbudgeted:
 * nothing is reserved or checked; while an unbudgeted operator or one over its budget is open, Go
 * has no soft limit (a limit below the live state would make Go collect without end).
 */
final class ManagedMemoryBudget {
    /** Go memory outside every operator's state: the runtime, goroutine stacks, output batches. */
    static final long GO_BASE_BYTES = 64L << 20;

    /**
     * The operator's fraction of the use case OPERATOR, as the job graph generator wrote it into
     * the StreamConfig (Flink 2.3's key): above 0 when its transformation declared a weight.
     */
    private static final ConfigOption<Double> OPERATOR_FRACTION =
            ConfigOptions.key("managedMemFraction." + ManagedMemoryUseCase.OPERATOR).doubleType().defaultValue(0.0);

    private static final Logger LOG = LoggerFactory.getLogger(ManagedMemoryBudget.class);

    /** Sum of the budgets of the open budgeted operators of this process. Guarded by the class. */
    private static long budgeted;
    /** Open operators of this process that are unbudgeted or over their budget. Guarded by the class. */
    private static int unbudgeted;

    private final Object owner;
    private final MemoryManager memoryManager;
    private final OverBudget overBudget;
    /** Bytes reserved; 0 when unbudgeted. */
    private final long bytes;
    /** The operator's fraction of the slot's managed memory; 0 when unbudgeted. */
    private final double fraction;
    /** WARN only: the memory outgrew the budget once; Go's soft limit is lifted until release. */
    private boolean over;
    private boolean released;

    private ManagedMemoryBudget(
            Object owner, MemoryManager memoryManager, OverBudget overBudget, long bytes, double fraction) {
        this.owner = owner;
        this.memoryManager = memoryManager;
        this.overBudget = overBudget;
        this.bytes = bytes;
        this.fraction = fraction;
    }

    /**
     * Reserves the operator's budget from its slot's MemoryManager and raises Go's soft limit by
     * it. When the operator has a fraction but the slot has no managed memory for it, fails saying
     * what to configure (FAIL), or runs the operator unbudgeted after a warning (WARN).
     *
     * @param owner the operator: the owner of the reservation
     * @param name the operator's name, for messages
     */
    static ManagedMemoryBudget reserve(Object owner, String name, Environment env, StreamConfig config) {
        Configuration conf = new Configuration(env.getTaskManagerInfo().getConfiguration());
        conf.addAll(env.getJobConfiguration());
        OverBudget policy = conf.get(FerryOptions.MEMORY_OVER_BUDGET);
        double fraction = config.getManagedMemoryFractionOperatorUseCaseOfSlot(
                ManagedMemoryUseCase.OPERATOR,
                env.getJobConfiguration(),
                env.getTaskManagerInfo().getConfiguration(),
                env.getUserCodeClassLoader().asClassLoader());
        MemoryManager mm = env.getMemoryManager();
        String unavailable = null;
        long bytes = 0;
        if (fraction <= 0) {
            if (config.getConfiguration().get(OPERATOR_FRACTION) > 0) {
                unavailable = "gets no managed memory: taskmanager.memory.managed.consumer-weights gives the"
                        + " consumer OPERATOR no weight. Give it one (Flink's default: OPERATOR:70,STATE_BACKEND:70,PYTHON:30)";
            }
        } else if ((bytes = mm.computeMemorySize(fraction)) <= 0) {
            unavailable = "gets no managed memory: its slot has " + bytes(mm.getMemorySize())
                    + ". Give the TaskManagers managed memory (taskmanager.memory.managed.size or"
                    + " taskmanager.memory.managed.fraction)";
        } else {
            try {
                mm.reserveMemory(owner, bytes);
            } catch (MemoryReservationException e) {
                unavailable = "cannot reserve its " + bytes(bytes) + " of managed memory (" + percent(fraction)
                        + " of its slot's " + bytes(mm.getMemorySize()) + "): " + e.getMessage();
            }
        }
        if (unavailable == null && bytes > 0) {
            track(bytes, 0);
            return new ManagedMemoryBudget(owner, mm, policy, bytes, fraction);
        }
        if (unavailable != null) {
            String why = "Ferry's native operator " + name + " " + unavailable;
            if (policy == OverBudget.FAIL) {
                throw new FerryException(FerryException.ENOMEM, why + ", or set " + FerryOptions.MEMORY_WEIGHT.key()
                        + ": 0 to run native operators outside Flink's memory budget.");
            }
            LOG.warn("{}. It runs outside Flink's memory budget ({}: {}).",
                    why, FerryOptions.MEMORY_OVER_BUDGET.key(), policy);
        }
        track(0, 1);
        return new ManagedMemoryBudget(owner, mm, policy, 0, 0);
    }
    /** The bytes reserved; 0 for an unbudgeted operator. */
    long bytes() {
        return bytes;
    }

    /**
     * Acts as {@link FerryOptions#MEMORY_OVER_BUDGET} says when the operator's memory exceeds its
     * budget: {@code keys} keys in {@code stateBytes} bytes of Go state, plus {@code batchBytes}
     * of Arrow batches on the Java side. FAIL throws; WARN logs once and lifts Go's soft limit.
     */
    void check(String name, long keys, long stateBytes, long batchBytes) {
        if (bytes == 0 || over || stateBytes + batchBytes <= bytes) {
            return;
        }
        String why = "Ferry's native operator " + name
                + " needs more memory than its share of the slot's managed memory: " + keys + " keys in "
                + bytes(stateBytes) + " of state and " + bytes(batchBytes) + " of batches exceed its "
                + bytes(bytes) + " (" + percent(fraction) + " of the slot's " + bytes(memoryManager.getMemorySize())
                + "). Raise taskmanager.memory.managed.size (or taskmanager.memory.managed.fraction), give native"
                + " operators a larger share with " + FerryOptions.MEMORY_WEIGHT.key()
                + ", raise the parallelism, or bound the state with table.exec.state.ttl.";
        if (overBudget == OverBudget.FAIL) {
            throw new FerryException(FerryException.ENOMEM, why);
        }
        LOG.warn("{} It keeps running beyond its share ({}: {}); Go's soft memory limit is lifted until it closes.",
                why, FerryOptions.MEMORY_OVER_BUDGET.key(), overBudget);
        over = true;
        track(0, 1);
    }

    /** Releases the reservation and lowers Go's soft limit again; once, on every exit path. */
    void release() {
        if (released) {
            return;
        }
        released = true;
        if (bytes > 0) {
            try {
                memoryManager.releaseMemory(owner, bytes);
            } finally { // also when the slot's MemoryManager is already shut down
                track(-bytes, over ? -1 : 0);
            }
        } else {
            track(0, -1);
        }
    }

    /**
     * The Go soft limit this process's open native operators ask for: their budgets plus {@link
     * #GO_BASE_BYTES}; Long.MAX_VALUE (none) while one unbudgeted or over its budget is open, or
     * none is.
     */
    static synchronized long goLimitBytes() {
        return unbudgeted > 0 || budgeted == 0 ? Long.MAX_VALUE : budgeted + GO_BASE_BYTES;
    }

    private static synchronized void track(long budgetDelta, int unbudgetedDelta) {
        long before = goLimitBytes();
        budgeted += budgetDelta;
        unbudgeted += unbudgetedDelta;
        long after = goLimitBytes();
        if (after != before) {
            NativeLibrary.load().setMemoryLimit(after);
        }
    }

    private static String bytes(long n) {
        return n < (1L << 20)
                ? String.format(Locale.ROOT, "%.1f KiB", n / 1024.0)
                : String.format(Locale.ROOT, "%.1f MiB", n / (double) (1L << 20));
    }

    private static String percent(double fraction) {
        return String.format(Locale.ROOT, "%.1f %%", fraction * 100);
    }
}
