package io.ferrystream.ferry.arrow;

import java.nio.ByteBuffer;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.flink.table.api.dataview.MapView;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RawValueData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.binary.BinaryRawValueData;
import org.apache.flink.table.runtime.functions.aggregate.MaxWithRetractAggFunction;
import org.apache.flink.table.runtime.functions.aggregate.MinWithRetractAggFunction;
import org.apache.flink.table.runtime.typeutils.InternalSerializers;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.LogicalTypeRoot;
import org.apache.flink.table.types.logical.StructuredType;

/**
 * The accumulator of MIN/MAX with retraction in Flink's two-phase partial rows as Ferry carries it
 * (docs/abi.md, "Data views"): Flink's field is a nested row, {@code STRUCTURED<min T, mapSize
 * BIGINT, map RAW(MapView<T, BIGINT>)>} (Min/MaxWithRetractAggFunction's accumulator with its
 * view on the heap); across Ferry's boundary it is one VARBINARY value:
 *
 * <pre>
 * acc := null byte (0 value, 1 NULL) [min key] mapSize int64 LE map
 * </pre>
 *
 * <p>{@code key} and {@code map} as in {@link DistinctViews}, the map with one word per entry.
 */
public final class MinMaxAccumulators {
    private MinMaxAccumulators() {}

    /** Whether {@code type} is the accumulator type of MIN/MAX with retraction over a carried type. */
    public static boolean isAccumulator(LogicalType type) {
        try {
            codecOf(type);
            return true;
        } catch (UnsupportedOperationException e) {
            return false;
        }
    }

    /** The codec of an accumulator type; UnsupportedOperationException for other types. */
    public static AccumulatorCodec codecOf(LogicalType type) {
        if (!(type instanceof StructuredType)) {
            throw ArrowTypes.unsupported(type);
        }
        Class<?> c = ((StructuredType) type).getImplementationClass().orElse(null);
        if ((c != MinWithRetractAggFunction.MinWithRetractAccumulator.class
                        && c != MaxWithRetractAggFunction.MaxWithRetractAccumulator.class)
                || type.getChildren().size() != 3
                || type.getChildren().get(1).getTypeRoot() != LogicalTypeRoot.BIGINT) {
            throw ArrowTypes.unsupported(type);
        }
        DistinctViews.Codec map = DistinctViews.codecOf(type.getChildren().get(2));
        return new Codec(type, type.getChildren().get(0), map);
    }

    /** Encodes and decodes the accumulators of one type. Not thread-safe. */
    private static final class Codec implements AccumulatorCodec {
        private final RowData.FieldGetter min;
        private final DistinctViews.Codec map;
        private final RowDataSerializer rowSerializer;

        Codec(LogicalType type, LogicalType valueType, DistinctViews.Codec map) {
            this.min = RowData.createFieldGetter(valueType, 0);
            this.map = map;
            this.rowSerializer = (RowDataSerializer) (Object) InternalSerializers.create(type);
        }

        @Override
        public RowDataSerializer rowSerializer() {
            return rowSerializer;
        }

        @Override
        public ByteBuffer encode(RowData acc) {
            RawValueData<MapView<Object, Object>> raw = acc.getRawValue(2);
            long mapSize = acc.isNullAt(1) ? 0 : acc.getLong(1);
            return map.encodeAccumulator(min.getFieldOrNull(acc), mapSize, raw.toObject(map.serializer()));
        }

        @Override
        public RowData decode(ArrowBuf data, long start, int len) {
            Object[] parts = map.decodeAccumulator(data, start, len);
            @SuppressWarnings("unchecked")
            MapView<Object, Object> view = (MapView<Object, Object>) parts[2];
            return GenericRowData.of(parts[0], parts[1], BinaryRawValueData.fromObject(view));
        }
    }
}
