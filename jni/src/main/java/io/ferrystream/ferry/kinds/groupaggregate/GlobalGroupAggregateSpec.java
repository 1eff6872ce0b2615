package io.ferrystream.ferry.kinds.groupaggregate;

import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateSpec.Call;
import io.ferrystream.ferry.operators.FrameReadingSpec;

import org.apache.flink.table.types.logical.RowType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.List;

/**
 * The spec of the global half of a two-phase aggregate (kind {@value #KIND}): Flink's {@code
 * KeyedMapBundleOperator} running {@code MiniBatchGlobalGroupAggFunction}. Its one input is
 * Flink's partial row, whole: the grouping fields (the key, leading), then every call's
 * accumulator fields, exactly as Flink's local (or incremental) aggregate writes them. Its calls
 * are Flink's {@code AggregateInfoList} in order, count1 included, their arguments indexing the
 * fields of the local aggregate's input they read ({@code local_input}, a projection of Flink's
 * {@code localAggInputRowType}): the argument types pick each call's accumulator. FILTER and the
 * strings' Java origin only matter where rows fold, in the local aggregate; they do not cross
 * (docs/group-aggregate.md#the-global-aggregate).
 */
public final class GlobalGroupAggregateSpec extends MergingAggregateSpec {
    private static final long serialVersionUID = 1L;

    /** The library's name of this operator kind. */
    public static final String KIND = "global_group_aggregate";

    private final int countStar;
    private final boolean countStarInserted;
    private final boolean generateUpdateBefore;

    /**
     * @param name the operator's description, used in messages
     * @param inputType Flink's input row type of the global aggregate: keyFields grouping fields,
     *     then the calls' accumulator fields
     * @param localInputType Flink's localAggInputRowType
     * @param calls the calls of Flink's AggregateInfoList (count1 included), arguments indexing
     *     localInputType; their FILTER fields are ignored
     * @param countStar the call index of the record counter's COUNT(*) (AggregateInfoList's
     *     indexOfCountStar), or -1 for insert-only input
     * @param countStarInserted the countStar call is the count1 Flink inserted (not an output
     *     column)
     */
    public GlobalGroupAggregateSpec(
            String name,
            RowType inputType,
            int keyFields,
            RowType localInputType,
            List<Call> calls,
            boolean needRetraction,
            int countStar,
            boolean countStarInserted,
            boolean generateUpdateBefore,
            long stateTtlMs) {
        super(KIND, name, inputType, keyFields, localInputType, calls, needRetraction, stateTtlMs);
        this.countStar = countStar;
        this.countStarInserted = countStarInserted;
        this.generateUpdateBefore = generateUpdateBefore;
    }

    private GlobalGroupAggregateSpec(GlobalGroupAggregateSpec rows, long frameBundleSize) {
        super(rows, frameBundleSize);
        this.countStar = rows.countStar;
        this.countStarInserted = rows.countStarInserted;
        this.generateUpdateBefore = rows.generateUpdateBefore;
    }

    @Override
    public GlobalGroupAggregateSpec withFrames(long bundleSize) {
        return new GlobalGroupAggregateSpec(this, FrameReadingSpec.checkBundleSize(bundleSize));
    }

    /**
     * The global aggregate's parameters (docs/abi.md): {@code local_input}, {@code aggs}, {@code
     * count_star} and {@code count_star_inserted} for retracting input, {@code need_retraction},
     * {@code generate_update_before}, {@code state_ttl_ms}.
     */
    @Override
    protected void writeParams(ObjectNode params) {
        writeLocalInputAndCalls(params);
        if (countStar >= 0) {
            params.put("count_star", countStar);
            params.put("count_star_inserted", countStarInserted);
        }
        params.put("need_retraction", needRetraction);
        params.put("generate_update_before", generateUpdateBefore);
        params.put("state_ttl_ms", Math.max(0, stateTtlMs));
    }
}
