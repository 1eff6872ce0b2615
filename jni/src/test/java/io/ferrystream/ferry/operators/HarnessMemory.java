package io.ferrystream.ferry.operators;

import org.apache.flink.core.memory.ManagedMemoryUseCase;
import org.apache.flink.streaming.util.AbstractStreamOperatorTestHarness;

/**
 * Flink's test harness gives every operator the managed-memory use case OPERATOR over a 3 MiB
 * memory manager, so a native operator's budget there is 1.5 MiB (docs/state.md#memory). Tests and
 * benchmarks whose state is larger run the operator outside the budget, as a TaskManager with
 * managed memory to spare runs it; {@code ManagedMemoryTest} tests the budget itself.
 */
public final class HarnessMemory {
    private HarnessMemory() {}

    /** Gives the harness's operator no fraction of managed memory: unbudgeted. Before setup. */
    public static <H extends AbstractStreamOperatorTestHarness<?>> H outsideBudget(H harness) {
        harness.getStreamConfig().setManagedMemoryFractionOperatorOfUseCase(ManagedMemoryUseCase.OPERATOR, 0.0);
        return harness;
    }
}
