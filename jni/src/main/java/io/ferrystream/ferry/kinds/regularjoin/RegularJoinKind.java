package io.ferrystream.ferry.kinds.regularjoin;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.planner.Decision;
import io.ferrystream.ferry.planner.FlinkFields;
import io.ferrystream.ferry.planner.JoinConditions;
import io.ferrystream.ferry.planner.NativeKind;
import io.ferrystream.ferry.planner.NativeSupport;
import io.ferrystream.ferry.planner.NativeTranslation;
import io.ferrystream.ferry.planner.candidates.JoinCandidate;

import org.apache.flink.api.dag.Transformation;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.config.ExecutionConfigOptions;
import org.apache.flink.table.planner.calcite.FlinkTypeFactory;
import org.apache.flink.table.planner.hint.StateTtlHint;
import org.apache.flink.table.planner.plan.nodes.exec.StateMetadata;
import org.apache.flink.table.planner.plan.nodes.exec.spec.JoinSpec;
import org.apache.flink.table.planner.plan.nodes.exec.stream.StreamExecJoin;
import org.apache.flink.table.planner.plan.nodes.physical.stream.StreamPhysicalJoin;
import org.apache.flink.table.planner.plan.utils.JoinUtil;
import org.apache.flink.table.planner.plan.utils.MinibatchUtil;
import org.apache.flink.table.planner.utils.JavaScalaConversionUtil;
import org.apache.flink.table.planner.utils.ShortcutUtils;
import org.apache.flink.table.runtime.operators.join.FlinkJoinType;
import org.apache.flink.table.runtime.operators.join.stream.utils.JoinInputSideSpec;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.util.TimeUtils;

