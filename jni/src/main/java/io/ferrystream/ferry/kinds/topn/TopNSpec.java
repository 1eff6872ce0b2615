package io.ferrystream.ferry.kinds.topn;

import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.operators.NativeSpec;

import org.apache.flink.table.types.logical.RowType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ArrayNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.List;

/**
 * The spec of one native Top-N (kind {@value #KIND}): Flink's {@code StreamExecRank} and the
 * function its translation picks (docs/operators/top-n.md).
 * The whole input row crosses into Go ({@link ArrowTypes#carriedFields}), keyed by the partition
 * keys; Go emits the input row, followed by the rank number (BIGINT NOT NULL) when the query
 * selects it. The parameters are the exec node's fields and the options its translation reads,
 * as docs/abi.md lists them (the Go side's {@code topn.Params}).
 */
public final class TopNSpec extends NativeSpec {
    private static final long serialVersionUID = 1L;

    /** The library's name of this operator kind. */
    public static final String KIND = "top_n";

    /** The function of Flink's translation the spec runs. */
    public enum Function {
        /** {@code AppendOnlyTopNFunction} (and its async-state twin). */
        APPEND_ONLY_TOP_N("append_only_top_n"),
        /** {@code AppendOnlyFirstNFunction}: ORDER BY the processing time ascending. */
        APPEND_ONLY_FIRST_N("append_only_first_n"),
        /** {@code FastTop1Function} (and its async-state twin): rank 1 to 1. */
        FAST_TOP1("fast_top1"),
        /** {@code RetractableTopNFunction}: an input with retractions. */
        RETRACTABLE_TOP_N("retractable_top_n"),
        /** {@code UpdatableTopNFunction}: an upsert input whose sort keys improve, not top-1. */
        UPDATABLE_TOP_N("updatable_top_n");

        private final String json;

        Function(String json) {
            this.json = json;
        }

        /** The name in the spec's parameters. */
        public String json() {
            return json;
        }
    }

    private final RowType inputType;
    private final RowType outputType;
    private final Function function;
    private final int[] sortFields;
    private final int[] rowKeys;
    private final boolean[] ascending;
    private final boolean[] nullsLast;
    private final long rankStart;
    private final long rankEnd;
    private final boolean outputRankNumber;
    private final boolean generateUpdateBefore;
    private final long stateTtlMs;

    /**
     * @param inputType the input row type
     * @param outputType the output row type: the input's, then the rank number if {@code
     *     outputRankNumber}
     * @param keys the partition keys, the state key
     * @param sortFields the ORDER BY fields, input columns, in order
     * @param rowKeys {@link Function#UPDATABLE_TOP_N}'s row key (the input's upsert key, {@code
     *     UpdateFastStrategy}'s primary keys), input columns; empty for the other functions
     * @param ascending per sort field: ascending
     * @param nullsLast per sort field: NULLs sort after every value (in either direction)
     * @param rankStart the constant rank range's start (1-based)
     * @param rankEnd the constant rank range's end
     * @param stateTtlMs the idle-state retention (0: none); only {@link Function#APPEND_ONLY_FIRST_N}
     *     runs with one
     */
    public TopNSpec(
            String name,
            RowType inputType,
            RowType outputType,
            int[] keys,
            Function function,
            int[] sortFields,
            int[] rowKeys,
            boolean[] ascending,
            boolean[] nullsLast,
            long rankStart,
            long rankEnd,
            boolean outputRankNumber,
            boolean generateUpdateBefore,
            long stateTtlMs) {
        // carried: TIMESTAMP_LTZ as TIMESTAMP, TIME as INT, a processing-time attribute nullable
        // (its rows hold NULL: Flink does not materialize it)
        super(KIND, name, List.of(Input.whole(ArrowTypes.carriedFields(inputType), keys)));
        if (sortFields.length != ascending.length || sortFields.length != nullsLast.length) {
            throw new IllegalArgumentException("one direction and one NULL order per sort field");
        }
        this.inputType = inputType;
        this.outputType = outputType;
        this.function = function;
        this.sortFields = sortFields.clone();
        this.rowKeys = rowKeys.clone();
        this.ascending = ascending.clone();
        this.nullsLast = nullsLast.clone();
        this.rankStart = rankStart;
        this.rankEnd = rankEnd;
        this.outputRankNumber = outputRankNumber;
        this.generateUpdateBefore = generateUpdateBefore;
        this.stateTtlMs = stateTtlMs;
    }


    public RowType inputType() {
        return inputType;
    }

    public RowType outputType() {
        return outputType;
    }

    public Function function() {
        return function;
    }

    public int[] sortFields() {
        return sortFields.clone();
    }

    public int[] rowKeys() {
        return rowKeys.clone();
    }

    public long rankStart() {
        return rankStart;
    }

    public long rankEnd() {
        return rankEnd;
    }

    public boolean outputRankNumber() {
        return outputRankNumber;
    }

    public long stateTtlMs() {
        return stateTtlMs;
    }

    @Override
    protected void writeParams(ObjectNode params) {
        params.put("function", function.json());
        ArrayNode keys = params.putArray("sort_keys");
        for (int i = 0; i < sortFields.length; i++) {
            keys.addObject().put("field", sortFields[i]).put("ascending", ascending[i]).put("nulls_last", nullsLast[i]);
        }
        if (rowKeys.length > 0) {
            ArrayNode rk = params.putArray("row_keys");
            for (int c : rowKeys) {
                rk.add(c);
            }
        }
        params.put("rank_start", rankStart);
        params.put("rank_end", rankEnd);
        params.put("output_rank_number", outputRankNumber);
        params.put("generate_update_before", generateUpdateBefore);
        params.put("state_ttl_ms", stateTtlMs);
    }
}
