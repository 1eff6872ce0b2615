package io.ferrystream.ferry.kinds.deduplicate;

import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.operators.NativeSpec;

import org.apache.flink.table.types.logical.RowType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import java.util.List;

/**
 * The spec of one native deduplication (kind {@value #KIND}): Flink's {@code StreamExecDeduplicate}
 * and the function its translation picks (docs/operators/deduplicate.md). The whole input row
 * crosses into Go ({@link ArrowTypes#carriedFields}), keyed by the partition keys, and Go emits
 * rows of the same type. The
 * parameters are the exec node's fields and the options its translation reads, in the order
 * docs/abi.md lists them (the Go side's {@code dedup.Params}).
 */
public final class DeduplicateSpec extends NativeSpec {
    private static final long serialVersionUID = 1L;

    /** The library's name of this operator kind. */
    public static final String KIND = "deduplicate";

    private final RowType type;
    private final boolean keepLastRow;
    private final boolean rowtime;
    private final int rowtimeIndex;
    private final boolean generateUpdateBefore;
    private final boolean generateInsert;
    private final boolean outputInsertOnly;
    private final boolean miniBatch;
    private final boolean compactChanges;
    private final boolean storedRowKeepsKind;
    private final long stateTtlMs;

    /**
     * @param type the input row type, also the output's
     * @param keys the partition keys (Flink's {@code uniqueKeys}), the state key
     * @param rowtimeIndex the row-time field (the first of the input, as Flink picks it); 0
     *     without {@code rowtime}
     * @param outputInsertOnly Flink's {@code RowTimeDeduplicateKeepFirstRowFunction}: row time,
     *     keep first, insert-only output, no mini-batch
     * @param compactChanges {@code table.exec.deduplicate.mini-batch.compact-changes-enabled},
     *     only with row time and mini-batch
     * @param storedRowKeepsKind the stored row takes the kind it is emitted with (the heap state
     *     backend keeps the row object; {@link FerryDeduplicateOperator} sets it from the backend
     *     the task runs on)
     * @param stateTtlMs the retention Flink's function applies (0: none)
     */
    public DeduplicateSpec(
            String name,
            RowType type,
            int[] keys,
            boolean keepLastRow,
            boolean rowtime,
            int rowtimeIndex,
            boolean generateUpdateBefore,
            boolean generateInsert,
            boolean outputInsertOnly,
            boolean miniBatch,
            boolean compactChanges,
            boolean storedRowKeepsKind,
            long stateTtlMs) {
        // carried: TIMESTAMP_LTZ as TIMESTAMP, TIME as INT, a processing-time attribute nullable
        // (its rows hold NULL: Flink does not materialize it)
        super(KIND, name, List.of(Input.whole(ArrowTypes.carriedFields(type), keys)));
        this.type = type;
        this.keepLastRow = keepLastRow;
        this.rowtime = rowtime;
        this.rowtimeIndex = rowtimeIndex;
        this.generateUpdateBefore = generateUpdateBefore;
        this.generateInsert = generateInsert;
        this.outputInsertOnly = outputInsertOnly;
        this.miniBatch = miniBatch;
        this.compactChanges = compactChanges;
        this.storedRowKeepsKind = storedRowKeepsKind;
        this.stateTtlMs = stateTtlMs;
    }


    /** This spec with {@code storedRowKeepsKind} set as given. */
    public DeduplicateSpec withStoredRowKeepsKind(boolean keeps) {
        if (keeps == storedRowKeepsKind) {
            return this;
        }
        return new DeduplicateSpec(name(), type, input(0).keys(), keepLastRow, rowtime, rowtimeIndex, generateUpdateBefore,
                generateInsert, outputInsertOnly, miniBatch, compactChanges, keeps, stateTtlMs);
    }

    /** The input row type, also the output's. */
    public RowType type() {
        return type;
    }

    public boolean keepLastRow() {
        return keepLastRow;
    }

    public boolean rowtime() {
        return rowtime;
    }

    public int rowtimeIndex() {
        return rowtimeIndex;
    }

    public boolean outputInsertOnly() {
        return outputInsertOnly;
    }

    /** Whether a batch must be one of Flink's mini-batch bundles. */
    public boolean miniBatch() {
        return miniBatch;
    }

    public boolean storedRowKeepsKind() {
        return storedRowKeepsKind;
    }

    public long stateTtlMs() {
        return stateTtlMs;
    }

    @Override
    protected void writeParams(ObjectNode params) {
        params.put("keep_last_row", keepLastRow);
        params.put("rowtime", rowtime);
        params.put("rowtime_index", rowtimeIndex);
        params.put("generate_update_before", generateUpdateBefore);
        params.put("generate_insert", generateInsert);
        params.put("output_insert_only", outputInsertOnly);
        params.put("mini_batch", miniBatch);
        params.put("compact_changes", compactChanges);
        params.put("stored_row_keeps_kind", storedRowKeepsKind);
        params.put("state_ttl_ms", stateTtlMs);
    }
}
