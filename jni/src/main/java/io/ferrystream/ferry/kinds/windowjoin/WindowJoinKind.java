package io.ferrystream.ferry.kinds.windowjoin;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.planner.Decision;
import io.ferrystream.ferry.planner.FlinkFields;
import io.ferrystream.ferry.planner.NativeKind;
import io.ferrystream.ferry.planner.NativeSupport;
import io.ferrystream.ferry.planner.NativeTranslation;
import io.ferrystream.ferry.planner.candidates.WindowJoinCandidate;

import org.apache.flink.api.dag.Transformation;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.plan.logical.SessionWindowSpec;
import org.apache.flink.table.planner.plan.logical.WindowAttachedWindowingStrategy;
import org.apache.flink.table.planner.plan.logical.WindowingStrategy;
import org.apache.flink.table.planner.plan.nodes.exec.spec.JoinSpec;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecWindowJoin;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalWindowJoin;
import org.apache.flink.table.planner.plan.utils.JoinUtil;
import org.apache.flink.table.planner.utils.TableConfigUtils;
import org.apache.flink.table.runtime.generated.GeneratedJoinCondition;
import org.apache.flink.table.runtime.util.TimeWindowUtil;
import org.apache.flink.table.types.logical.RowType;

import java.time.ZoneId;
import java.util.ArrayList;
import java.util.List;

/**
 * The window join kind ({@value WindowJoinSpec#KIND}): Flink's {@code WindowJoinOperator} run by
 * {@link FerryWindowJoinOperator}, whose rows stay in the JVM while Go keeps keys, windows, handles
 * and timers. Native: row-time TUMBLE, HOP and CUMULATE window joins of every join type, with any
 * residual condition (the operator evaluates Flink's generated one) and rows of any type, whose
 * equi keys are of types that cross the Arrow boundary. Flink's otherwise, with the reason.
 */
public final class WindowJoinKind extends NativeKind<StreamPhysicalWindowJoin, StreamExecWindowJoin> {
    /** The kill switch of the native window join. */
    public static final ConfigOption<Boolean> ENABLED = FerryOptions.killSwitch("window-join", "the native window join");

    public WindowJoinKind() {
        super(WindowJoinSpec.KIND, StreamPhysicalWindowJoin.class, StreamExecWindowJoin.class, ENABLED,
                WindowJoinCandidate::new);
    }


    @Override
    protected Decision match(StreamPhysicalWindowJoin join, ReadableConfig config) {
        JoinSpec joinSpec = join.joinSpec();
        String reason = shapeReason(joinSpec, join.leftWindowing());
        if (reason != null) {
            return Decision.fallback(reason);
        }
        RowType left = FlinkTypeFactory.toLogicalRowType(join.getLeft().getRowType());
        RowType right = FlinkTypeFactory.toLogicalRowType(join.getRight().getRowType());
        // only the keys and window_end cross into Go; the rows stay in the JVM
        reason = joinFieldsReason(keyFields(ArrowTypes.carriedFields(left), joinSpec.getLeftKeys()), "left join key");
        if (reason == null) {
            reason = joinFieldsReason(keyFields(ArrowTypes.carriedFields(right), joinSpec.getRightKeys()), "right join key");
        }
        if (reason != null) {
            return Decision.fallback(reason);
        }
        WindowJoinSpec spec = build(nativeDescription(join), left, right, joinSpec, join.leftWindowing(),
                join.rightWindowing(), config);
        return NativeSupport.check(spec).map(Decision::fallback).orElse(Decision.nativeNode());
    }

    /**
     * Flink's join as {@link FerryWindowJoinOperator} with Flink's generated residual condition:
     * the transformation keeps Flink's name ({@code window-join}, hence its UID and operator ID),
     * the left input's parallelism, both state key selectors and the key type.
     */
    @Override
    protected Transformation<?> translate(StreamExecWindowJoin flink, NativeTranslation t) {
        Class<?> c = StreamExecWindowJoin.class;
        JoinSpec joinSpec = FlinkFields.read(flink, c, "joinSpec");
        WindowingStrategy leftWindowing = FlinkFields.read(flink, c, "leftWindowing");
        WindowingStrategy rightWindowing = FlinkFields.read(flink, c, "rightWindowing");
        RowType leftType = t.inputType(0);
        RowType rightType = t.inputType(1);
        String reason = shapeReason(joinSpec, leftWindowing);
        if (reason == null) { // what the planner checked; a plan loaded from JSON is decided here only
            reason = joinFieldsReason(keyFields(ArrowTypes.carriedFields(leftType), joinSpec.getLeftKeys()), "left join key");
        }
        if (reason == null) {
            reason = joinFieldsReason(keyFields(ArrowTypes.carriedFields(rightType), joinSpec.getRightKeys()), "right join key");
        }
        WindowJoinSpec spec = null;
        if (reason == null) {
            spec = build(t.description(), leftType, rightType, joinSpec, leftWindowing, rightWindowing, t.config());
            reason = t.check(spec).orElse(null);
        }
        if (reason != null) {
            return t.fallback(reason);
        }
        GeneratedJoinCondition condition = JoinUtil.generateConditionFunction(
                t.config(), t.planner().getFlinkContext().getClassLoader(), joinSpec, leftType, rightType);
        return t.twoInput(StreamExecWindowJoin.WINDOW_JOIN_TRANSFORMATION,
                new FerryWindowJoinOperator(spec, condition, t.batching(false)), joinSpec.getLeftKeys(), joinSpec.getRightKeys());
    }

    /** Why the join's shape is not native, or null; translation repeats it. */
    static String shapeReason(JoinSpec joinSpec, WindowingStrategy windowing) {
        if (!windowing.isRowtime()) {
            return "processing-time window join: Flink rejects it at translation";
        }
        if (!(windowing instanceof WindowAttachedWindowingStrategy)) {
            return "windowing " + windowing.getClass().getSimpleName() + ": Flink rejects it at translation";
        }
        if (windowing.getWindow() instanceof SessionWindowSpec) {
            return "SESSION windows: not native (the join keys windows by window_end alone)";
        }
        return null;
    }

    private static RowType keyFields(RowType type, int[] keys) {
        List<RowType.RowField> fields = new ArrayList<>();
        for (int k : keys) {
            fields.add(type.getFields().get(k));
        }
        return new RowType(fields);
    }

    /** The spec of the operator Flink's exec node would build, with Flink's parameters. */
    static WindowJoinSpec build(
            String description,
            RowType leftType,
            RowType rightType,
            JoinSpec joinSpec,
            WindowingStrategy leftWindowing,
            WindowingStrategy rightWindowing,
            ReadableConfig config) {
        ZoneId shiftTimeZone = TimeWindowUtil.getShiftTimeZone(
                leftWindowing.getTimeAttributeType(), TableConfigUtils.getLocalTimeZone(config));
        return new WindowJoinSpec(
                description,
                ArrowTypes.carriedFields(leftType),
                ArrowTypes.carriedFields(rightType),
                joinSpec.getLeftKeys(),
                joinSpec.getRightKeys(),
                joinSpec.getJoinType().name(),
                ((WindowAttachedWindowingStrategy) leftWindowing).getWindowEnd(),
                ((WindowAttachedWindowingStrategy) rightWindowing).getWindowEnd(),
                joinSpec.getFilterNulls(),
                shiftTimeZone,
                config.get(FerryOptions.JOIN_NULL_KEY_EMIT_IMMEDIATELY));
    }

}
