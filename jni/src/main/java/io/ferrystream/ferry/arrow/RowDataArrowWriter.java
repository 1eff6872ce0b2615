package io.ferrystream.ferry.arrow;

import java.math.BigInteger;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.FixedSizeBinaryVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TimeStampMilliVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.flink.core.memory.MemorySegment;
import org.apache.flink.table.api.dataview.MapView;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.RawValueData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.binary.BinarySegmentUtils;
import org.apache.flink.table.data.binary.BinaryStringData;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.TimestampType;

/**
 * Writes Flink {@link RowData} rows (any implementation, through its typed getters) into a reused
 * {@link VectorSchemaRoot} of {@link ArrowTypes#schemaOf(RowType)}: the row's fields, then the
 * RowKind byte. Buffers are allocated once for {@code capacity} rows and grow by doubling when a
 * batch is larger; after warm-up the hot path allocates nothing except the unscaled bytes of
 * DECIMAL(p > 18) values that do not fit in a long.
 *
 * <p>Per batch: {@link #write} rows, {@link #finish()} (sets the value and row counts), hand
 * {@link #root()} to {@code NativeOperator.process}, then {@link #reset()}. Resetting zeroes the
 * buffers in place, which is safe once {@code process} has returned (the library released them).
 */
public final class RowDataArrowWriter implements AutoCloseable {
    private final VectorSchemaRoot root;
    private final boolean ownsRoot;
    private final FieldWriter[] writers;
    private final TinyIntVector rowKind;
    private int count;

    private RowDataArrowWriter(VectorSchemaRoot root, RowType rowType, boolean ownsRoot) {
        this.root = root;
        this.ownsRoot = ownsRoot;
        List<FieldVector> vectors = root.getFieldVectors();
        int n = rowType.getFieldCount();
        if (vectors.size() != n + 1) {
            throw new IllegalArgumentException("root has " + vectors.size() + " vectors, want " + (n + 1)
                    + " (" + n + " fields + " + ArrowTypes.ROW_KIND_FIELD + ")");
        }
        writers = new FieldWriter[n];
        for (int i = 0; i < n; i++) {
            writers[i] = writerOf(i, ArrowTypes.carried(rowType.getTypeAt(i)), vectors.get(i));
        }
        FieldVector last = vectors.get(n);
        if (!(last instanceof TinyIntVector)) {
            throw new IllegalArgumentException("the last vector must be the TINYINT " + ArrowTypes.ROW_KIND_FIELD);
        }
        rowKind = (TinyIntVector) last;
    }

    /**
     * A writer with its own root of {@link ArrowTypes#schemaOf(RowType)}, allocated for
     * {@code capacity} rows; {@link #close()} closes the root.
     */
    public static RowDataArrowWriter create(RowType rowType, BufferAllocator allocator, int capacity) {
        VectorSchemaRoot root = VectorSchemaRoot.create(ArrowTypes.schemaOf(rowType), allocator);
        try {
            for (FieldVector v : root.getFieldVectors()) {
                v.setInitialCapacity(capacity);
                v.allocateNew();
            }
            return new RowDataArrowWriter(root, rowType, true);
        } catch (RuntimeException e) {
            root.close();
            throw e;
        }
    }

    /** A writer over an existing, allocated root (not closed by {@link #close()}). */
    public static RowDataArrowWriter forRoot(VectorSchemaRoot root, RowType rowType) {
        return new RowDataArrowWriter(root, rowType, false);
    }

    /** The root rows are written into. */
    public VectorSchemaRoot root() {
        return root;
    }

    /** Appends one row, RowKind included. */
    public void write(RowData row) {
        int i = count;
        for (FieldWriter w : writers) {
            w.write(row, i);
        }
        rowKind.setSafe(i, row.getRowKind().toByteValue());
        count = i + 1;
    }

    /** Rows written since the last {@link #reset()}. */
    public int count() {
        return count;
    }

    /** Sets the value counts of all vectors and the root's row count to {@link #count()}. */
    public void finish() {
        root.setRowCount(count);
    }

    /** Clears the batch in place, keeping the allocated buffers. */
    public void reset() {
        for (FieldVector v : root.getFieldVectors()) {
            v.reset();
        }
        root.setRowCount(0);
        count = 0;
    }