import javax.annotation.Nullable;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The regular join kind ({@value RegularJoinSpec#KIND}): Flink's {@code StreamingJoinOperator}
 * ({@code StreamPhysicalJoin}, {@code StreamExecJoin}) run by {@link FerryRegularJoinOperator}.
 * A preview ({@link FerryOptions#previewSwitch}): off by default, and then it claims no node.
 * When on, native: INNER, LEFT, RIGHT and FULL joins on any equi keys ({@code =} and {@code IS
 * NOT DISTINCT FROM}), every state layout of either side, with a residual condition libferry.so
 * evaluates as Flink's generated code does ({@link JoinConditions}), over fields that cross the
 * Arrow boundary; with {@code table.exec.mini-batch.enabled} Flink's {@code
 * MiniBatchStreamingJoinOperator} ({@code mini_batch}, run in Flink's bundles); SEMI and ANTI joins
 * ({@code StreamingSemiAntiJoinOperator}, with mini-batch on or off: Flink has no mini-batch one).
 * Flink's otherwise, with the reason, in the order {@code StreamExecJoin#translateToPlanInternal}
 * meets them: async state without mini-batch ({@code AsyncStateStreamingJoinOperator}), an
 * idle-state TTL on either side, then types,
 * the residual condition and libferry.so's verdict. The operator imports none of Flink's state: a
 * restore that hands it Flink's {@code leftState}/{@code rightState} fails, naming them.
 */
public final class RegularJoinKind extends NativeKind<StreamPhysicalJoin, StreamExecJoin> {
    /** The switch of the native regular join, a preview: off by default. */
    public static final ConfigOption<Boolean> ENABLED = FerryOptions.previewSwitch("regular-join", "the native regular join");

    public RegularJoinKind() {
        super(RegularJoinSpec.KIND, StreamPhysicalJoin.class, StreamExecJoin.class, ENABLED, JoinCandidate::new);
    }

    @Override
    protected Decision match(StreamPhysicalJoin join, ReadableConfig config) {
        JoinSpec joinSpec = join.joinSpec();
        List<StateMetadata> states = StateMetadata.getMultiInputOperatorDefaultMeta(
                StateTtlHint.getStateTtlFromHintOnBiRel(join.getHints()), config,
                StreamExecJoin.LEFT_STATE_NAME, StreamExecJoin.RIGHT_STATE_NAME);
        long leftTtl = TimeUtils.parseDuration(states.get(0).getStateTtl()).toMillis();
        long rightTtl = TimeUtils.parseDuration(states.get(1).getStateTtl()).toMillis();
        RowType left = FlinkTypeFactory.toLogicalRowType(join.getLeft().getRowType());
        RowType right = FlinkTypeFactory.toLogicalRowType(join.getRight().getRowType());
        // the condition's fields are the left ones then the right ones; a SEMI/ANTI join emits the left ones only
        List<String> fieldNames = new ArrayList<>(join.getRowType().getFieldNames());
        if (semiAnti(joinSpec)) {
            fieldNames.addAll(right.getFieldNames());
        }
        String reason = reason(joinSpec, config, leftTtl, rightTtl, left, right, fieldNames);
        if (reason != null) {
            return Decision.fallback(reason);
        }
        RegularJoinSpec spec = build(nativeDescription(join), left, right, joinSpec,
                JavaScalaConversionUtil.toJava(join.getUpsertKeys(join.getLeft(), joinSpec.getLeftKeys())),
                JavaScalaConversionUtil.toJava(join.getUpsertKeys(join.getRight(), joinSpec.getRightKeys())),
                leftTtl, rightTtl, miniBatch(joinSpec, config), ShortcutUtils.unwrapClassLoader(join));
        return NativeSupport.check(spec)
                .map(refused -> Decision.fallback(JoinConditions.refusal(joinSpec, fieldNames, refused)))
                .orElse(Decision.nativeNode());
    }

    /**
     * Flink's join as {@link FerryRegularJoinOperator}: the transformation keeps Flink's name
     * ({@code join}, hence its UID and operator ID), the left input's parallelism, both state key
     * selectors and the key type, so Flink's exchanges and key groups stay valid.
     */
    @Override
    protected Transformation<?> translate(StreamExecJoin flink, NativeTranslation t) {
        Class<?> c = StreamExecJoin.class;
        JoinSpec joinSpec = FlinkFields.read(flink, c, "joinSpec");
        List<int[]> leftUpsertKeys = FlinkFields.read(flink, c, "leftUpsertKeys");
        List<int[]> rightUpsertKeys = FlinkFields.read(flink, c, "rightUpsertKeys");
        List<StateMetadata> states = FlinkFields.read(flink, c, "stateMetadataList");
        List<Long> ttl = StateMetadata.getStateTtlForMultiInputOperator(t.config(), 2, states);
        RowType leftType = t.inputType(0);
        RowType rightType = t.inputType(1);
        // what the planner checked; a plan loaded from JSON is decided here only
        String reason = reason(joinSpec, t.config(), ttl.get(0), ttl.get(1), leftType, rightType, null);
        RegularJoinSpec spec = null;
        if (reason == null) {
            spec = build(t.description(), leftType, rightType, joinSpec, leftUpsertKeys, rightUpsertKeys, ttl.get(0),
                    ttl.get(1), miniBatch(joinSpec, t.config()), t.planner().getFlinkContext().getClassLoader());
            reason = t.check(spec).orElse(null);
        }
        if (reason != null) {
            return t.fallback(reason);
        }
        FerryRegularJoinOperator operator =
                new FerryRegularJoinOperator(spec, ArrowTypes.carriedFields(t.outputType()), t.batching(spec.miniBatch()));
        return t.twoInput(StreamExecJoin.JOIN_TRANSFORMATION, operator, joinSpec.getLeftKeys(), joinSpec.getRightKeys());
    }

    /**
     * Why the join stays Flink's before Go is asked, or null: its operator (async state, which
     * Flink builds only for INNER/LEFT/RIGHT/FULL without mini-batch), an idle-state TTL, a field that does not cross, a residual condition that
     * cannot be encoded. Translation repeats it.
     *
     * @param leftTtlMs the left side's idle-state retention ({@code StateMetadata}), milliseconds
     * @param fieldNames the join's output field names, to name the condition's fields, or null
     */
    static String reason(JoinSpec joinSpec, ReadableConfig config, long leftTtlMs, long rightTtlMs, RowType left,
            RowType right, @Nullable List<String> fieldNames) {
        if (!semiAnti(joinSpec) && !MinibatchUtil.isMiniBatchEnabled(config)
                && config.get(ExecutionConfigOptions.TABLE_EXEC_ASYNC_STATE_ENABLED)) {
            return "async state (" + ExecutionConfigOptions.TABLE_EXEC_ASYNC_STATE_ENABLED.key()
                    + ": AsyncStateStreamingJoinOperator): not native yet";
        }
        if (leftTtlMs != 0 || rightTtlMs != 0) {
            return "idle-state TTL (left " + Duration.ofMillis(leftTtlMs) + ", right " + Duration.ofMillis(rightTtlMs)
                    + "; table.exec.state.ttl or the STATE_TTL hint): not native yet";
        }
        String r = joinFieldsReason(ArrowTypes.carriedFields(left), "left field");
        if (r == null) {
            r = joinFieldsReason(ArrowTypes.carriedFields(right), "right field");
        }
        return r != null ? r : JoinConditions.reason(joinSpec, fieldNames);
    }

    /** Whether {@code StreamExecJoin} builds {@code StreamingSemiAntiJoinOperator}: SEMI and ANTI joins. */
    static boolean semiAnti(JoinSpec joinSpec) {
        return joinSpec.getJoinType() == FlinkJoinType.SEMI || joinSpec.getJoinType() == FlinkJoinType.ANTI;
    }

    /**
     * Whether {@code StreamExecJoin} builds {@code MiniBatchStreamingJoinOperator}: mini-batch on
     * ({@code MinibatchUtil.isMiniBatchEnabled}) and the join not SEMI/ANTI, whose operator is
     * {@code StreamingSemiAntiJoinOperator} with mini-batch on or off.
     */
    static boolean miniBatch(JoinSpec joinSpec, ReadableConfig config) {
        return !semiAnti(joinSpec) && MinibatchUtil.isMiniBatchEnabled(config);
    }

    /**
     * The spec of the operator Flink's exec node would build, with Flink's parameters: each side's
     * {@code JoinInputSideSpec} from its upsert keys ({@code JoinUtil.analyzeJoinInput}, as
     * {@code StreamExecJoin} calls it) and the unique key it keeps rows by ({@link #uniqueKey}).
     *
     * @param miniBatch Flink builds {@code MiniBatchStreamingJoinOperator} ({@link #miniBatch})
     */
    public static RegularJoinSpec build(
            String description,
            RowType leftType,
            RowType rightType,
            JoinSpec joinSpec,
            List<int[]> leftUpsertKeys,
            List<int[]> rightUpsertKeys,
            long leftTtlMs,
            long rightTtlMs,
            boolean miniBatch,
            ClassLoader classLoader) {
        JoinInputSideSpec left =
                JoinUtil.analyzeJoinInput(classLoader, InternalTypeInfo.of(leftType), joinSpec.getLeftKeys(), leftUpsertKeys);
        JoinInputSideSpec right =
                JoinUtil.analyzeJoinInput(classLoader, InternalTypeInfo.of(rightType), joinSpec.getRightKeys(), rightUpsertKeys);
        return new RegularJoinSpec(
                description,
                ArrowTypes.carriedFields(leftType),
                ArrowTypes.carriedFields(rightType),
                joinSpec.getLeftKeys(),
                joinSpec.getRightKeys(),
                joinSpec.getJoinType().name(),
                joinSpec.getFilterNulls(),
                RegularJoinSpec.Layout.of(left),
                uniqueKey(left, joinSpec.getLeftKeys(), leftUpsertKeys),
                RegularJoinSpec.Layout.of(right),
                uniqueKey(right, joinSpec.getRightKeys(), rightUpsertKeys),
                JoinConditions.encodeResidual(joinSpec),
                leftTtlMs,
                rightTtlMs,
                miniBatch);
    }

    /**
     * The columns of the unique key {@code side} keeps its rows by, or null for a side without
     * one. Flink 2.3's {@code JoinInputSideSpec} holds only the key's selector and type, so this
     * repeats {@code JoinUtil.analyzeJoinInput}'s choice: among the upsert keys (those the join key
     * contains, where there are any), the first of the fewest columns; it checks the result
     * against Flink's key type.
     */
    @Nullable
    static int[] uniqueKey(JoinInputSideSpec side, int[] joinKeys, List<int[]> upsertKeys) {
        if (!side.hasUniqueKey()) {
            return null;
        }
        List<int[]> candidates = upsertKeys;
        if (side.joinKeyContainsUniqueKey()) {
            candidates = new ArrayList<>();
            for (int[] k : upsertKeys) {
                if (Arrays.stream(k).allMatch(c -> Arrays.stream(joinKeys).anyMatch(j -> j == c))) {
                    candidates.add(k);
                }
            }
        }
        int[] smallest = null;
        for (int[] k : candidates) {
            if (smallest == null || k.length < smallest.length) {
                smallest = k;
            }
        }
        if (smallest == null || smallest.length != side.getUniqueKeyType().toRowType().getFieldCount()) {
            throw new IllegalStateException("the unique key of " + side + " is not one of the upsert keys "
                    + upsertKeys.stream().map(Arrays::toString).toList());
        }
        return smallest;
    }
}
