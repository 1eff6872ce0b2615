package io.ferrystream.ferry.kinds.intervaljoin;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.planner.Decision;
import io.ferrystream.ferry.planner.FlinkFields;
import io.ferrystream.ferry.planner.JoinConditions;
import io.ferrystream.ferry.planner.NativeKind;
import io.ferrystream.ferry.planner.NativeSupport;
import io.ferrystream.ferry.planner.NativeTranslation;
import io.ferrystream.ferry.planner.Verdict;
import io.ferrystream.ferry.planner.candidates.IntervalJoinCandidate;

import org.apache.calcite.rel.RelNode;
import org.apache.calcite.rel.RelWriter;
import org.apache.calcite.rel.hint.HintStrategyTable;
import org.apache.flink.api.dag.Transformation;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.streaming.api.transformations.TwoInputTransformation;
import org.apache.flink.table.api.TableException;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.plan.nodes.exec.spec.JoinSpec;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecIntervalJoin;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalIntervalJoin;
import org.apache.flink.table.planner.plan.optimize.program.FlinkOptimizeProgram;
import org.apache.flink.table.planner.plan.optimize.program.StreamOptimizeContext;
import org.apache.flink.table.runtime.operators.join.FlinkJoinType;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.RowType;

import javax.annotation.Nullable;

import java.util.List;
import java.util.Map;

import static org.apache.flink.table.planner.plan.nodes.exec.spec.IntervalJoinSpec.WindowBounds;

/**
 * The interval join kind ({@value IntervalJoinSpec#KIND}): Flink's {@code RowTimeIntervalJoin}
 * and {@code ProcTimeIntervalJoin} run by {@link FerryIntervalJoinOperator}. Native: row-time and
 * processing-time joins of every join type whose condition is the equi-join keys, the time bounds
 * and a residual condition libferry.so evaluates as Flink's generated code does ({@link
 * JoinConditions}), over fields that cross the Arrow boundary. Flink's otherwise, with the reason:
 * a residual condition beyond that subset, a negative window (Flink plans no join operator there),
 * and whatever libferry.so refuses. The operator imports Flink's caches and timers ({@link
 * FlinkIntervalJoinState}).
 *
 * <p>The {@code EARLY_FIRE} hint of Flink's master branch ({@link EarlyFireHint}) belongs to this
 * kind: registered with Flink's hints ({@link #withHints}), recorded before Flink's physical
 * program ({@link #programsBeforePhysical}), carried by the candidate's verdict to EXPLAIN and
 * translation, and its changelog set in the plan ({@link #rewritePlan}, {@link
 * EarlyFireChangelog}). An outer join with the hint has no Flink 2.3 operator to fall back to: it
 * fails with the reason instead ({@link #candidate}, {@link #checkFallback}).
 */
public final class IntervalJoinKind extends NativeKind<StreamPhysicalIntervalJoin, StreamExecIntervalJoin> {
    /** The kill switch of the native interval join. */
    public static final ConfigOption<Boolean> ENABLED =
            FerryOptions.killSwitch("interval-join", "the native interval join (row and processing time)");

    public IntervalJoinKind() {
        super(IntervalJoinSpec.KIND, StreamPhysicalIntervalJoin.class, StreamExecIntervalJoin.class, ENABLED,
                IntervalJoinCandidate::new);
    }

    /** The candidate, carrying the join's {@code EARLY_FIRE} hint; a join the hint makes updating cannot stay Flink's. */
    @Override
    protected RelNode candidate(StreamPhysicalIntervalJoin join, Decision decision) {
        EarlyFireHint.Resolved earlyFire = EarlyFireHint.of(join);
        if (!decision.isNative() && EarlyFireHint.producesUpdates(join, earlyFire)) {
            throw new TableException("The EARLY_FIRE hint on " + join.getRelDetailedDescription() + " needs Ferry's"
                    + " native interval join (Flink 2.3 has no early fire), which is not available for it: " + decision.reason());
        }
        return candidate(join, verdict(decision, earlyFire));
    }

    @Override
    protected RelWriter explainTerms(StreamPhysicalIntervalJoin join, Verdict verdict, RelWriter pw) {
        EarlyFireHint.Resolved earlyFire = verdict.payload();
        if (earlyFire != null) {
            pw.item("earlyFireDelay", earlyFire.delayMs()).item("earlyFireTimeMode", earlyFire.timeMode());
        }
        return super.explainTerms(join, verdict, pw);
    }

    @Override
    public HintStrategyTable withHints(HintStrategyTable hints) {
        return EarlyFireHint.addTo(hints);
    }

    @Override
    public Map<String, FlinkOptimizeProgram<StreamOptimizeContext>> programsBeforePhysical() {
        return Map.of(EarlyFireHint.RECORDER_NAME, EarlyFireHint.RECORDER);
    }

    @Override
    public RelNode rewritePlan(RelNode root) {
        return EarlyFireChangelog.apply(root);
    }

