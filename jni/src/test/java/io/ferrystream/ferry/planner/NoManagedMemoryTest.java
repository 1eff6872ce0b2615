package io.ferrystream.ferry.planner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.operators.AbstractNativeOperator;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.TaskManagerOptions;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.ExceptionUtils;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.util.Map;

/**
 * A TaskManager without managed memory, as heap-backend clusters are often sized: by default the
 * native operator runs outside Flink's memory budget (as the heap backend's state would), and
 * {@code ferry.memory.over-budget: FAIL} fails it saying what to configure (docs/state.md#memory).
 */
class NoManagedMemoryTest {
    @RegisterExtension
    static final MiniClusterExtension CLUSTER = new MiniClusterExtension(
            new MiniClusterResourceConfiguration.Builder()
                    .setNumberTaskManagers(1)
                    .setNumberSlotsPerTaskManager(1)
                    .setConfiguration(new Configuration().set(TaskManagerOptions.MANAGED_MEMORY_SIZE, MemorySize.ZERO))
                    .build());

    @Test
    void theOperatorRunsUnbudgetedByDefault() throws Exception {
        long opened = AbstractNativeOperator.openedCount();
        TableResult result = ManagedMemoryTest.env(Map.of(), 1000, 5000).executeSql(ManagedMemoryTest.QUERY);
        long rows = 0;
        try (CloseableIterator<Row> it = result.collect()) {
            for (; it.hasNext(); rows++) {
                it.next();
            }
        }
        assertTrue(AbstractNativeOperator.openedCount() > opened, "the GROUP BY ran natively");
        // 1000 inserts, then 4000 updates of two rows each
        assertEquals(1000 + 2 * 4000, rows);
    }

    @Test
    void failSaysWhatToConfigure() {
        Map<String, String> failing = Map.of(FerryOptions.MEMORY_OVER_BUDGET.key(), "FAIL");
        Exception e = assertThrows(Exception.class,
                () -> ManagedMemoryTest.env(failing, 10, 10).executeSql("INSERT INTO out_ " + ManagedMemoryTest.QUERY).await());
        String why = ExceptionUtils.stringifyException(e);
        assertTrue(why.contains("gets no managed memory: its slot has 0.0 KiB. Give the TaskManagers managed memory"
                + " (taskmanager.memory.managed.size or taskmanager.memory.managed.fraction), or set ferry.memory.weight: 0"), why);
    }
}
