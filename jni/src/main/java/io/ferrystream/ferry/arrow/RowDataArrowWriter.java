package io.ferrystream.ferry.arrow;

import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.util.MemoryUtil;
import org.apache.arrow.vector.BaseVariableWidthVector;
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
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.binary.BinarySegmentUtils;
import org.apache.flink.table.data.binary.BinaryStringData;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.TimestampType;
import org.apache.flink.types.RowKind;

/**
 * Writes Flink {@link RowData} rows (any implementation, through its typed getters) into a reused
 * {@link VectorSchemaRoot} of {@link ArrowTypes#schemaOf(RowType)}: the row's fields, then the
 * RowKind byte. Buffers are allocated once for {@code capacity} rows and grow by doubling when a
 * batch is larger; after warm-up the hot path allocates nothing except the unscaled bytes of
 * DECIMAL(p > 18) values that do not fit in a long.
 *
 * <p>Values go straight into the vectors' buffers by address ({@link MemoryUtil}, no per-value
 * bounds or reference-count checks): the row capacity of every vector is checked once per row
 * (and the buffers grown and their addresses re-read when a row would not fit), a variable-width
 * value's data capacity once per value. Validity bits are OR-ed into buffers {@link #reset()} zeroed
 * (those of NOT NULL columns and the RowKind set at once in {@link #finish()}); a NULL writes
 * nothing but, in a variable-width column, its offset. The bytes are those Arrow
 * Java's {@code setSafe} methods write, and {@link #finish()} hands the vectors the row count (and
 * the variable-width ones their last set index) as {@code setSafe} would have left them.
 *
 * <p>Per batch: {@link #write} rows, {@link #finish()} (sets the value and row counts), hand
 * {@link #root()} to {@code NativeOperator.process}, then {@link #reset()}. Resetting zeroes the
 * buffers in place, which is safe once {@code process} has returned (the library released them).
 */
