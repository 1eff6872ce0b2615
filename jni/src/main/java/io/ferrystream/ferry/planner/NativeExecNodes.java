package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.operators.Batching;

import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.planner.plan.utils.MinibatchUtil;

/** What the exec nodes of every native kind decide alike. */
final class NativeExecNodes {
    private NativeExecNodes() {}

    /**
     * The batching of a native operator: with {@code bundles} (the kind replaces Flink's mini-batch
     * operator, whose results depend on where a bundle ends) one batch per bundle of {@code
     * table.exec.mini-batch.size} rows; otherwise {@code ferry.batch.size} and {@code
     * ferry.batch.max-delay}.
     */
    static Batching batching(ReadableConfig config, boolean bundles) {
        return bundles
                ? Batching.bundles(MinibatchUtil.miniBatchSize(config))
                : Batching.of(config.get(FerryOptions.BATCH_SIZE), config.get(FerryOptions.BATCH_MAX_DELAY).toMillis());
    }
}
