package io.ferrystream.ferry.kinds.groupaggregate;



import org.apache.calcite.rel.core.AggregateCall;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.plan.utils.AggregateInfoList;
import org.apache.flink.table.planner.plan.utils.AggregateUtil;
import org.apache.flink.table.planner.utils.JavaScalaConversionUtil;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.LogicalTypeRoot;
import org.apache.flink.table.types.logical.RowType;

import javax.annotation.Nullable;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * What the local and global aggregates of a two-phase plan share on the planner side: their
 * calls as the specs list them (Flink's AggregateInfoList, count1 included), the reason both
 * halves stay Flink's when the calls' partial state cannot cross as Arrow columns, and the specs
 * themselves, built by one function each for planning and translation, so the spec Go approved
 * is the spec the operator opens.
 */
final class TwoPhaseAggregates {
    private TwoPhaseAggregates() {}

    /** The name Flink gives the count1 it inserts (AggregateUtil.insertCountStarAggCall). */
    static final String COUNT1 = "_$count1$_";

    /**
     * Flink's AggregateInfoList of a two-phase aggregate over {@code inputType} (the local's
     * input, the global's localAggInputRowType), as StreamExecLocalGroupAggregate and
     * StreamExecGlobalGroupAggregate build it: data views on the heap (the kinds' checks read only
     * indexOfCountStar and countStarInserted), or state-backed as keyed operators keep them in
     * Flink's state ({@code stateBackedViews}, FlinkAccStates).
     */
    static AggregateInfoList infoList(
            FlinkTypeFactory typeFactory,
            RowType inputType,
            AggregateCall[] aggCalls,
            boolean[] aggCallNeedRetractions,
            boolean needRetraction,
            @Nullable Integer indexOfCountStar,
            boolean stateBackedViews) {
        scala.Option<Object> existing = indexOfCountStar == null ? scala.Option.empty() : scala.Option.apply((Object) indexOfCountStar);
        return AggregateUtil.transformToStreamAggregateInfoList(
                typeFactory,
                inputType,
                JavaScalaConversionUtil.toScala(Arrays.asList(aggCalls)),
                aggCallNeedRetractions,
                needRetraction,
                existing,
                stateBackedViews,
                true);
    }

    /** Why a call of the query cannot be native at all, or null (GroupAggregateKind's checks). */
    static String callsReason(AggregateCall[] aggCalls) {
        for (int i = 0; i < aggCalls.length; i++) {
            String reason = GroupAggregateKind.callReason(aggCalls[i]);
            if (reason != null) {
                return "aggs[" + i + "]: " + reason;
            }
        }
        return null;
    }

    /**
     * The spec's calls: the query's calls in order, then count1 when Flink inserted it. Names
     * are the calls' own (only for messages).
     */
    static List<GroupAggregateSpec.Call> calls(
            AggregateCall[] aggCalls, boolean[] aggCallNeedRetractions, boolean needRetraction, AggregateInfoList infos) {
        List<GroupAggregateSpec.Call> calls = new ArrayList<>(aggCalls.length + 1);
        for (int i = 0; i < aggCalls.length; i++) {
            AggregateCall call = aggCalls[i];
            String function = GroupAggregateSpecs.functionName(call);
            if (function == null) {
                throw new IllegalArgumentException("aggs[" + i + "]: aggregate function " + call.getAggregation().getName()
                        + " has no native counterpart");
            }
            int[] args = call.getArgList().stream().mapToInt(Integer::intValue).toArray();
            String name = call.getName() != null ? call.getName() : "agg" + i;
            calls.add(new GroupAggregateSpec.Call(
                    function, args, aggCallNeedRetractions[i], name, call.isDistinct(), call.filterArg));
        }
        if (infos.countStarInserted()) {
            calls.add(new GroupAggregateSpec.Call("COUNT", new int[0], needRetraction, COUNT1));
        }
        return calls;
    }

    /**
     * The call index of the record counter's COUNT(*) (AggregateInfoList's indexOfCountStar), or
     * -1 without one (insert-only input).
     */
    static int countStar(AggregateInfoList infos) {
        return infos.indexOfCountStar().isDefined() ? (Integer) infos.indexOfCountStar().get() : -1;
    }

    /**
     * Why the calls' partial state does not cross between the two halves, or null. The text is
     * the library's (agg.PartialSupport), so both halves, decided one after the other, show the
     * same reason. The MapViews of DISTINCT calls and of MIN/MAX with retraction cross
     * (DistinctViews, MinMaxAccumulators), except where Flink's global folds a DISTINCT call's
     * values in a java.util.HashMap's order and the result depends on it (floating-point and
     * DECIMAL sums, MIN/MAX over floats, LISTAGG's concatenation); LISTAGG with retraction's
     * ListViews do not cross yet.
     * FerryExplainTest and TwoPhaseSqlDifferentialTest check that the library says the same.
     *
     * @param argTypes the row the calls' arguments index
     */
    static String partialStateReason(List<GroupAggregateSpec.Call> calls, RowType argTypes) {
        for (int i = 0; i < calls.size(); i++) {
            GroupAggregateSpec.Call c = calls.get(i);
            boolean minMax = c.function.equals("MIN") || c.function.equals("MAX");
            if (c.function.equals("LISTAGG") && c.retract) {
                return "aggs[" + i + "]: LISTAGG with retraction in two phases: its ListView partial state does not cross yet";
            }
            if (!c.distinct || c.function.equals("COUNT") || c.args.length == 0) {
                continue;
            }
            LogicalType arg = argTypes.getTypeAt(c.args[0]);
            LogicalTypeRoot root = arg.getTypeRoot();
            if (c.function.equals("LISTAGG")) {
                return "aggs[" + i + "]: LISTAGG(DISTINCT): the global aggregate concatenates the values in a java.util.HashMap's"
                        + " order: not native yet";
            }
            if (root == LogicalTypeRoot.FLOAT || root == LogicalTypeRoot.DOUBLE || (root == LogicalTypeRoot.DECIMAL && !minMax)) {
                String fn = c.function.equals("SUM0") ? "$SUM0" : c.function;
                return "aggs[" + i + "]: " + fn + "(DISTINCT) over " + arg.copy(true).asSummaryString()
                        + ": the global aggregate folds the values in a java.util.HashMap's order: not native yet";
            }
        }
        return null;
    }

    /**
     * Why the record counter Flink reads is not one Go keeps, or null. Flink's global aggregate
     * counts records in the first accumulator field of the call at indexOfCountStar (getLong):
     * a COUNT(*), or after a split DISTINCT over retracting input the final aggregate's sum of
     * partial counts ($SUM0 over BIGINT), both of which Go reads (agg.isCountSum).
     *
     * @param argTypes the row the calls' arguments index
     */
    static String recordCounterReason(List<GroupAggregateSpec.Call> calls, int countStar, RowType argTypes) {
        if (countStar < 0) {
            return null;
        }
        GroupAggregateSpec.Call c = calls.get(countStar);
        if (c.function.equals("COUNT") && c.args.length == 0 && !c.distinct && c.filter < 0) {
            return null;
        }
        if (c.function.equals("SUM0") && c.args.length == 1 && !c.distinct && c.filter < 0
                && argTypes.getTypeAt(c.args[0]).getTypeRoot() == LogicalTypeRoot.BIGINT) {
            return null;
        }
        String fn = c.function.equals("SUM0") ? "$SUM0" : c.function;
        return "aggs[" + countStar + "]: " + fn + " as the record counter: not native yet";
    }

    /**
     * A two-phase aggregate's calls derived from Flink's: its AggregateInfoList ({@link #infoList},
     * data views on the heap) and the spec's calls ({@link #calls}), arguments indexing the rows
     * the calls read. Only for calls {@link #callsReason} accepts.
     */
    record PartialCalls(AggregateInfoList infos, List<GroupAggregateSpec.Call> calls) {
        static PartialCalls of(FlinkTypeFactory typeFactory, RowType argType, AggregateCall[] aggCalls,
                boolean[] aggCallNeedRetractions, boolean needRetraction, @Nullable Integer indexOfCountStar) {
            AggregateInfoList infos =
                    infoList(typeFactory, argType, aggCalls, aggCallNeedRetractions, needRetraction, indexOfCountStar, false);
            return new PartialCalls(infos, TwoPhaseAggregates.calls(aggCalls, aggCallNeedRetractions, needRetraction, infos));
        }
    }

    /** The global aggregate's spec; {@code calls} read {@code localAggInputRowType}. */
    static GlobalGroupAggregateSpec globalSpec(
            String name,
            RowType inputType,
            int[] grouping,
            RowType localAggInputRowType,
            PartialCalls calls,
            boolean needRetraction,
            boolean generateUpdateBefore,
            long stateTtlMs) {
        return new GlobalGroupAggregateSpec(
                name,
                inputType,
                grouping.length,
                localAggInputRowType,
                calls.calls(),
                needRetraction,
                countStar(calls.infos()),
                calls.infos().countStarInserted(),
                generateUpdateBefore,
                stateTtlMs);
    }

    /** Whether grouping is 0, 1, …: the global aggregate's key leads its partial rows. */
    static boolean leadingKeys(int[] grouping) {
        for (int i = 0; i < grouping.length; i++) {
            if (grouping[i] != i) {
                return false;
            }
        }
        return true;
    }
}
