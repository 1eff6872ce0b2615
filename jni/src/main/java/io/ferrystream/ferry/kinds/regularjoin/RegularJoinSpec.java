package io.ferrystream.ferry.kinds.regularjoin;

import io.ferrystream.ferry.operators.NativeSpec;

import org.apache.flink.table.runtime.operators.join.stream.utils.JoinInputSideSpec;
import org.apache.flink.table.types.logical.RowType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.JsonProcessingException;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import javax.annotation.Nullable;

import java.util.List;
import java.util.Objects;

/**
 * The spec of one native regular join (kind {@value #KIND}): Flink's {@code StreamingJoinOperator},
 * {@code MiniBatchStreamingJoinOperator} or {@code StreamingSemiAntiJoinOperator} as {@code
 * StreamExecJoin} builds it. Input 0 is the join's left input, input 1 its right input; all their
 * fields cross into Go (the output is the left row followed by the right row, or the left row
 * alone for SEMI and ANTI: Flink's output row type), keyed by the equi-join keys ({@code JoinSpec} left and right keys). The
 * parameters, in this order (docs/abi.md): the join type, the null filter of each key, each
 * side's state layout and unique key ({@code JoinInputSideSpec}), the residual condition (the
 * interval join's encoding, {@code JoinConditions}), each side's idle-state retention in
 * milliseconds (written only when non-zero) and {@code mini_batch} (written only when true: Flink's
 * {@code MiniBatchStreamingJoinOperator}, whose bundles the operator ends with the library's flush).
 */
public final class RegularJoinSpec extends NativeSpec {
    private static final long serialVersionUID = 1L;

    /** The library's name of this operator kind. */
    public static final String KIND = "regular_join";

    private static final ObjectMapper JSON = new ObjectMapper();

    /** How one side keeps its rows, after Flink's {@code JoinInputSideSpec}. */
    public enum Layout {
        /** {@code joinKeyContainsUniqueKey()}: at most one row per join key. */
        JOIN_KEY_CONTAINS_UNIQUE_KEY("join_key_contains_unique_key"),
        /** {@code hasUniqueKey()} and not the former: rows by their unique key within a join key. */
        INPUT_HAS_UNIQUE_KEY("input_has_unique_key"),
        /** No unique key: rows with their counts within a join key. */
        NO_UNIQUE_KEY("no_unique_key");

        private final String json;

        Layout(String json) {
            this.json = json;
        }

        /** The layout of Flink's {@code spec}. */
        public static Layout of(JoinInputSideSpec spec) {
            if (spec.joinKeyContainsUniqueKey()) {
                return JOIN_KEY_CONTAINS_UNIQUE_KEY;
            }
            return spec.hasUniqueKey() ? INPUT_HAS_UNIQUE_KEY : NO_UNIQUE_KEY;
        }
    }

    private final String joinType;
    private final boolean[] filterNulls;
    private final Layout leftLayout;
    private final Layout rightLayout;
    private final int[] leftUniqueKey;
    private final int[] rightUniqueKey;
    /** The residual condition as JSON (docs/abi.md), or null when there is none. */
    @Nullable private final String condition;
    private final long leftStateRetentionMs;
    private final long rightStateRetentionMs;
    private final boolean miniBatch;

    /**
     * @param leftType the left input's row type (every field crosses)
     * @param leftKeys the left input's equi-join key columns
     * @param joinType {@code INNER}, {@code LEFT}, {@code RIGHT}, {@code FULL}, {@code SEMI} or {@code ANTI}
     * @param filterNulls per key: true for {@code =} (a NULL key joins nothing), false for {@code IS
     *     NOT DISTINCT FROM}
     * @param leftLayout the left side's state layout, as Flink's {@code JoinUtil.analyzeJoinInput} gives it
     * @param leftUniqueKey the left side's unique key columns Flink's layout keeps its rows by
     *     (its {@code JoinInputSideSpec}'s key selector); null exactly for {@link Layout#NO_UNIQUE_KEY}
     * @param condition the residual condition over the left fields followed by the right fields,
     *     as the JSON of the {@code condition} parameter, or null for none
     * @param leftStateRetentionMs the left side's idle-state retention in milliseconds, 0 for none
     * @param miniBatch Flink's {@code MiniBatchStreamingJoinOperator} ({@code
     *     table.exec.mini-batch.enabled}): rows are joined per bundle, at the library's flush
     */
    public RegularJoinSpec(
            String name,
            RowType leftType,
            RowType rightType,
            int[] leftKeys,
            int[] rightKeys,
            String joinType,
            boolean[] filterNulls,
            Layout leftLayout,
            @Nullable int[] leftUniqueKey,
            Layout rightLayout,
            @Nullable int[] rightUniqueKey,
            @Nullable String condition,
            long leftStateRetentionMs,
            long rightStateRetentionMs,
            boolean miniBatch) {
        super(KIND, name, List.of(Input.whole(leftType, leftKeys), Input.whole(rightType, rightKeys)));
        this.joinType = Objects.requireNonNull(joinType);
        this.filterNulls = filterNulls.clone();
        this.leftLayout = Objects.requireNonNull(leftLayout);
        this.rightLayout = Objects.requireNonNull(rightLayout);
        this.leftUniqueKey = uniqueKey(leftLayout, leftUniqueKey);
        this.rightUniqueKey = uniqueKey(rightLayout, rightUniqueKey);
        this.condition = condition;
        this.leftStateRetentionMs = leftStateRetentionMs;
        this.rightStateRetentionMs = rightStateRetentionMs;
        this.miniBatch = miniBatch;
    }

    private static int[] uniqueKey(Layout layout, @Nullable int[] key) {
        if ((layout == Layout.NO_UNIQUE_KEY) != (key == null)) {
            throw new IllegalArgumentException("layout " + layout + " with unique key " + java.util.Arrays.toString(key));
        }
        return key == null ? null : key.clone();
    }

    public Layout leftLayout() {
        return leftLayout;
    }

    public Layout rightLayout() {
        return rightLayout;
    }

    /** Whether this is Flink's mini-batch join, run in bundles. */
    public boolean miniBatch() {
        return miniBatch;
    }

    @Override
    protected void writeParams(ObjectNode params) {
        params.put("join_type", joinType);
        ArrayNode f = params.putArray("filter_nulls");
        for (boolean b : filterNulls) {
            f.add(b);
        }
        params.put("left_layout", leftLayout.json);
        params.put("right_layout", rightLayout.json);
        putKey(params, "left_unique_key", leftUniqueKey);
        putKey(params, "right_unique_key", rightUniqueKey);
        if (condition != null) {
            try {
                params.set("condition", JSON.readTree(condition));
            } catch (JsonProcessingException e) {
                throw new IllegalStateException("residual condition " + condition, e);
            }
        }
        if (leftStateRetentionMs != 0) {
            params.put("left_state_retention_ms", leftStateRetentionMs);
        }
        if (rightStateRetentionMs != 0) {
            params.put("right_state_retention_ms", rightStateRetentionMs);
        }
        if (miniBatch) {
            params.put("mini_batch", true);
        }
    }

    private static void putKey(ObjectNode params, String name, @Nullable int[] key) {
        if (key != null) {
            ArrayNode a = params.putArray(name);
            for (int k : key) {
                a.add(k);
            }
        }
    }
}