public final class RowDataArrowWriter implements AutoCloseable {
    private final VectorSchemaRoot root;
    private final boolean ownsRoot;
    private final Column[] columns;
    private final Column[] varWidth;
    private final TinyIntVector rowKind;
    private long kindValidity;
    private long kindData;
    /** Rows every vector's validity, offset and fixed-width data buffers hold. */
    private int capacity;
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
        columns = new Column[n];
        int vars = 0;
        for (int i = 0; i < n; i++) {
            columns[i] = columnOf(i, ArrowTypes.carried(rowType.getTypeAt(i)), vectors.get(i));
            vars += columns[i].var != null ? 1 : 0;
        }
        varWidth = new Column[vars];
        for (Column c : columns) {
            if (c.var != null) {
                varWidth[--vars] = c;
            }
        }
        FieldVector last = vectors.get(n);
        if (!(last instanceof TinyIntVector)) {
            throw new IllegalArgumentException("the last vector must be the TINYINT " + ArrowTypes.ROW_KIND_FIELD);
        }
        rowKind = (TinyIntVector) last;
        refresh();
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
        if (i >= capacity) {
            growRows(i);
        }
        for (Column c : columns) {
            int pos = c.pos;
            if (c.nullable && row.isNullAt(pos)) {
                c.writeNull(i);
            } else {
                writeValue(c, row, pos, i);
            }
        }
        MemoryUtil.putByte(kindData + i, row.getRowKind().toByteValue());
        count = i + 1;
    }

    /**
     * Appends fields {@code fields} of {@code row}, RowKind included: what {@code
     * write(ProjectedRowData.from(fields).replaceRow(row))} writes, without the view's calls and
     * with the null bits read as one word. Returns false, writing nothing, unless the row is in
     * one segment with at most 56 fields (its header and null bits in one little-endian long).
     */
    public boolean writeProjected(BinaryRowData row, int[] fields) {
        MemorySegment[] segs = row.getSegments();
        int arity = row.getArity();
        if (segs.length != 1 || arity > 64 - BinaryRowData.HEADER_SIZE_IN_BITS || !BinaryRowData.LITTLE_ENDIAN
                || fields.length != columns.length) {
            return false;
        }
        long header = segs[0].getLong(row.getOffset()); // RowKind byte, then one bit per field
        byte kind = (byte) header;
        if ((kind & ~3) != 0) {
            RowKind.fromByteValue(kind); // throws: not a RowKind
        }
        int i = count;
        if (i >= capacity) {
            growRows(i);
        }
        for (Column c : columns) {
            int pos = fields[c.pos];
            if (pos < 0 || pos >= arity) {
                throw new IndexOutOfBoundsException("field " + pos + " of a row of " + arity);
            }
            if (c.nullable && (header & (1L << (pos + BinaryRowData.HEADER_SIZE_IN_BITS))) != 0) {
                c.writeNull(i);
            } else {
                writeValue(c, row, pos, i);
            }
        }
        MemoryUtil.putByte(kindData + i, kind);
        count = i + 1;
        return true;
    }

    /**
     * Appends fields {@code fields} of {@code row}, then {@code last} as the last column (BIGINT
     * NOT NULL), RowKind included: a projection of the row plus one value the row does not hold
     * (the window join's row handle), without a view around the row.
     */
    public void writeProjected(RowData row, int[] fields, long last) {
        if (fields.length != columns.length - 1) {
            throw new IllegalArgumentException(fields.length + " fields for " + columns.length + " columns and the last value");
        }
        int i = count;
        if (i >= capacity) {
            growRows(i);
        }
        for (int k = 0; k < fields.length; k++) {
            Column c = columns[k];
            int pos = fields[k];
            if (c.nullable && row.isNullAt(pos)) {
                c.writeNull(i);
            } else {
                writeValue(c, row, pos, i);
            }
        }
        Column c = columns[fields.length];
        MemoryUtil.putLong(c.data + ((long) i << 3), last);
        if (c.nullable) {
            setBit(c.validity, i);
        }
        MemoryUtil.putByte(kindData + i, row.getRowKind().toByteValue());
        count = i + 1;
    }

    /**
     * Writes the non-NULL field {@code pos} of {@code row} as row {@code i} of column {@code c}
     * (capacity ensured). Small enough to inline into both callers, where the row's class is
     * known; the rarer kinds are in {@link Column#writeOther}.
     */
    private static void writeValue(Column c, RowData row, int pos, int i) {
        long data = c.data;
        switch (c.kind) {
            case BOOLEAN:
                if (row.getBoolean(pos)) {
                    setBit(data, i);
                }
                break;
            case BYTE:
                MemoryUtil.putByte(data + i, row.getByte(pos));
                break;
            case SHORT:
                MemoryUtil.putShort(data + ((long) i << 1), row.getShort(pos));
                break;
            case INT:
                MemoryUtil.putInt(data + ((long) i << 2), row.getInt(pos));
                break;
            case LONG:
                MemoryUtil.putLong(data + ((long) i << 3), row.getLong(pos));
                break;
            case FLOAT: // raw bits: NaN payloads and -0.0 survive
                MemoryUtil.putInt(data + ((long) i << 2), Float.floatToRawIntBits(row.getFloat(pos)));
                break;
            case DOUBLE:
                MemoryUtil.putLong(data + ((long) i << 3), Double.doubleToRawLongBits(row.getDouble(pos)));
                break;
            case COMPACT_DECIMAL:
                putDecimal(data, i, row.getDecimal(pos, c.precision, c.scale).toUnscaledLong());
                break;
            case TIMESTAMP_MILLI:
                MemoryUtil.putLong(data + ((long) i << 3), row.getTimestamp(pos, c.precision).getMillisecond());
                break;
            case TIMESTAMP: {
                TimestampData ts = row.getTimestamp(pos, c.precision);
                long at = data + (long) i * ArrowTypes.TIMESTAMP_WIDTH;
                MemoryUtil.putLong(at, ts.getMillisecond());
                MemoryUtil.putInt(at + 8, ts.getNanoOfMillisecond());
                break;
            }
            case STRING:
                c.appendString(row.getString(pos), i);
                break;
            default:
                c.writeOther(row, pos, i);
        }
        if (c.nullable) {
            setBit(c.validity, i); // NOT NULL columns: all at once in finish
        }
    }

    /** Rows written since the last {@link #reset()}. */
    public int count() {
        return count;
    }

    /** Sets the value counts of all vectors and the root's row count to {@link #count()}. */
    public void finish() {
        for (Column c : columns) {
            if (!c.nullable) {
                setValid(c.validity, count);
            }
        }
        setValid(kindValidity, count);
        for (Column c : varWidth) {
            c.var.setLastSet(count - 1); // the offsets are written: nothing for setValueCount to fill
        }
        root.setRowCount(count);
    }

    /** Clears the batch in place, keeping the allocated buffers. */
    public void reset() {
        for (FieldVector v : root.getFieldVectors()) {
            v.reset();
        }
        root.setRowCount(0);
        count = 0;
        for (Column c : varWidth) {
            c.end = 0;
        }
        refresh();
    }

    @Override
    public void close() {
        if (ownsRoot) {
            root.close();
        }
    }

    // ---- buffers ----

    private static void setBit(long bitmap, int i) {
        long at = bitmap + (i >>> 3);
        MemoryUtil.putByte(at, (byte) (MemoryUtil.getByte(at) | (1 << (i & 7))));
    }

    /** Sets validity bits {@code [0, rows)} of a bitmap reset zeroed (what setSafe per row leaves). */
    private static void setValid(long bitmap, int rows) {
        MemoryUtil.setMemory(bitmap, rows >>> 3, (byte) -1);
        if ((rows & 7) != 0) {
            MemoryUtil.putByte(bitmap + (rows >>> 3), (byte) ((1 << (rows & 7)) - 1));
        }
    }

    /** A decimal128 slot: the unscaled long, sign-extended to 16 little-endian bytes. */
    private static void putDecimal(long data, int i, long unscaled) {
        long at = data + ((long) i << 4);
        MemoryUtil.putLong(at, unscaled);
        MemoryUtil.putLong(at + 8, unscaled >> 63);
    }

    /** Grows every vector that holds no row {@code i} (contents kept), then re-reads the addresses. */
    private void growRows(int i) {
        for (FieldVector v : root.getFieldVectors()) {
            while (v.getValueCapacity() <= i) {
                if (v instanceof BaseVariableWidthVector) {
                    ((BaseVariableWidthVector) v).reallocValidityAndOffsetBuffers();
                } else {
                    v.reAlloc();
                }
            }
        }
        refresh();
    }

    /**
     * Re-reads every buffer address and the row capacity (after an allocation or a reset); the
     * variable-width columns' {@code end} stays.
     */
    private void refresh() {
        int cap = rowKind.getValueCapacity();
        for (Column c : columns) {
            c.refresh();
            cap = Math.min(cap, c.vector.getValueCapacity());
        }
        kindValidity = rowKind.getValidityBuffer().memoryAddress();
        kindData = rowKind.getDataBuffer().memoryAddress();
        capacity = cap;
    }

    // ---- columns ----

    private static final int BOOLEAN = 0;
    private static final int BYTE = 1;
    private static final int SHORT = 2;
    private static final int INT = 3; // INT, DATE (days since epoch)
    private static final int LONG = 4;
    private static final int FLOAT = 5;
    private static final int DOUBLE = 6;
    private static final int COMPACT_DECIMAL = 7; // DECIMAL(p <= 18)
    private static final int DECIMAL = 8;
    private static final int TIMESTAMP_MILLI = 9; // TIMESTAMP(p <= 3): epoch millis
    private static final int TIMESTAMP = 10; // TIMESTAMP(p > 3): int64 millis LE, int32 nano-of-milli LE
    private static final int STRING = 11;
    private static final int BYTES = 12; // BINARY/VARBINARY: Flink's byte[], byte for byte
    private static final int DISTINCT_VIEW = 13; // a DISTINCT call's RAW MapView ({@link DistinctViews})
    private static final int ACCUMULATOR = 14; // a nested accumulator row ({@link AccumulatorCodec})

    private static Column columnOf(int pos, LogicalType type, FieldVector v) {
        Column c = new Column(pos, type.isNullable(), v);
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return c.as(BOOLEAN, BitVector.class);
            case TINYINT:
                return c.as(BYTE, TinyIntVector.class);
            case SMALLINT:
                return c.as(SHORT, SmallIntVector.class);
            case INTEGER:
                return c.as(INT, IntVector.class);
            case BIGINT:
                return c.as(LONG, BigIntVector.class);
            case FLOAT:
                return c.as(FLOAT, Float4Vector.class);
            case DOUBLE:
                return c.as(DOUBLE, Float8Vector.class);
            case DATE:
                return c.as(INT, DateDayVector.class);
            case DECIMAL: {
                DecimalType d = (DecimalType) type;
                c.precision = d.getPrecision();
                c.scale = d.getScale();
                return c.as(DecimalData.isCompact(d.getPrecision()) ? COMPACT_DECIMAL : DECIMAL, DecimalVector.class);
            }
            case TIMESTAMP_WITHOUT_TIME_ZONE: {
                c.precision = ((TimestampType) type).getPrecision();
                if (c.precision <= 3) {
                    return c.as(TIMESTAMP_MILLI, TimeStampMilliVector.class);
                }
                c.as(TIMESTAMP, FixedSizeBinaryVector.class);
                if (((FixedSizeBinaryVector) v).getByteWidth() != ArrowTypes.TIMESTAMP_WIDTH) {
                    throw new IllegalArgumentException("TIMESTAMP(" + c.precision + ") needs FixedSizeBinary("
                            + ArrowTypes.TIMESTAMP_WIDTH + "), got width " + ((FixedSizeBinaryVector) v).getByteWidth());
                }
                return c;
            }
            case CHAR:
            case VARCHAR:
                return c.as(STRING, VarCharVector.class);
            case BINARY:
            case VARBINARY:
                return c.as(BYTES, VarBinaryVector.class);
            case RAW:
                c.distinct = DistinctViews.codecOf(type);
                return c.as(DISTINCT_VIEW, VarBinaryVector.class);
            case STRUCTURED_TYPE:
                c.accumulator = AccumulatorCodec.of(type);
                return c.as(ACCUMULATOR, VarBinaryVector.class);
            default:
                throw ArrowTypes.unsupported(type);
        }
    }

    /**
     * One field's vector and its buffer addresses (valid until the next allocation: {@link
     * #refresh()}). A variable-width column keeps {@code end}, the byte offset its next value
     * starts at, and {@code dataCapacity}, its data buffer's bytes.
     */
    private static final class Column {
        final int pos;
        final boolean nullable;
        final FieldVector vector;
        BaseVariableWidthVector var; // null for fixed-width columns
        int kind;
        int precision;
        int scale;
        DistinctViews.Codec distinct;
        AccumulatorCodec accumulator;
        long validity;
        long data;
        long offsets;
        long dataCapacity;
        int end;
        byte[] scratch;

        Column(int pos, boolean nullable, FieldVector vector) {
            this.pos = pos;
            this.nullable = nullable;
            this.vector = vector;
        }

        /** This column as {@code kind}, its vector checked to be a {@code want}. */
        Column as(int kind, Class<? extends FieldVector> want) {
            if (!want.isInstance(vector)) {
                throw new IllegalArgumentException("field " + pos + " needs a " + want.getSimpleName() + ", got "
                        + vector.getClass().getSimpleName() + " (" + vector.getField() + ")");
            }
            this.kind = kind;
            if (vector instanceof BaseVariableWidthVector) {
                var = (BaseVariableWidthVector) vector;
                scratch = new byte[64];
            }
            return this;
        }

        void refresh() {
            validity = vector.getValidityBuffer().memoryAddress();
            ArrowBuf d = vector.getDataBuffer();
            data = d.memoryAddress();
            if (var != null) {
                offsets = var.getOffsetBuffer().memoryAddress();
                dataCapacity = d.capacity();
            }
        }

        /** A NULL as row {@code i}: its validity bit stays 0; a variable-width value is empty. */
        void writeNull(int i) {
            if (var != null) {
                endAt(i);
            }
        }

        /** {@link #writeValue}'s rarer kinds (no validity bit: the caller sets it). */
        void writeOther(RowData row, int pos, int i) {
            switch (kind) {
                case DECIMAL:
                    writeDecimal(row.getDecimal(pos, precision, scale), i);
                    break;
                case BYTES: {
                    byte[] b = row.getBinary(pos);
                    append(b, 0, b.length, i);
                    break;
                }
                case DISTINCT_VIEW: {
                    RawValueData<MapView<Object, Object>> raw = row.getRawValue(pos);
                    append(distinct.encode(raw.toObject(distinct.serializer())), i);
                    break;
                }
                case ACCUMULATOR:
                    append(accumulator.encode(row.getRow(pos, accumulator.arity())), i);
                    break;
                default:
                    throw new IllegalStateException("column kind " + kind);
            }
        }

        /** Ends value {@code i} at {@link #end}: its offsets entry {@code i + 1}. */
        void endAt(int i) {
            MemoryUtil.putInt(offsets + ((long) (i + 1) << 2), end);
        }

        /** Makes room for {@code len} more data bytes; returns the address to write them at. */
        long reserve(int len) {
            long need = (long) end + len;
            if (need > dataCapacity) {
                if (need > Integer.MAX_VALUE) {
                    throw new IllegalStateException("a batch of field " + pos + " needs " + need
                            + " bytes, more than Arrow's 32-bit offsets address");
                }
                var.reallocDataBuffer(need);
                ArrowBuf d = var.getDataBuffer();
                data = d.memoryAddress();
                dataCapacity = d.capacity();
            }
            return data + end;
        }

        void append(byte[] src, int off, int len, int i) {
            MemoryUtil.copyToMemory(src, off, reserve(len), len);
            end += len;
            endAt(i);
        }

        void append(ByteBuffer b, int i) {
            int len = b.limit();
            if (b.hasArray()) {
                append(b.array(), b.arrayOffset(), len, i);
                return;
            }
            byte[] s = scratchOf(len);
            b.duplicate().position(0).get(s, 0, len);
            append(s, 0, len, i);
        }

        void appendString(StringData s, int i) {
            if (!(s instanceof BinaryStringData)) {
                byte[] b = s.toBytes();
                append(b, 0, b.length, i);
                return;
            }
            BinaryStringData b = (BinaryStringData) s; // materialises a String-backed value once
            MemorySegment[] segs = b.getSegments();
            int off = b.getOffset();
            int len = b.getSizeInBytes();
            MemorySegment first = segs[0];
            if (!first.isOffHeap() && off + len <= first.size()) {
                append(first.getArray(), off, len, i); // straight from the heap segment
                return;
            }
            byte[] t = scratchOf(len);
            BinarySegmentUtils.copyToBytes(segs, off, t, 0, len);
            append(t, 0, len, i);
        }

        private byte[] scratchOf(int len) {
            if (scratch.length < len) {
                scratch = new byte[Math.max(len, scratch.length * 2)];
            }
            return scratch;
        }

        /** DECIMAL(p > 18): 16-byte little-endian two's complement of the unscaled value. */
        void writeDecimal(DecimalData d, int i) {
            // toBigDecimal() returns the DecimalData's own BigDecimal, and unscaledValue() its
            // cached BigInteger: no allocation unless the value needs more than 63 bits.
            BigInteger u = d.toBigDecimal().unscaledValue();
            if (u.bitLength() < 64) {
                putDecimal(data, i, u.longValue());
            } else {
                // row i is within the capacity: no reallocation, the addresses stay valid
                ((DecimalVector) vector).setBigEndianSafe(i, u.toByteArray());
            }
        }
    }
}
