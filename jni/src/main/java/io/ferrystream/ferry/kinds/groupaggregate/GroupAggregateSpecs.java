package io.ferrystream.ferry.kinds.groupaggregate;


import org.apache.calcite.rel.core.AggregateCall;
import org.apache.calcite.sql.SqlKind;
import org.apache.flink.table.functions.BuiltInFunctionDefinitions;
import org.apache.flink.table.types.logical.RowType;

import java.util.ArrayList;
import java.util.List;

/**
 * Builds a {@link GroupAggregateSpec} from the arguments Flink's {@code StreamExecGroupAggregate}
 * receives. The planner's support check and the translation both use this one function, so the spec
 * Go approved at plan time is the spec the operator opens at run time.
 */
public final class GroupAggregateSpecs {
    private GroupAggregateSpecs() {}

    /**
     * The spec function name of a call ({@code COUNT SUM SUM0 AVG MIN MAX FIRST_VALUE
     * LAST_VALUE LISTAGG WELFORD_M2}), or null when the call's function is none of them ({@code
     * SINGLE_VALUE}, {@code COLLECT}, UDAFs, ...).
     */
    public static String functionName(AggregateCall call) {
        if (call.getAggregation().getName().equals(BuiltInFunctionDefinitions.INTERNAL_WELFORD_M2.getName())) {
            return "WELFORD_M2"; // STDDEV_POP/_SAMP, VAR_POP/_SAMP reduce to it (AggregateReduceFunctionsRule)
        }
        SqlKind kind = call.getAggregation().getKind();
        switch (kind) {
            case COUNT:
            case SUM:
            case AVG:
            case MIN:
            case MAX:
            case FIRST_VALUE:
            case LAST_VALUE:
            case LISTAGG:
            case SINGLE_VALUE:
                return kind.name();
            case SUM0: // Calcite's $SUM0, e.g. from AggregateReduceFunctionsRule's SUM/AVG rewrite
                return "SUM0";
            default:
                return null;
        }
    }

    /**
     * @param name the operator's description
     * @param inputType Flink's input row type of the aggregate
     * @param outputType the aggregate's output row type: the grouping keys, then one field per call
     * @param stateTtlMs the idle-state retention, as {@code StateMetadata} resolves it
     * @param miniBatch whether Flink would build its mini-batch aggregate (MiniBatchGroupAggFunction)
     * @throws IllegalArgumentException for a call {@link #functionName} does not know
     */
    static GroupAggregateSpec build(
            String name,
            RowType inputType,
            RowType outputType,
            int[] grouping,
            AggregateCall[] aggCalls,
            boolean[] aggCallNeedRetractions,
            boolean needRetraction,
            boolean generateUpdateBefore,
            long stateTtlMs,
            boolean miniBatch) {
        List<GroupAggregateSpec.Call> calls = calls(outputType, grouping.length, aggCalls, aggCallNeedRetractions);
        return new GroupAggregateSpec(
                name, inputType, grouping, calls, needRetraction, generateUpdateBefore, stateTtlMs, miniBatch);
    }

    /**
     * The spec's calls of Flink's {@code aggCalls}, each named by its output field (the fields of
     * {@code outputType} from {@code firstOutput} on, in call order).
     *
     * @throws IllegalArgumentException for a call {@link #functionName} does not know
     */
    public static List<GroupAggregateSpec.Call> calls(
            RowType outputType, int firstOutput, AggregateCall[] aggCalls, boolean[] aggCallNeedRetractions) {
        List<GroupAggregateSpec.Call> calls = new ArrayList<>(aggCalls.length);
        for (int i = 0; i < aggCalls.length; i++) {
            AggregateCall call = aggCalls[i];
            String function = functionName(call);
            if (function == null) {
                throw new IllegalArgumentException("aggs[" + i + "]: aggregate function " + call.getAggregation().getName()
                        + " has no native counterpart");
            }
            int[] args = call.getArgList().stream().mapToInt(Integer::intValue).toArray();
            String fieldName = outputType.getFieldNames().get(firstOutput + i);
            calls.add(new GroupAggregateSpec.Call(
                    function, args, aggCallNeedRetractions[i], fieldName, call.isDistinct(), call.filterArg));
        }
        return calls;
    }
}
