package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.FerryOptions;

import org.apache.calcite.rel.RelDistribution;
import org.apache.calcite.rel.RelNode;
import org.apache.flink.configuration.CheckpointingOptions;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalExchange;

import java.util.List;

/**
 * Where Ferry's optimizer program puts the columnar exchange: on Flink's hash exchange between a
 * native local aggregate and the native global aggregate it feeds, hashing exactly the partial
 * rows' grouping fields (docs/operators/group-by.md#the-columnar-exchange). Anywhere else Flink's
 * exchange stays as it is; between two native nodes that cannot use it, EXPLAIN says why.
 */
final class ColumnarExchanges {
    private ColumnarExchanges() {}

    /** {@code global} with its input exchange made columnar where it can be; else {@code global}. */
    static RelNode apply(RelNode global, ReadableConfig config) {
        if (!(global instanceof FerryStreamPhysicalGlobalGroupAggregate)
                || ((FerryStreamPhysicalGlobalGroupAggregate) global).fallbackReason().isPresent()) {
            return global;
        }
        FerryStreamPhysicalGlobalGroupAggregate agg = (FerryStreamPhysicalGlobalGroupAggregate) global;
        RelNode input = agg.getInput();
        if (input.getClass() != StreamPhysicalExchange.class) {
            return global;
        }
        StreamPhysicalExchange exchange = (StreamPhysicalExchange) input;
        RelNode local = exchange.getInput();
        if (!(local instanceof FerryStreamPhysicalLocalGroupAggregate)
                || ((FerryStreamPhysicalLocalGroupAggregate) local).fallbackReason().isPresent()) {
            return global;
        }
        String reason = rowsReason(exchange.getDistribution(), agg.grouping(), config);
        RelNode columnar = new FerryStreamPhysicalColumnarExchange(
                exchange.getCluster(), exchange.getTraitSet(), local, exchange.getDistribution(), reason);
        return agg.copy(agg.getTraitSet(), List.of(columnar));
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
            return "the exchange hashes " + distribution + ", not the grouping fields";
        }
        return null;
    }
}
