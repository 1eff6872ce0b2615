package io.ferrystream.ferry.kinds.groupaggregate;

import io.ferrystream.ferry.exchange.ExchangeTarget;
import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateSpec.Call;
import io.ferrystream.ferry.operators.FrameReadingSpec;
import io.ferrystream.ferry.nativelib.NativeOperator;
import io.ferrystream.ferry.operators.FrameWritingSpec;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.table.types.logical.RowType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.List;

/**
 * The spec of the incremental aggregate of a split DISTINCT under mini-batch (kind {@value
 * #KIND}): Flink's {@code KeyedMapBundleOperator} running {@code
 * MiniBatchIncrementalGroupAggFunction}. Its one input is the partial rows of the local aggregate
 * below it, whole: the partial grouping fields (the key, leading), then every call's accumulator
 * fields and the DISTINCT maps. Its calls are the partial aggregate's {@code AggregateInfoList} in
 * order (count1 included), their arguments indexing the fields of the local aggregate's input
 * they read ({@code local_input}); {@code final_keys} index the partial key and pick the key of
 * each output row (docs/group-aggregate.md#the-incremental-aggregate). Either end can be Ferry's
 * columnar exchange: it then reads frames of the partial rows ({@link #withFrames}) or writes
 * frames of its output rows routed by the final key ({@link #openWritingFrames}).
 */
public final class IncrementalGroupAggregateSpec extends MergingAggregateSpec implements FrameWritingSpec {
    private static final long serialVersionUID = 1L;

    /** The library's name of this operator kind. */
    public static final String KIND = "incremental_group_aggregate";

    private final int[] finalKeys;
    /** The consumer's parallelism and max parallelism when the output is frames; 0: rows. */
    private final int exchangeParallelism;
    private final int exchangeMaxParallelism;

    /**
     * @param name the operator's description, used in messages
     * @param inputType Flink's input row type: keyFields partial grouping fields, then the
     *     calls' accumulator fields and the DISTINCT maps
     * @param localInputType Flink's partialLocalAggInputRowType
     * @param calls the calls of Flink's partial AggregateInfoList (count1 included), arguments
     *     indexing localInputType; their FILTER fields are ignored
     * @param finalKeys Flink's finalAggGrouping: positions in the partial key
     */
    public IncrementalGroupAggregateSpec(
            String name,
            RowType inputType,
            int keyFields,
            RowType localInputType,
            List<Call> calls,
            int[] finalKeys,
            boolean needRetraction,
            long stateTtlMs) {
        super(KIND, name, inputType, keyFields, localInputType, calls, needRetraction, stateTtlMs);
        this.finalKeys = finalKeys.clone();
        this.exchangeParallelism = 0;
        this.exchangeMaxParallelism = 0;
    }

    private IncrementalGroupAggregateSpec(IncrementalGroupAggregateSpec s, long frameBundleSize, int exchangeParallelism, int exchangeMaxParallelism) {
        super(s, frameBundleSize);
        this.finalKeys = s.finalKeys;
        this.exchangeParallelism = exchangeParallelism;
        this.exchangeMaxParallelism = exchangeMaxParallelism;
    }

    @Override
    public IncrementalGroupAggregateSpec withFrames(long bundleSize) {
        return new IncrementalGroupAggregateSpec(this, FrameReadingSpec.checkBundleSize(bundleSize), exchangeParallelism,
                exchangeMaxParallelism);
    }

    /**
     * This spec writing its output rows as frames of the columnar exchange, routed by the final
     * key to {@code parallelism} channels of a consumer of {@code maxParallelism} key groups
     * (docs/abi.md#frames); it is still opened with its own task's max parallelism and range.
     */
    public IncrementalGroupAggregateSpec forExchange(int parallelism, int maxParallelism) {
        if (parallelism < 1 || maxParallelism < parallelism) {
            throw new IllegalArgumentException("an exchange of " + parallelism + " channels for " + maxParallelism + " key groups");
        }
        return new IncrementalGroupAggregateSpec(this, frameBundleSize(), parallelism, maxParallelism);
    }

    /** Opened for the task's own key groups, writing frames for {@code target} ({@link #forExchange}). */
    @Override
    public NativeOperator openWritingFrames(ExchangeTarget target, int maxParallelism, KeyGroupRange range, BufferAllocator allocator) {
        return forExchange(target.parallelism, target.maxParallelism)
                .open(maxParallelism, range.getStartKeyGroup(), range.getEndKeyGroup(), allocator);
    }

    /**
     * The incremental aggregate's parameters (docs/abi.md): {@code local_input}, {@code aggs},
     * {@code final_keys}, {@code need_retraction}, {@code state_ttl_ms}; {@code frames} when it
     * reads frames, {@code exchange} when it writes them.
     */
    @Override
    protected void writeParams(ObjectNode params) {
        writeLocalInputAndCalls(params);
        ArrayNode keys = params.putArray("final_keys");
        for (int k : finalKeys) {
            keys.add(k);
        }
        params.put("need_retraction", needRetraction);
        params.put("state_ttl_ms", Math.max(0, stateTtlMs));
        if (exchangeParallelism > 0) {
            params.putObject("exchange").put("parallelism", exchangeParallelism).put("max_parallelism", exchangeMaxParallelism);
        }
    }
}
