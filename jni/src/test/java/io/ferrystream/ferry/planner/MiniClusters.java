package io.ferrystream.ferry.planner;

import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.test.junit5.MiniClusterExtension;

/** The MiniClusters the planner tests run their jobs on. */
final class MiniClusters {
    private MiniClusters() {}

    /**
     * Two TaskManagers of two slots each: four parallel subtasks over two TaskManagers, so data
     * crosses real network channels between them.
     */
    static MiniClusterExtension twoByTwo() {
        return new MiniClusterExtension(
                new MiniClusterResourceConfiguration.Builder()
                        .setNumberTaskManagers(2)
                        .setNumberSlotsPerTaskManager(2)
                        .build());
    }
}
