package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;

import org.apache.calcite.rel.RelDistribution;
import org.apache.calcite.rel.RelNode;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalExchange;

import java.util.List;

/**
 * Where Ferry's optimizer program puts the columnar exchange: on Flink's hash exchange from a
 * native producer whose kind writes frames ({@link NativeKind#writesFrames}: the local aggregate,
 * the incremental aggregate of a split DISTINCT) to the native consumer it feeds whose kind reads
 * them ({@link NativeKind#frameKeys}: the global aggregate, the incremental aggregate), hashing
 * exactly the consumer's key fields (docs/operators/group-by.md#the-columnar-exchange). Anywhere
 * else Flink's exchange stays as it is; between two native nodes that cannot use it, EXPLAIN says
 * why ({@link ColumnarExchangeRel}).
 */
final class ColumnarExchanges {
    private ColumnarExchanges() {}

    /** {@code consumer} with its input exchange made columnar where it can be; else {@code consumer}. */
    static RelNode apply(RelNode consumer, ReadableConfig config) {
        int[] keys = frameKeys(consumer);
        if (keys == null || consumer.getInputs().size() != 1) {
            return consumer;
        }
        RelNode input = consumer.getInput(0);
        if (input.getClass() != StreamPhysicalExchange.class) {
            return consumer;
        }
        StreamPhysicalExchange exchange = (StreamPhysicalExchange) input;
        RelNode producer = exchange.getInput();
        if (!(producer instanceof NativeCandidate)) {
            return consumer;
        }
        Verdict made = ((NativeCandidate) producer).verdict();
        if (!made.isNative() || !made.kind().writesFrames()) {
            return consumer;
        }
        String reason = rowsReason(exchange.getDistribution(), keys, config);
        RelNode columnar = new ColumnarExchangeRel(
                exchange.getCluster(), exchange.getTraitSet(), producer, exchange.getDistribution(), reason);
        return consumer.copy(consumer.getTraitSet(), List.of(columnar));
    }

    /** The key fields a native consumer of the columnar exchange reads frames by; null for any other node. */
    private static int[] frameKeys(RelNode node) {
        if (!(node instanceof NativeCandidate)) {
            return null;
        }
        Verdict verdict = ((NativeCandidate) node).verdict();
        return verdict.isNative() ? verdict.kind().frameKeysOf(node) : null;
    }

    /** Why the exchange keeps Flink's rows, or null when it can carry frames. */
    static String rowsReason(RelDistribution distribution, int[] grouping, ReadableConfig config) {
        if (!config.get(FerryOptions.ENABLED) || !config.get(FerryOptions.EXCHANGE_COLUMNAR)) {
            return "disabled by " + FerryOptions.EXCHANGE_COLUMNAR.key() + "=false";
        }
        if (config.get(CheckpointingOptions.ENABLE_UNALIGNED)) {
            return "unaligned checkpoints (a frame holds many key groups, which recovering in-flight data cannot split)";
        }
        if (distribution.getType() == RelDistribution.Type.SINGLETON) {
            return "a single-channel exchange (no grouping fields: one partial row per bundle)";
        }
        List<Integer> keys = distribution.getKeys();
        boolean same = distribution.getType() == RelDistribution.Type.HASH_DISTRIBUTED && keys.size() == grouping.length;
        for (int i = 0; same && i < grouping.length; i++) {
            same = keys.get(i) == grouping[i];
        }
        if (!same) {
            return "the exchange hashes " + distribution + ", not the consumer's key fields";
        }
        return null;
    }
}
