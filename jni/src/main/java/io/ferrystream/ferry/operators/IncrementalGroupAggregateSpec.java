package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.operators.GroupAggregateSpec.Call;

import org.apache.flink.table.types.logical.RowType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.ArrayList;
import java.util.List;

/**
 * The spec of the incremental aggregate of a split DISTINCT under mini-batch (kind {@value
 * #KIND}): Flink's {@code KeyedMapBundleOperator} running {@code
 * MiniBatchIncrementalGroupAggFunction}. Its one input is the partial rows of the local aggregate
 * below it, whole: the partial grouping fields (the key, leading), then every call's accumulator
 * fields and the DISTINCT maps. Its calls are the partial aggregate's {@code AggregateInfoList} in
 * order (count1 included), their arguments indexing the fields of the local aggregate's input
 * they read ({@code local_input}); {@code final_keys} index the partial key and pick the key of
 * each output row (docs/group-aggregate.md#the-incremental-aggregate).
 */
public final class IncrementalGroupAggregateSpec extends NativeSpec {
    private static final long serialVersionUID = 1L;

    /** The library's name of this operator kind. */
    public static final String KIND = "incremental_group_aggregate";

    private final Input localInput;
    private final List<Call> calls;
    private final int[] finalKeys;
    private final boolean needRetraction;
    private final long stateTtlMs;

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
        super(KIND, name, List.of(Input.of(inputType, GlobalGroupAggregateSpec.identity(inputType.getFieldCount()),
                GlobalGroupAggregateSpec.identity(keyFields), new int[0])));
        List<Call> unfiltered = new ArrayList<>(calls.size());
        for (Call c : calls) {
            unfiltered.add(new Call(c.function, c.args, c.retract, c.name, c.distinct, -1));
        }
        ProjectedCalls local = ProjectedCalls.of(localInputType, new int[0], unfiltered, false);
        this.localInput = local.input;
        this.calls = local.calls;
        this.finalKeys = finalKeys.clone();
        this.needRetraction = needRetraction;
        this.stateTtlMs = stateTtlMs;
    }

    /**
     * The incremental aggregate's parameters (docs/abi.md): {@code local_input}, {@code aggs},
     * {@code final_keys}, {@code need_retraction}, {@code state_ttl_ms}.
     */
    @Override
    protected void writeParams(ObjectNode params) {
        GlobalGroupAggregateSpec.writeLocalInput(params.putArray("local_input"), localInput.type());
        GroupAggregateSpec.writeCalls(params.putArray("aggs"), calls);
        ArrayNode keys = params.putArray("final_keys");
        for (int k : finalKeys) {
            keys.add(k);
        }
        params.put("need_retraction", needRetraction);
        params.put("state_ttl_ms", Math.max(0, stateTtlMs));
    }
}
