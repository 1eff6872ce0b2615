package io.ferrystream.ferry.arrow;

import java.nio.ByteBuffer;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.LogicalType;

/**
 * A nested accumulator row of a two-phase partial row (a STRUCTURED field) as it crosses Ferry's
 * boundary: one VARBINARY value (docs/abi.md, "Data views"). Implementations: MIN/MAX with
 * retraction ({@link MinMaxAccumulators}) and {@code $WELFORD_M2} ({@link WelfordAccumulators}).
 * Not thread-safe.
 */
public interface AccumulatorCodec {
    /** Encodes an accumulator row; the buffer is valid until the next call. */
    ByteBuffer encode(RowData acc);

    /** Decodes an accumulator into the row Flink's local aggregate holds. */
    RowData decode(ArrowBuf data, long start, int len);

    /** The serializer of the nested row (Flink's, for writing it into a BinaryRowData). */
    RowDataSerializer rowSerializer();

    /** The number of fields of the nested row. */
    default int arity() {
        return rowSerializer().getArity();
    }

    /** The codec of an accumulator type; UnsupportedOperationException for other types. */
    static AccumulatorCodec of(LogicalType type) {
        if (WelfordAccumulators.isAccumulator(type)) {
            return WelfordAccumulators.codecOf(type);
        }
        return MinMaxAccumulators.codecOf(type);
    }

    /** Whether {@code type} is an accumulator type Ferry carries. */
    static boolean isAccumulator(LogicalType type) {
        return WelfordAccumulators.isAccumulator(type) || MinMaxAccumulators.isAccumulator(type);
    }
}
