package io.ferrystream.ferry.kinds.groupaggregate;

import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateSpec.Call;
import io.ferrystream.ferry.operators.FrameReadingSpec;
import io.ferrystream.ferry.operators.NativeSpec;

import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.List;

/**
 * What the specs of the aggregates that merge partial rows share ({@link GlobalGroupAggregateSpec},
 * {@link IncrementalGroupAggregateSpec}): one input, Flink's partial rows whole with the key's
 * fields leading; the calls of Flink's AggregateInfoList, their arguments projected onto the local
 * aggregate's input they read ({@code local_input}); whether the input retracts; the idle-state
 * TTL. Either reads rows, or frames of the columnar exchange ({@link FrameReadingSpec}).
 */
abstract class MergingAggregateSpec extends NativeSpec implements FrameReadingSpec {
    private static final long serialVersionUID = 1L;

    private final Input localInput;
    private final List<Call> calls;
    final boolean needRetraction;
    /** Idle-state retention in ms; 0 or less: none. */
    final long stateTtlMs;

    /**
     * @param inputType Flink's input row type: keyFields grouping fields, then the calls'
     *     accumulator fields (and, incremental, the DISTINCT maps)
     * @param localInputType the row type of the local aggregate's input the calls' arguments index
     * @param calls the calls of Flink's AggregateInfoList (count1 included); their FILTER fields
     *     are ignored (FILTER matters only where rows fold, in the local aggregate)
     */
    MergingAggregateSpec(String kind, String name, RowType inputType, int keyFields, RowType localInputType,
            List<Call> calls, boolean needRetraction, long stateTtlMs) {
        super(kind, name, List.of(Input.whole(inputType, Input.firstFields(keyFields))));
        ProjectedCalls local = ProjectedCalls.ofLocalInput(localInputType, calls);
        this.localInput = local.input;
        this.calls = local.calls;
        this.needRetraction = needRetraction;
        this.stateTtlMs = stateTtlMs;
    }

    /** {@code spec} reading frames of {@code frameBundleSize} rows a bundle (0: rows). */
    MergingAggregateSpec(MergingAggregateSpec spec, long frameBundleSize) {
        super(spec, frameBundleSize);
        this.localInput = spec.localInput;
        this.calls = spec.calls;
        this.needRetraction = spec.needRetraction;
        this.stateTtlMs = spec.stateTtlMs;
    }

    /**
     * The parameters every merging aggregate starts with (docs/abi.md): {@code local_input}, the
     * fields' name, type and nullability, then {@code aggs}.
     */
    final void writeLocalInputAndCalls(ObjectNode params) {
        var local = params.putArray("local_input");
        for (RowType.RowField f : localInput.type().getFields()) {
            LogicalType t = f.getType();
            local.addObject()
                    .put("name", f.getName())
                    .put("type", ArrowTypes.specTypeOf(t.copy(true)))
                    .put("nullable", ArrowTypes.carried(t).isNullable());
        }
        GroupAggregateSpec.writeCalls(params.putArray("aggs"), calls);
    }
}