    @Override
    public void close() {
        if (ownsRoot) {
            root.close();
        }
    }

    // ---- per-type writers ----

    private static FieldWriter writerOf(int pos, LogicalType type, FieldVector v) {
        boolean nullable = type.isNullable();
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return new BooleanWriter(pos, nullable, (BitVector) v);
            case TINYINT:
                return new TinyIntWriter(pos, nullable, (TinyIntVector) v);
            case SMALLINT:
                return new SmallIntWriter(pos, nullable, (SmallIntVector) v);
            case INTEGER:
                return new IntWriter(pos, nullable, (IntVector) v);
            case BIGINT:
                return new BigIntWriter(pos, nullable, (BigIntVector) v);
            case FLOAT:
                return new FloatWriter(pos, nullable, (Float4Vector) v);
            case DOUBLE:
                return new DoubleWriter(pos, nullable, (Float8Vector) v);
            case DECIMAL: {
                DecimalType d = (DecimalType) type;
                return DecimalData.isCompact(d.getPrecision())
                        ? new CompactDecimalWriter(pos, nullable, (DecimalVector) v, d.getPrecision(), d.getScale())
                        : new DecimalWriter(pos, nullable, (DecimalVector) v, d.getPrecision(), d.getScale());
            }
            case CHAR:
            case VARCHAR:
                return new StringWriter(pos, nullable, (VarCharVector) v);
            case DATE:
                return new DateWriter(pos, nullable, (DateDayVector) v);
            case TIMESTAMP_WITHOUT_TIME_ZONE: {
                int p = ((TimestampType) type).getPrecision();
                return p <= 3
                        ? new TimestampMilliWriter(pos, nullable, (TimeStampMilliVector) v, p)
                        : new TimestampWriter(pos, nullable, (FixedSizeBinaryVector) v, p);
            }
            case BINARY:
            case VARBINARY:
                return new BytesWriter(pos, nullable, (VarBinaryVector) v);
            case RAW:
                return new DistinctViewWriter(pos, nullable, (VarBinaryVector) v, DistinctViews.codecOf(type));
            case STRUCTURED_TYPE:
                return new AccumulatorWriter(pos, nullable, (VarBinaryVector) v, AccumulatorCodec.of(type));
            default:
                throw ArrowTypes.unsupported(type);
        }
    }

    private abstract static class FieldWriter {
        final int pos;
        final boolean nullable;

        FieldWriter(int pos, boolean nullable) {
            this.pos = pos;
            this.nullable = nullable;
        }

        final void write(RowData row, int i) {
            if (nullable && row.isNullAt(pos)) {
                writeNull(i);
            } else {
                writeValue(row, i);
            }
        }

        abstract void writeNull(int i);

        abstract void writeValue(RowData row, int i);
    }

    private static final class BooleanWriter extends FieldWriter {
        final BitVector v;

        BooleanWriter(int pos, boolean nullable, BitVector v) {
            super(pos, nullable);
            this.v = v;
        }

        void writeNull(int i) {
            v.setNull(i);
        }

        void writeValue(RowData row, int i) {
            v.setSafe(i, row.getBoolean(pos) ? 1 : 0);
        }
    }

    private static final class TinyIntWriter extends FieldWriter {
        final TinyIntVector v;

        TinyIntWriter(int pos, boolean nullable, TinyIntVector v) {
            super(pos, nullable);
            this.v = v;
        }

        void writeNull(int i) {
            v.setNull(i);
        }

        void writeValue(RowData row, int i) {
            v.setSafe(i, row.getByte(pos));
        }
    }

    private static final class SmallIntWriter extends FieldWriter {
        final SmallIntVector v;

        SmallIntWriter(int pos, boolean nullable, SmallIntVector v) {
            super(pos, nullable);
            this.v = v;
        }

        void writeNull(int i) {
            v.setNull(i);
        }

        void writeValue(RowData row, int i) {
            v.setSafe(i, row.getShort(pos));
        }
    }

    private static final class IntWriter extends FieldWriter {
        final IntVector v;

        IntWriter(int pos, boolean nullable, IntVector v) {
            super(pos, nullable);
            this.v = v;
        }

        void writeNull(int i) {
            v.setNull(i);
        }

        void writeValue(RowData row, int i) {
            v.setSafe(i, row.getInt(pos));
        }
    }

    private static final class BigIntWriter extends FieldWriter {
        final BigIntVector v;

        BigIntWriter(int pos, boolean nullable, BigIntVector v) {
            super(pos, nullable);
            this.v = v;
        }

        void writeNull(int i) {
            v.setNull(i);
        }

        void writeValue(RowData row, int i) {
            v.setSafe(i, row.getLong(pos));
        }
    }

    private static final class FloatWriter extends FieldWriter {
        final Float4Vector v;

        FloatWriter(int pos, boolean nullable, Float4Vector v) {
            super(pos, nullable);
            this.v = v;
        }

        void writeNull(int i) {
            v.setNull(i);
        }

        void writeValue(RowData row, int i) {
            v.setSafe(i, row.getFloat(pos)); // raw bits: NaN payloads and -0.0 survive
        }
    }

    private static final class DoubleWriter extends FieldWriter {
        final Float8Vector v;

        DoubleWriter(int pos, boolean nullable, Float8Vector v) {
            super(pos, nullable);
            this.v = v;
        }

        void writeNull(int i) {
            v.setNull(i);
        }

        void writeValue(RowData row, int i) {
            v.setSafe(i, row.getDouble(pos));
        }
    }

    private static final class DateWriter extends FieldWriter {
        final DateDayVector v;

        DateWriter(int pos, boolean nullable, DateDayVector v) {
            super(pos, nullable);
            this.v = v;
        }

        void writeNull(int i) {
            v.setNull(i);
        }

        void writeValue(RowData row, int i) {
            v.setSafe(i, row.getInt(pos)); // days since epoch
        }
    }

    /** DECIMAL(p ≤ 18): the unscaled long, sign-extended to 16 bytes. */
    private static final class CompactDecimalWriter extends FieldWriter {
        final DecimalVector v;
        final int precision;
        final int scale;

        CompactDecimalWriter(int pos, boolean nullable, DecimalVector v, int precision, int scale) {
            super(pos, nullable);
            this.v = v;
            this.precision = precision;
            this.scale = scale;
        }

        void writeNull(int i) {
            v.setNull(i);
        }

        void writeValue(RowData row, int i) {
            v.setSafe(i, row.getDecimal(pos, precision, scale).toUnscaledLong());
        }
    }

    /** DECIMAL(p > 18): 16-byte little-endian two's complement of the unscaled value. */
    private static final class DecimalWriter extends FieldWriter {
        final DecimalVector v;
        final int precision;
        final int scale;

        DecimalWriter(int pos, boolean nullable, DecimalVector v, int precision, int scale) {
            super(pos, nullable);
            this.v = v;
            this.precision = precision;
            this.scale = scale;
        }

        void writeNull(int i) {
            v.setNull(i);
        }

        void writeValue(RowData row, int i) {
            DecimalData d = row.getDecimal(pos, precision, scale);
            // toBigDecimal() returns the DecimalData's own BigDecimal, and unscaledValue() its
            // cached BigInteger: no allocation unless the value needs more than 63 bits.
            BigInteger u = d.toBigDecimal().unscaledValue();
            if (u.bitLength() < 64) {
                v.setSafe(i, u.longValue());
            } else {
                v.setBigEndianSafe(i, u.toByteArray());
            }
        }
    }

    private static final class StringWriter extends FieldWriter {
        final VarCharVector v;
        byte[] scratch = new byte[64];

        StringWriter(int pos, boolean nullable, VarCharVector v) {
            super(pos, nullable);
            this.v = v;
        }

        void writeNull(int i) {
            v.setNull(i);
        }

        void writeValue(RowData row, int i) {
            StringData s = row.getString(pos);
            if (!(s instanceof BinaryStringData)) {
                byte[] b = s.toBytes();
                v.setSafe(i, b, 0, b.length);
                return;
            }
            BinaryStringData b = (BinaryStringData) s; // materialises a String-backed value once
            MemorySegment[] segs = b.getSegments();
            int off = b.getOffset();
            int len = b.getSizeInBytes();
            MemorySegment first = segs[0];
            if (!first.isOffHeap() && off + len <= first.size()) {
                v.setSafe(i, first.getArray(), off, len); // straight from the heap segment
                return;
            }
            if (scratch.length < len) {
                scratch = new byte[Math.max(len, scratch.length * 2)];
            }
            BinarySegmentUtils.copyToBytes(segs, off, scratch, 0, len);
            v.setSafe(i, scratch, 0, len);
        }
    }

    /** BINARY/VARBINARY: Flink's byte[] as Arrow binary, byte for byte. */
    private static final class BytesWriter extends FieldWriter {
        final VarBinaryVector v;

        BytesWriter(int pos, boolean nullable, VarBinaryVector v) {
            super(pos, nullable);
            this.v = v;
        }

        void writeNull(int i) {
            v.setNull(i);
        }

        void writeValue(RowData row, int i) {
            byte[] b = row.getBinary(pos);
            v.setSafe(i, b, 0, b.length);
        }
    }

    /** A DISTINCT call's map (RAW MapView) in Ferry's encoding ({@link DistinctViews}). */
    private static final class DistinctViewWriter extends FieldWriter {
        final VarBinaryVector v;
        final DistinctViews.Codec codec;

        DistinctViewWriter(int pos, boolean nullable, VarBinaryVector v, DistinctViews.Codec codec) {
            super(pos, nullable);
            this.v = v;
            this.codec = codec;
        }

        void writeNull(int i) {
            v.setNull(i);
        }

        void writeValue(RowData row, int i) {
            RawValueData<MapView<Object, Object>> raw = row.getRawValue(pos);
            java.nio.ByteBuffer b = codec.encode(raw.toObject(codec.serializer()));
            v.setSafe(i, b, 0, b.limit());
        }
    }

    /** A nested accumulator row in Ferry's encoding ({@link AccumulatorCodec}). */
    private static final class AccumulatorWriter extends FieldWriter {
        final VarBinaryVector v;
        final AccumulatorCodec codec;

        AccumulatorWriter(int pos, boolean nullable, VarBinaryVector v, AccumulatorCodec codec) {
            super(pos, nullable);
            this.v = v;
            this.codec = codec;
        }

        void writeNull(int i) {
            v.setNull(i);
        }

        void writeValue(RowData row, int i) {
            java.nio.ByteBuffer b = codec.encode(row.getRow(pos, codec.arity()));
            v.setSafe(i, b, 0, b.limit());
        }
    }

    /** TIMESTAMP(p ≤ 3): epoch milliseconds. */
    private static final class TimestampMilliWriter extends FieldWriter {
        final TimeStampMilliVector v;
        final int precision;

        TimestampMilliWriter(int pos, boolean nullable, TimeStampMilliVector v, int precision) {
            super(pos, nullable);
            this.v = v;
            this.precision = precision;
        }

        void writeNull(int i) {
            v.setNull(i);
        }

        void writeValue(RowData row, int i) {
            v.setSafe(i, row.getTimestamp(pos, precision).getMillisecond());
        }
    }

    /** TIMESTAMP(p > 3): int64 epoch millis LE, then int32 nano-of-millisecond LE. */
    private static final class TimestampWriter extends FieldWriter {
        final FixedSizeBinaryVector v;
        final int precision;

        TimestampWriter(int pos, boolean nullable, FixedSizeBinaryVector v, int precision) {
            super(pos, nullable);
            if (v.getByteWidth() != ArrowTypes.TIMESTAMP_WIDTH) {
                throw new IllegalArgumentException("TIMESTAMP(" + precision + ") needs FixedSizeBinary("
                        + ArrowTypes.TIMESTAMP_WIDTH + "), got width " + v.getByteWidth());
            }
            this.v = v;
            this.precision = precision;
        }

        void writeNull(int i) {
            v.setNull(i);
        }

        void writeValue(RowData row, int i) {
            TimestampData ts = row.getTimestamp(pos, precision);
            v.setIndexDefined(i); // grows the buffers when needed, then sets the validity bit
            ArrowBuf data = v.getDataBuffer();
            long at = (long) i * ArrowTypes.TIMESTAMP_WIDTH;
            data.setLong(at, ts.getMillisecond()); // ArrowBuf is little-endian
            data.setInt(at + 8, ts.getNanoOfMillisecond());
        }
    }
}