    @Override
    protected Decision match(StreamPhysicalIntervalJoin join, ReadableConfig config) {
        WindowBounds bounds = IntervalJoinCandidate.windowBounds(join);
        JoinSpec joinSpec = join.joinSpec();
        String reason = shapeReason(joinSpec, bounds, join.getRowType().getFieldNames());
        if (reason != null) {
            return Decision.fallback(reason);
        }
        RowType left = FlinkTypeFactory.toLogicalRowType(join.getLeft().getRowType());
        RowType right = FlinkTypeFactory.toLogicalRowType(join.getRight().getRowType());
        reason = joinFieldsReason(ArrowTypes.carriedFields(left), "left field");
        if (reason == null) {
            reason = joinFieldsReason(ArrowTypes.carriedFields(right), "right field");
        }
        if (reason != null) {
            return Decision.fallback(reason);
        }
        EarlyFireHint.Resolved earlyFire = EarlyFireHint.of(join);
        IntervalJoinSpec spec = IntervalJoinSpecs.build(nativeDescription(join), left, right, joinSpec, bounds,
                config, EarlyFireHint.producesUpdates(join, earlyFire) ? earlyFire : null);
        // Go names a refused part of the condition by its types; say which condition it is in
        return NativeSupport.check(spec)
                .map(refused -> Decision.fallback(JoinConditions.refusal(joinSpec, join.getRowType().getFieldNames(), refused)))
                .orElse(Decision.nativeNode());
    }

    /**
     * Flink's join as {@link FerryIntervalJoinOperator}: the transformation keeps Flink's name
     * ({@code interval-join}, hence its UID and operator ID), parallelism (1 for singleton inputs,
     * as Flink sets it), both state key selectors and the key type, so Flink's exchanges and key
     * groups stay valid. A loaded plan keeps no hint of Ferry's: no early fire there.
     */
    @Override
    protected Transformation<?> translate(StreamExecIntervalJoin flink, NativeTranslation t) {
        JoinSpec joinSpec = flinkSpec(flink).getJoinSpec();
        WindowBounds bounds = flinkSpec(flink).getWindowBounds();
        EarlyFireHint.Resolved earlyFire = earlyFire(flink, t);
        RowType leftType = t.inputType(0);
        RowType rightType = t.inputType(1);
        // what the planner checked; a plan loaded from JSON is decided here only
        String reason = shapeReason(joinSpec, bounds, null);
        if (reason == null) {
            reason = joinFieldsReason(ArrowTypes.carriedFields(leftType), "left field");
        }
        if (reason == null) {
            reason = joinFieldsReason(ArrowTypes.carriedFields(rightType), "right field");
        }
        IntervalJoinSpec spec = null;
        if (reason == null) {
            spec = IntervalJoinSpecs.build(t.description(), leftType, rightType, joinSpec, bounds, t.config(), earlyFire);
            reason = t.check(spec).orElse(null);
        }
        if (reason != null) {
            return t.fallback(reason);
        }
        FerryIntervalJoinOperator operator =
                new FerryIntervalJoinOperator(spec, ArrowTypes.carriedFields(t.outputType()), t.batching(false));
        TwoInputTransformation<RowData, RowData, RowData> transform = t.twoInput(
                StreamExecIntervalJoin.INTERVAL_JOIN_TRANSFORMATION, operator, joinSpec.getLeftKeys(), joinSpec.getRightKeys());
        if (t.inputsContainSingleton()) {
            transform.setParallelism(1);
            transform.setMaxParallelism(1);
        }
        RowType keyType = ((InternalTypeInfo<?>) transform.getStateKeyType()).toRowType();
        operator.importingFlinkState(new FlinkIntervalJoinState(keyType, leftType, rightType, bounds.isEventTime(),
                earlyFire == null ? null : "with the EARLY_FIRE hint the join keeps fired flags and early-fire timers,"
                        + " which Flink 2.3's interval join does not have"));
        return transform;
    }

    /** A join with early fire has no operator of Flink's to fall back to. */
    @Override
    protected void checkFallback(StreamExecIntervalJoin flink, NativeTranslation t, String reason) {
        if (earlyFire(flink, t) != null) {
            throw new TableException("The EARLY_FIRE hint on " + t.description() + " needs Ferry's native interval"
                    + " join (Flink 2.3 has no early fire), which is not available for it any more: " + reason);
        }
    }

    private static org.apache.flink.table.planner.plan.nodes.exec.spec.IntervalJoinSpec flinkSpec(StreamExecIntervalJoin flink) {
        return FlinkFields.read(flink, StreamExecIntervalJoin.class, "intervalJoinSpec");
    }

    /** The early fire the join runs with: the candidate's hint where it applies (an outer join), else null. */
    @Nullable
    private static EarlyFireHint.Resolved earlyFire(StreamExecIntervalJoin flink, NativeTranslation t) {
        JoinSpec joinSpec = flinkSpec(flink).getJoinSpec();
        EarlyFireHint.Resolved hint = t.payload();
        return EarlyFireHint.producesUpdates(joinSpec.getJoinType() != FlinkJoinType.INNER, flinkSpec(flink).getWindowBounds(), hint)
                ? hint
                : null;
    }

    /**
     * Why the join's shape is not native, or null; translation repeats it.
     *
     * @param fieldNames the names of the left and right input fields, in the join's row order (for
     *     the residual condition in the reason), or null
     */
    static String shapeReason(JoinSpec joinSpec, WindowBounds bounds, List<String> fieldNames) {
        if (bounds.getLeftUpperBound() < bounds.getLeftLowerBound()) {
            return "negative window (leftUpperBound " + bounds.getLeftUpperBound() + " < leftLowerBound "
                    + bounds.getLeftLowerBound() + "): Flink plans no join operator, only filters and padding";
        }
        return JoinConditions.reason(joinSpec, fieldNames);
    }
}
