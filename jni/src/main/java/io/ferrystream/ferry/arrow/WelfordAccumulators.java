package io.ferrystream.ferry.arrow;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.functions.aggregate.WelfordM2AggFunction;
import org.apache.flink.table.runtime.typeutils.InternalSerializers;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.LogicalTypeRoot;
import org.apache.flink.table.types.logical.StructuredType;

/**
 * The accumulator of Flink's {@code $WELFORD_M2} (STDDEV and VAR) in two-phase partial rows:
 * Flink's field is the nested row {@code STRUCTURED<n BIGINT, mean DOUBLE, m2 DOUBLE>}; across
 * Ferry's boundary it is 24 bytes, {@code n} as int64, {@code mean} and {@code m2} as IEEE bits,
 * little-endian (docs/abi.md, "Data views").
 */
public final class WelfordAccumulators {
    private WelfordAccumulators() {}

    /** Whether {@code type} is {@code $WELFORD_M2}'s accumulator type. */
    public static boolean isAccumulator(LogicalType type) {
        return type instanceof StructuredType s
                && s.getImplementationClass().orElse(null) == WelfordM2AggFunction.WelfordM2Accumulator.class
                && type.getChildren().size() == 3
                && type.getChildren().get(0).getTypeRoot() == LogicalTypeRoot.BIGINT
                && type.getChildren().get(1).getTypeRoot() == LogicalTypeRoot.DOUBLE
                && type.getChildren().get(2).getTypeRoot() == LogicalTypeRoot.DOUBLE;
    }

    /** The codec of the accumulator type; UnsupportedOperationException for other types. */
    public static AccumulatorCodec codecOf(LogicalType type) {
        if (!isAccumulator(type)) {
            throw ArrowTypes.unsupported(type);
        }
        return new Codec(type);
    }

    private static final class Codec implements AccumulatorCodec {
        private final RowDataSerializer rowSerializer;
        private final ByteBuffer buf = ByteBuffer.allocate(24).order(ByteOrder.LITTLE_ENDIAN);

        Codec(LogicalType type) {
            this.rowSerializer = (RowDataSerializer) (Object) InternalSerializers.create(type);
        }

        @Override
        public ByteBuffer encode(RowData acc) {
            buf.clear();
            buf.putLong(acc.getLong(0)).putDouble(acc.getDouble(1)).putDouble(acc.getDouble(2));
            return buf.flip();
        }

        @Override
        public RowData decode(ArrowBuf data, long start, int len) {
            if (len != 24) {
                throw new IllegalStateException("a $WELFORD_M2 accumulator of " + len + " bytes, want 24");
            }
            return GenericRowData.of(data.getLong(start), data.getDouble(start + 8), data.getDouble(start + 16));
        }

        @Override
        public RowDataSerializer rowSerializer() {
            return rowSerializer;
        }
    }
}
