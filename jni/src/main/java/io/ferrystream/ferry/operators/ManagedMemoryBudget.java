package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.nativelib.FerryException;
import io.ferrystream.ferry.nativelib.NativeLibrary;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.core.memory.ManagedMemoryUseCase;
import org.apache.flink.runtime.execution.Environment;
import org.apache.flink.runtime.memory.MemoryManager;
import org.apache.flink.runtime.memory.MemoryReservationException;
import org.apache.flink.streaming.api.graph.StreamConfig;

import java.util.Locale;

/**
 * A native operator's share of its slot's managed memory: the bytes Flink's {@link MemoryManager}
 * computes for the operator's fraction of use case {@link ManagedMemoryUseCase#OPERATOR} (the
 * planner declares {@link FerryOptions#MEMORY_WEIGHT} as its weight), reserved from that
 * MemoryManager when the operator initializes and released when it closes, so Flink's {@code
 * Status.Flink.Memory.Managed.Used} counts it. Go holds the operator's state outside the JVM, in
 * the memory Flink set aside as managed; the state and the operator's Arrow batches must fit the
 * budget: {@link #check} fails the task when they would not, naming what to raise
 * (docs/state.md#memory).
 *
 * <p>The Go runtime's soft limit ({@code ferry_init}'s {@code memory_limit_bytes}) is the sum of
 * the budgets of the process's open native operators plus {@link #GO_BASE_BYTES}, so Go collects
 * garbage before its heap grows past what Flink budgeted. An operator without a fraction of the
 * slot (its transformation declared no weight: {@code ferry.memory.weight: 0}) is unbudgeted:
 * nothing is reserved or checked, and while one is open Go has no soft limit.
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

    /** Sum of the budgets of the open budgeted operators of this process. Guarded by the class. */
    private static long budgeted;
    /** Open unbudgeted operators of this process. Guarded by the class. */
    private static int unbudgeted;

    private final Object owner;
    private final MemoryManager memoryManager;
    /** Bytes reserved; 0 when unbudgeted. */
    private final long bytes;
    /** The operator's fraction of the slot's managed memory; 0 when unbudgeted. */
    private final double fraction;
    private boolean released;

    private ManagedMemoryBudget(Object owner, MemoryManager memoryManager, long bytes, double fraction) {
        this.owner = owner;
        this.memoryManager = memoryManager;
        this.bytes = bytes;
        this.fraction = fraction;
    }

    /**
     * Reserves the operator's budget from its slot's MemoryManager and raises Go's soft limit by
     * it. Fails, saying what to configure, when the operator has a fraction but the slot has no
     * managed memory for it.
     *
     * @param owner the operator: the owner of the reservation
     * @param name the operator's name, for messages
     */
    static ManagedMemoryBudget reserve(Object owner, String name, Environment env, StreamConfig config) {
        double fraction = config.getManagedMemoryFractionOperatorUseCaseOfSlot(
                ManagedMemoryUseCase.OPERATOR,
                env.getJobConfiguration(),
                env.getTaskManagerInfo().getConfiguration(),
                env.getUserCodeClassLoader().asClassLoader());
        MemoryManager mm = env.getMemoryManager();
        if (fraction <= 0) {
            if (config.getConfiguration().get(OPERATOR_FRACTION) > 0) {
                throw new FerryException(FerryException.ENOMEM, "Ferry's native operator " + name
                        + " gets no managed memory: taskmanager.memory.managed.consumer-weights gives the"
                        + " consumer OPERATOR no weight. Give it one (Flink's default: OPERATOR:70,STATE_BACKEND:70,PYTHON:30),"
                        + " or set " + FerryOptions.MEMORY_WEIGHT.key() + ": 0 to run native operators outside Flink's"
                        + " memory budget.");
            }
            track(0, 1);
            return new ManagedMemoryBudget(owner, mm, 0, 0);
        }
        long bytes = mm.computeMemorySize(fraction);
        if (bytes <= 0) {
            throw new FerryException(FerryException.ENOMEM, "Ferry's native operator " + name
                    + " gets no managed memory: its slot has " + bytes(mm.getMemorySize())
                    + ". Give the TaskManagers managed memory (taskmanager.memory.managed.size or"
                    + " taskmanager.memory.managed.fraction), or set " + FerryOptions.MEMORY_WEIGHT.key()
                    + ": 0 to run native operators outside Flink's memory budget.");
        }
        try {
            mm.reserveMemory(owner, bytes);
        } catch (MemoryReservationException e) {
            throw new FerryException(FerryException.ENOMEM, "Ferry's native operator " + name
                    + " cannot reserve its " + bytes(bytes) + " of managed memory (" + percent(fraction)
                    + " of its slot's " + bytes(mm.getMemorySize()) + "): " + e.getMessage());
        }
        track(bytes, 0);
        return new ManagedMemoryBudget(owner, mm, bytes, fraction);
    }

    /** The bytes reserved; 0 for an unbudgeted operator. */
    long bytes() {
        return bytes;
    }

    /**
     * Fails when the operator's memory exceeds its budget: {@code keys} keys in {@code stateBytes}
     * bytes of Go state, plus {@code batchBytes} of Arrow batches on the Java side.
     */
    void check(String name, long keys, long stateBytes, long batchBytes) {
        if (bytes == 0 || stateBytes + batchBytes <= bytes) {
            return;
        }
        throw new FerryException(FerryException.ENOMEM, "Ferry's native operator " + name
                + " needs more memory than its share of the slot's managed memory: " + keys + " keys in "
                + bytes(stateBytes) + " of state and " + bytes(batchBytes) + " of batches exceed its "
                + bytes(bytes) + " (" + percent(fraction) + " of the slot's " + bytes(memoryManager.getMemorySize())
                + "). Raise taskmanager.memory.managed.size (or taskmanager.memory.managed.fraction), give native"
                + " operators a larger share with " + FerryOptions.MEMORY_WEIGHT.key()
                + ", raise the parallelism, or bound the state with table.exec.state.ttl.");
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
                track(-bytes, 0);
            }
        } else {
            track(0, -1);
        }
    }

    /**
     * The Go soft limit this process's open native operators ask for: their budgets plus {@link
     * #GO_BASE_BYTES}; Long.MAX_VALUE (none) while an unbudgeted one is open or none is.
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
