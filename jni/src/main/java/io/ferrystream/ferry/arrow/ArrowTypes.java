package io.ferrystream.ferry.arrow;

import java.util.ArrayList;
import java.util.List;
import org.apache.arrow.vector.types.DateUnit;
import org.apache.arrow.vector.types.FloatingPointPrecision;
import org.apache.arrow.vector.types.TimeUnit;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.FieldType;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.flink.table.types.logical.CharType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.TimeType;
import org.apache.flink.table.types.logical.TimestampKind;
import org.apache.flink.table.types.logical.TimestampType;
import org.apache.flink.table.types.logical.VarCharType;

/**
 * The Arrow layout of Flink types across Ferry's boundary (docs/abi.md, "Columns across the
 * boundary"): BOOLEAN {@code b}, TINYINT..BIGINT {@code c s i l}, FLOAT/DOUBLE {@code f g},
 * DECIMAL(p,s) {@code d:p,s} (decimal128), CHAR/VARCHAR {@code u}, BINARY/VARBINARY {@code z}
 * (Flink's byte[], spec type BYTES), DATE {@code tdD},
 * TIMESTAMP(p ≤ 3) {@code tsm:}, TIMESTAMP(p > 3) {@code w:12} (int64 epoch millis LE, int32
 * nano-of-millisecond LE), TIMESTAMP_LTZ(p) as TIMESTAMP(p) and TIME(p) as INT ({@link #carried}), the RAW MapView of a DISTINCT call's partial state and
 * the accumulator of MIN/MAX with retraction as binary {@code z} ({@link DistinctViews}, {@link
 * MinMaxAccumulators}), and the hidden trailing non-null int8 {@value #ROW_KIND_FIELD} column
 * holding {@code RowKind.toByteValue()}.
 */
public final class ArrowTypes {
    /** Name of the hidden RowKind column that ends every batch. */
    public static final String ROW_KIND_FIELD = "$row_kind";
    /** Byte width of a TIMESTAMP(p > 3) value: int64 millis + int32 nano-of-millisecond. */
    public static final int TIMESTAMP_WIDTH = 12;

    private ArrowTypes() {}

    /** The batch schema of a row type: one field per row field, then {@value #ROW_KIND_FIELD}. */
    public static Schema schemaOf(RowType rowType) {
        List<Field> fields = new ArrayList<>(rowType.getFieldCount() + 1);
        for (RowType.RowField f : rowType.getFields()) {
            fields.add(fieldOf(f.getName(), f.getType()));
        }
        fields.add(rowKindField());
        return new Schema(fields);
    }

    /** The Arrow field of one column; nullable as the logical type it is carried as. */
    public static Field fieldOf(String name, LogicalType type) {
        LogicalType t = carried(type);
        return new Field(name, new FieldType(t.isNullable(), arrowTypeOf(t), null), null);
    }

    /**
     * The type a logical type crosses the boundary as: TIMESTAMP_LTZ(p) as TIMESTAMP(p), TIME(p)
     * as INT (Flink holds a TIME as an int of milliseconds of the day, in an INT's row slot,
     * ordered and hashed as one), every other type as itself. Both hold a {@code TimestampData} of epoch milliseconds and
     * nanoseconds in the same BinaryRowData slots, compare and hash alike, and no kernel reads a
     * wall-clock field of either, so the session time zone plays no part. A processing-time
     * attribute that is not materialized holds NULL in its rows: it is carried as nullable.
     */
    public static LogicalType carried(LogicalType type) {
        if (type instanceof LocalZonedTimestampType ltz) {
            return new TimestampType(ltz.isNullable() || ltz.getKind() == TimestampKind.PROCTIME, ltz.getPrecision());
        }
        if (type instanceof TimeType) {
            return new IntType(type.isNullable());
        }
        return type;
    }

    /**
     * {@code type} with each field as {@link #carried} makes it (TIMESTAMP_LTZ as TIMESTAMP, TIME as
     * INT): the row as it crosses into Go for an operator that only moves such fields and compares
     * row times as milliseconds ({@code getLong}), as Flink's joins do.
     */
    public static RowType carriedFields(RowType type) {
        List<RowType.RowField> fields = new ArrayList<>();
        for (RowType.RowField f : type.getFields()) {
            fields.add(new RowType.RowField(f.getName(), carried(f.getType()), f.getDescription().orElse(null)));
        }
        return new RowType(type.isNullable(), fields);
    }

    /** The non-null int8 RowKind field. */
    public static Field rowKindField() {
        return new Field(ROW_KIND_FIELD, FieldType.notNullable(new ArrowType.Int(8, true)), null);
    }

    /** The Arrow type a logical type crosses the boundary as. */
    public static ArrowType arrowTypeOf(LogicalType type) {
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return ArrowType.Bool.INSTANCE;
            case TINYINT:
                return new ArrowType.Int(8, true);
            case SMALLINT:
                return new ArrowType.Int(16, true);
            case INTEGER:
                return new ArrowType.Int(32, true);
            case BIGINT:
                return new ArrowType.Int(64, true);
            case FLOAT:
                return new ArrowType.FloatingPoint(FloatingPointPrecision.SINGLE);
            case DOUBLE:
                return new ArrowType.FloatingPoint(FloatingPointPrecision.DOUBLE);
            case DECIMAL: {
                DecimalType d = (DecimalType) type;
                return new ArrowType.Decimal(d.getPrecision(), d.getScale(), 128);
            }
            case CHAR:
            case VARCHAR:
                return ArrowType.Utf8.INSTANCE;
            case BINARY:
            case VARBINARY:
                return ArrowType.Binary.INSTANCE;
            case DATE:
                return new ArrowType.Date(DateUnit.DAY);
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
            case TIME_WITHOUT_TIME_ZONE:
                return arrowTypeOf(carried(type));
            case TIMESTAMP_WITHOUT_TIME_ZONE: {
                int p = ((TimestampType) type).getPrecision();
                return p <= 3
                        ? new ArrowType.Timestamp(TimeUnit.MILLISECOND, null)
                        : new ArrowType.FixedSizeBinary(TIMESTAMP_WIDTH);
            }
            case RAW:
                if (DistinctViews.isDistinctView(type)) {
                    return ArrowType.Binary.INSTANCE;
                }
                throw unsupported(type);
            case STRUCTURED_TYPE:
                if (AccumulatorCodec.isAccumulator(type)) {
                    return ArrowType.Binary.INSTANCE;
                }
                throw unsupported(type);
            default:
                throw unsupported(type);
        }
    }

    /**
     * The type name the operator spec uses for a logical type (docs/abi.md), with
     * {@code NOT NULL} when not nullable, e.g. {@code "DECIMAL(10, 2)"}, {@code "TIMESTAMP(6)"}.
     */
    public static String specTypeOf(LogicalType type) {
        if (arrowTypeOf(type) instanceof ArrowType.Binary) { // BINARY/VARBINARY, DistinctViews, AccumulatorCodec
            return type.isNullable() ? "BYTES" : "BYTES NOT NULL";
        }
        LogicalType t = carried(type);
        if ((t instanceof CharType c && c.getLength() == 0) || (t instanceof VarCharType v && v.getLength() == 0)) {
            // the type of an empty string literal, which has no serializable form
            return t.isNullable() ? "STRING" : "STRING NOT NULL";
        }
        return t.asSerializableString();
    }

    static UnsupportedOperationException unsupported(LogicalType type) {
        return new UnsupportedOperationException("Ferry does not carry the Flink type " + type.asSummaryString()
                + " (" + type.getTypeRoot() + ") across the native boundary");
    }
}
