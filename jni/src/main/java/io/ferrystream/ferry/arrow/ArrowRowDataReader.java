package io.ferrystream.ferry.arrow;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.List;
import org.apache.arrow.memory.ArrowBuf;
import org.apache.arrow.memory.util.MemoryUtil;
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
import org.apache.flink.core.memory.MemorySegmentFactory;
import org.apache.flink.table.api.dataview.MapView;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.binary.BinaryRawValueData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.binary.BinaryStringData;
import org.apache.flink.table.data.columnar.ColumnarRowData;
import org.apache.flink.table.data.columnar.vector.BooleanColumnVector;
import org.apache.flink.table.data.columnar.vector.ByteColumnVector;
import org.apache.flink.table.data.columnar.vector.BytesColumnVector;
import org.apache.flink.table.data.columnar.vector.ColumnVector;
import org.apache.flink.table.data.columnar.vector.DecimalColumnVector;
import org.apache.flink.table.data.columnar.vector.DoubleColumnVector;
import org.apache.flink.table.data.columnar.vector.FloatColumnVector;
import org.apache.flink.table.data.columnar.vector.IntColumnVector;
import org.apache.flink.table.data.columnar.vector.LongColumnVector;
import org.apache.flink.table.data.columnar.vector.ShortColumnVector;
import org.apache.flink.table.data.columnar.vector.TimestampColumnVector;
import org.apache.flink.table.data.columnar.vector.VectorizedColumnBatch;
import org.apache.flink.table.data.writer.BinaryRowWriter;
import org.apache.flink.table.runtime.typeutils.RawValueDataSerializer;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.LogicalTypeFamily;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.TimestampType;
import org.apache.flink.types.RowKind;

/**
 * Exposes the rows of a batch root (columns of {@link ArrowTypes}, then {@code $row_kind}, e.g. a
 * root of {@code NativeOperator.outputSchema()}) as Flink {@link RowData}.
 *
 * <p>Fixed-width values are read in place from the Arrow buffers through Flink's columnar vector
 * interfaces; {@link #read(int)} returns one reused {@link ColumnarRowData} positioned at the row
 * with its RowKind set. Strings are copied into a fresh {@code byte[]} per access (Flink's
 * {@code BinaryStringData} needs heap bytes, and a string must stay valid after the batch is
 * released), decimals and timestamps become new {@code DecimalData}/{@code TimestampData}.
 *
 * <p>{@link #readBinary(int)} instead copies row {@code i} into one reused {@link BinaryRowData},
 * byte for byte what Flink's {@code RowDataSerializer.toBinaryRow} makes of {@code read(i)}, with
 * typed writes: no boxing, and no object per fixed-width value or per string of up to 7 bytes
 * (Flink keeps those in the field's 8-byte slot). Fixed-width values, validity bits and short
 * strings are read by address ({@link MemoryUtil}, unchecked): {@link #load()} checks once per
 * batch that every buffer holds the loaded rows, short strings check their offsets per value.
 * When every column has such a fixed-width slot (no strings, large decimals, precise timestamps
 * or binary columns), the first {@code readBinary} after a load writes the whole batch into one
 * reused heap buffer, column by column, and each call re-points the reused row at its slice.
 *
 * <p>Importing into a root replaces its buffers: call {@link #load()} after every import (and
 * before the first read) to re-fetch them. Rows are valid until the root is reloaded or closed.
 */
public final class ArrowRowDataReader {
    private final VectorSchemaRoot root;
    private final ArrowColumn[] columns;
    private final TinyIntVector rowKind;
    private final VectorizedColumnBatch batch;
    private final ColumnarRowData row;
    private final BinaryRowData binaryRow;
    private final BinaryRowWriter binaryWriter;
    /** Every column is read by address with a fixed-size slot: readBinary reads a transposed batch. */
    private final boolean fixedOnly;
    private final int fixedSize;
    /** The loaded batch as BinaryRowData, row i at {@code i * fixedSize} (fixedOnly; valid if transposed). */
    private byte[] rowBytes = new byte[0];
    private MemorySegment[] rowSegments = {MemorySegmentFactory.wrap(rowBytes)}; // one array: pointTo(segment) allocates one
    private boolean transposed;
    private ArrowBuf kinds;
    private long kindsAddress;
    private int rowCount;

    public ArrowRowDataReader(VectorSchemaRoot root) {
        this(root, null);
    }

    /**
     * A reader whose binary columns are the RAW distinct maps of {@code type} (the root's row
     * type, RowKind excluded), decoded with {@link DistinctViews}; type may be null when the root
     * has no binary column.
     */
    public ArrowRowDataReader(VectorSchemaRoot root, RowType type) {
        this.root = root;
        List<FieldVector> vectors = root.getFieldVectors();
        if (vectors.isEmpty() || !(vectors.get(vectors.size() - 1) instanceof TinyIntVector)) {
            throw new IllegalArgumentException("the last column must be the TINYINT " + ArrowTypes.ROW_KIND_FIELD);
        }
        int n = vectors.size() - 1;
        columns = new ArrowColumn[n];
        for (int i = 0; i < n; i++) {
            columns[i] = columnOf(vectors.get(i), type == null || i >= type.getFieldCount() ? null : type.getTypeAt(i));
        }
        rowKind = (TinyIntVector) vectors.get(n);
        batch = new VectorizedColumnBatch(columns);
        row = new ColumnarRowData(batch);
        binaryRow = new BinaryRowData(n);
        binaryWriter = new BinaryRowWriter(binaryRow);
        boolean fixed = true;
        for (ArrowColumn c : columns) {
            fixed &= dataBytes(c.kind, 1) > 0;
        }
        fixedOnly = fixed;
        fixedSize = binaryRow.getFixedLengthPartSize();
        load();
    }

    /** Re-fetches the root's buffers and row count; call after each import into the root. */
    public void load() {
        rowCount = root.getRowCount();
        for (ArrowColumn c : columns) {
            c.load(rowCount);
        }
        kinds = rowKind.getDataBuffer();
        need(kinds, rowCount, ArrowTypes.ROW_KIND_FIELD);
        kindsAddress = kinds.memoryAddress();
        batch.setNumRows(rowCount);
        transposed = false;
    }

    /** Rows of the loaded batch. */
    public int rowCount() {
        return rowCount;
    }

    /** Columns per row, RowKind not counted. */
    public int arity() {
        return columns.length;
    }

    /** The RowKind of row {@code i}. */
    public RowKind rowKind(int i) {
        return RowKind.fromByteValue(kinds.getByte(i));
    }

    /** Row {@code i} as a reused RowData (the next call re-positions the same object). */
    public RowData read(int i) {
        checkRow(i);
        row.setRowId(i);
        row.setRowKind(RowKind.fromByteValue(kinds.getByte(i)));
        return row;
    }

    /**
     * Row {@code i} copied into a reused BinaryRowData (the next call overwrites it): the bytes
     * {@code RowDataSerializer.toBinaryRow(read(i))} produces, written field by field.
     */
    public BinaryRowData readBinary(int i) {
        checkRow(i);
        if (fixedOnly) {
            if (!transposed) {
                transpose();
            }
            binaryRow.pointTo(rowSegments, i * fixedSize, fixedSize);
            return binaryRow;
        }
        BinaryRowWriter w = binaryWriter;
        w.reset();
        w.writeRowKind(RowKind.fromByteValue(MemoryUtil.getByte(kindsAddress + i)));
        ArrowColumn[] cols = columns;
        for (int c = 0; c < cols.length; c++) {
            ArrowColumn col = cols[c];
            long valid = col.validityAddress;
            if (valid != 0 && (MemoryUtil.getByte(valid + (i >>> 3)) & (1 << (i & 7))) == 0) {
                w.setNullAt(c);
                continue;
            }
            long d = col.dataAddress;
            // the slot bytes BinaryRowWriter's typed writes make: floats as their raw bits, compact
            // decimals and timestamps as their long
            switch (col.kind) {
                case BIT:
                    w.writeBoolean(c, (MemoryUtil.getByte(d + (i >>> 3)) & (1 << (i & 7))) != 0);
                    break;
                case BYTE:
                    w.writeByte(c, MemoryUtil.getByte(d + i));
                    break;
                case SHORT:
                    w.writeShort(c, MemoryUtil.getShort(d + ((long) i << 1)));
                    break;
                case INT:
                    w.writeInt(c, MemoryUtil.getInt(d + ((long) i << 2)));
                    break;
                case LONG:
                    w.writeLong(c, MemoryUtil.getLong(d + ((long) i << 3)));
                    break;
                case DECIMAL64:
                    w.writeLong(c, MemoryUtil.getLong(d + ((long) i << 4)));
                    break;
                case UTF8:
                    ((StringColumn) col).writeDirect(w, c, i);
                    break;
                default:
                    col.write(w, c, i);
            }
        }
        w.complete();
        return binaryRow;
    }

    /**
     * Writes every loaded row as a BinaryRowData into {@link #rowBytes}, one column at a time: the
     * bytes BinaryRowWriter makes of the row (RowKind byte, null bits, slots zeroed for NULLs,
     * each value with its type's width, the rest of its slot zero). A column without NULLs in
     * the batch skips its validity bits.
     */
    private void transpose() {
        int n = rowCount;
        int size = fixedSize;
        long need = (long) n * size;
        if (need > Integer.MAX_VALUE - 8) {
            throw new IllegalStateException("a batch of " + n + " rows of " + size + " bytes is too large");
        }
        if (rowBytes.length < need) {
            rowBytes = new byte[(int) Math.max(need, Math.min(Integer.MAX_VALUE - 8, 2L * rowBytes.length))];
            rowSegments = new MemorySegment[] {MemorySegmentFactory.wrap(rowBytes)};
        }
        MemorySegment seg = rowSegments[0];
        int nullBytes = size - 8 * columns.length;
        for (int i = 0, at = 0; i < n; i++, at += size) { // the header: RowKind, no NULLs yet
            seg.putLong(at, RowKind.fromByteValue(MemoryUtil.getByte(kindsAddress + i)).toByteValue() & 0xFFL);
            for (int b = 8; b < nullBytes; b += 8) {
                seg.putLong(at + b, 0L);
            }
        }
        // Every slot is written whole: a NULL's with 0 (setNullAt), a narrower value's zero-extended
        // (the high bytes BinaryRowWriter leaves untouched are zero in its rows: only setNullAt, 0,
        // and the same narrow write ever reach that slot).
        for (int c = 0; c < columns.length; c++) {
            ArrowColumn col = columns[c];
            long valid = col.validityAddress == 0 || col.vector.getNullCount() == 0 ? 0 : col.validityAddress;
            long d = col.dataAddress;
            int slot = nullBytes + 8 * c;
            int bit = c + BinaryRowData.HEADER_SIZE_IN_BITS;
            int nullByte = bit >>> 3;
            byte nullMask = (byte) (1 << (bit & 7));
            int kind = col.kind;
            for (int i = 0, at = 0; i < n; i++, at += size) {
                if (valid != 0 && (MemoryUtil.getByte(valid + (i >>> 3)) & (1 << (i & 7))) == 0) {
                    seg.put(at + nullByte, (byte) (seg.get(at + nullByte) | nullMask));
                    seg.putLong(at + slot, 0L);
                    continue;
                }
                switch (kind) {
                    case BIT:
                        seg.putLong(at + slot, (MemoryUtil.getByte(d + (i >>> 3)) >>> (i & 7)) & 1L);
                        break;
                    case BYTE:
                        seg.putLong(at + slot, MemoryUtil.getByte(d + i) & 0xFFL);
                        break;
                    case SHORT:
                        seg.putLong(at + slot, MemoryUtil.getShort(d + ((long) i << 1)) & 0xFFFFL);
                        break;
                    case INT:
                        seg.putLong(at + slot, MemoryUtil.getInt(d + ((long) i << 2)) & 0xFFFFFFFFL);
                        break;
                    case LONG:
                        seg.putLong(at + slot, MemoryUtil.getLong(d + ((long) i << 3)));
                        break;
                    case DECIMAL64:
                        seg.putLong(at + slot, MemoryUtil.getLong(d + ((long) i << 4)));
                        break;
                    default:
                        throw new IllegalStateException("column kind " + kind);
                }
            }
        }
        transposed = true;
    }

    /** Throws unless {@code buf} holds {@code bytes} bytes (a buffer Go exported too short). */
    private static void need(ArrowBuf buf, long bytes, Object what) {
        if (bytes > 0 && (buf == null || buf.capacity() < bytes)) {
            throw new IllegalStateException("Arrow buffer of " + what + " holds " + (buf == null ? 0 : buf.capacity())
                    + " bytes, the batch needs " + bytes);
        }
    }

    // how readBinary reads a column: by address with the given slot width, or (OTHER) through write
    private static final int OTHER = 0;
    private static final int BIT = 1; // bit-packed BOOLEAN
    private static final int BYTE = 2;
    private static final int SHORT = 3;
    private static final int INT = 4; // INT, DATE, FLOAT (raw bits)
    private static final int LONG = 5; // BIGINT, DOUBLE (raw bits), TIMESTAMP(p <= 3)
    private static final int DECIMAL64 = 6; // DECIMAL(p <= 18): the low 8 of 16 bytes
    private static final int UTF8 = 7; // VARCHAR/CHAR: int32 offsets and data

    /** Data-buffer bytes {@code rows} rows of a column of {@code kind} span (0: not read by address). */
    private static long dataBytes(int kind, int rows) {
        switch (kind) {
            case BIT:
                return (rows + 7L) >>> 3;
            case BYTE:
                return rows;
            case SHORT:
                return 2L * rows;
            case INT:
                return 4L * rows;
            case LONG:
                return 8L * rows;
            case DECIMAL64:
                return 16L * rows;
            default:
                return 0;
        }
    }

    private void checkRow(int i) {
        if (i < 0 || i >= rowCount) {
            throw new IndexOutOfBoundsException("row " + i + " of " + rowCount);
        }
    }

    private static ArrowColumn columnOf(FieldVector v, LogicalType type) {
        if (v instanceof VarBinaryVector) {
            if (type == null) {
                throw new UnsupportedOperationException("binary Arrow field " + v.getField() + " without its Flink type");
            }
            if (AccumulatorCodec.isAccumulator(type)) {
                return new AccumulatorColumn(v, AccumulatorCodec.of(type));
            }
            if (type.is(LogicalTypeFamily.BINARY_STRING)) {
                return new BytesColumn(v);
            }
            return new DistinctViewColumn(v, DistinctViews.codecOf(type));
        } else if (v instanceof BitVector) {
            return new BooleanColumn(v);
        } else if (v instanceof TinyIntVector) {
            return new ByteColumn(v);
        } else if (v instanceof SmallIntVector) {
            return new ShortColumn(v);
        } else if (v instanceof IntVector || v instanceof DateDayVector) {
            return new IntColumn(v);
        } else if (v instanceof BigIntVector) {
            return new LongColumn(v);
        } else if (v instanceof Float4Vector) {
            return new FloatColumn(v);
        } else if (v instanceof Float8Vector) {
            return new DoubleColumn(v);
        } else if (v instanceof DecimalVector) {
            DecimalVector d = (DecimalVector) v;
            return new DecimalColumn(v, d.getPrecision(), d.getScale());
        } else if (v instanceof VarCharVector) {
            return new StringColumn(v);
        } else if (v instanceof TimeStampMilliVector) {
            return new TimestampMilliColumn(v);
        } else if (v instanceof FixedSizeBinaryVector
                && ((FixedSizeBinaryVector) v).getByteWidth() == ArrowTypes.TIMESTAMP_WIDTH) {
            return new TimestampColumn(v);
        }
        throw new UnsupportedOperationException("no Ferry column for Arrow field " + v.getField());
    }

    /** A column over one Arrow vector; {@link #load(int)} caches its current buffers. */
    private abstract static class ArrowColumn implements ColumnVector {
        final FieldVector vector;
        final int kind;
        ArrowBuf validity;
        ArrowBuf data;
        /** The loaded buffers' addresses (0: no validity buffer, no NULLs), checked to hold the rows. */
        long validityAddress;
        long dataAddress;

        ArrowColumn(FieldVector vector) {
            this(vector, OTHER);
        }

        ArrowColumn(FieldVector vector, int kind) {
            this.vector = vector;
            this.kind = kind;
        }

        void load(int rows) {
            ArrowBuf v = vector.getValidityBuffer();
            validity = v != null && v.capacity() > 0 ? v : null;
            data = vector.getDataBuffer();
            if (validity != null) {
                need(validity, (rows + 7L) >>> 3, vector.getField());
            }
            need(data, dataBytes(kind, rows), vector.getField());
            validityAddress = validity == null ? 0 : validity.memoryAddress();
            dataAddress = data == null ? 0 : data.memoryAddress();
        }

        /** Writes the non-NULL value of row {@code i} as field {@code pos}, as BinaryWriter.write does. */
        abstract void write(BinaryRowWriter w, int pos, int i);

        @Override
        public final boolean isNullAt(int i) {
            return validity != null && (validity.getByte(i >>> 3) & (1 << (i & 7))) == 0;
        }
    }

    private static final class BooleanColumn extends ArrowColumn implements BooleanColumnVector {
        BooleanColumn(FieldVector v) {
            super(v, BIT);
        }

        @Override
        public boolean getBoolean(int i) {
            return (data.getByte(i >>> 3) & (1 << (i & 7))) != 0;
        }

        @Override
        void write(BinaryRowWriter w, int pos, int i) {
            w.writeBoolean(pos, getBoolean(i));
        }
    }

    private static final class ByteColumn extends ArrowColumn implements ByteColumnVector {
        ByteColumn(FieldVector v) {
            super(v, BYTE);
        }

        @Override
        public byte getByte(int i) {
            return data.getByte(i);
        }

        @Override
        void write(BinaryRowWriter w, int pos, int i) {
            w.writeByte(pos, getByte(i));
        }
    }

    private static final class ShortColumn extends ArrowColumn implements ShortColumnVector {
        ShortColumn(FieldVector v) {
            super(v, SHORT);
        }

        @Override
        public short getShort(int i) {
            return data.getShort((long) i * 2);
        }

        @Override
        void write(BinaryRowWriter w, int pos, int i) {
            w.writeShort(pos, getShort(i));
        }
    }

    /** INT and DATE (days since epoch). */
    private static final class IntColumn extends ArrowColumn implements IntColumnVector {
        IntColumn(FieldVector v) {
            super(v, INT);
        }

        @Override
        public int getInt(int i) {
            return data.getInt((long) i * 4);
        }

        @Override
        void write(BinaryRowWriter w, int pos, int i) {
            w.writeInt(pos, getInt(i));
        }
    }

    private static final class LongColumn extends ArrowColumn implements LongColumnVector {
        LongColumn(FieldVector v) {
            super(v, LONG);
        }

        @Override
        public long getLong(int i) {
            return data.getLong((long) i * 8);
        }

        @Override
        void write(BinaryRowWriter w, int pos, int i) {
            w.writeLong(pos, getLong(i));
        }
    }

    private static final class FloatColumn extends ArrowColumn implements FloatColumnVector {
        FloatColumn(FieldVector v) {
            super(v, INT);
        }

        @Override
        public float getFloat(int i) {
            return Float.intBitsToFloat(data.getInt((long) i * 4));
        }

        @Override
        void write(BinaryRowWriter w, int pos, int i) {
            w.writeFloat(pos, getFloat(i));
        }
    }

    private static final class DoubleColumn extends ArrowColumn implements DoubleColumnVector {
        DoubleColumn(FieldVector v) {
            super(v, LONG);
        }

        @Override
        public double getDouble(int i) {
            return Double.longBitsToDouble(data.getLong((long) i * 8));
        }

        @Override
        void write(BinaryRowWriter w, int pos, int i) {
            w.writeDouble(pos, getDouble(i));
        }
    }

    /** decimal128: 16-byte little-endian two's complement unscaled values. */
    private static final class DecimalColumn extends ArrowColumn implements DecimalColumnVector {
        final int precision;
        final int scale;
        final boolean compact;

        DecimalColumn(FieldVector v, int precision, int scale) {
            super(v, DecimalData.isCompact(precision) ? DECIMAL64 : OTHER);
            this.precision = precision;
            this.scale = scale;
            this.compact = DecimalData.isCompact(precision);
        }

        @Override
        public DecimalData getDecimal(int i, int wantPrecision, int wantScale) {
            long at = (long) i * 16;
            DecimalData d;
            if (compact) {
                d = DecimalData.fromUnscaledLong(data.getLong(at), precision, scale);
            } else {
                // what DecimalData.fromUnscaledBytes does with the 16 bytes big-endian, without
                // them when the value fits in a long (the high word is the low word's sign)
                long lo = data.getLong(at);
                long hi = data.getLong(at + 8);
                BigInteger u;
                if (hi == lo >> 63) {
                    u = BigInteger.valueOf(lo);
                } else {
                    byte[] be = new byte[16];
                    for (int k = 0; k < 8; k++) {
                        be[7 - k] = (byte) (hi >>> (k << 3));
                        be[15 - k] = (byte) (lo >>> (k << 3));
                    }
                    u = new BigInteger(be);
                }
                d = DecimalData.fromBigDecimal(new BigDecimal(u, scale), precision, scale);
            }
            if (d == null || (wantPrecision == precision && wantScale == scale)) {
                return d;
            }
            BigDecimal bd = d.toBigDecimal();
            return DecimalData.fromBigDecimal(bd, wantPrecision, wantScale);
        }

        /** A compact decimal is its unscaled long in the fixed part (BinaryWriter.writeDecimal). */
        @Override
        void write(BinaryRowWriter w, int pos, int i) {
            if (compact) {
                w.writeLong(pos, data.getLong((long) i * 16));
            } else {
                w.writeDecimal(pos, getDecimal(i, precision, scale), precision);
            }
        }
    }

    /**
     * VARCHAR/CHAR: int32 offsets and UTF-8 bytes, copied into a new array per {@link #getBytes}.
     * {@link #write} reads a heap copy of the batch's bytes, made at its first call after a load.
     */
    /** BINARY/VARBINARY: each value copied into a byte[] of its own, as Flink holds it. */
    private static final class BytesColumn extends ArrowColumn implements BytesColumnVector {
        ArrowBuf offsets;

        BytesColumn(FieldVector v) {
            super(v);
        }

        @Override
        void load(int rows) {
            super.load(rows);
            offsets = vector.getOffsetBuffer();
        }

        private byte[] bytes(int i) {
            int start = offsets.getInt((long) i * 4);
            byte[] b = new byte[offsets.getInt((long) i * 4 + 4) - start];
            data.getBytes(start, b, 0, b.length);
            return b;
        }

        @Override
        void write(BinaryRowWriter w, int pos, int i) {
            w.writeBinary(pos, bytes(i));
        }

        @Override
        public Bytes getBytes(int i) {
            byte[] b = bytes(i);
            return new Bytes(b, 0, b.length);
        }
    }

    private static final class StringColumn extends ArrowColumn implements BytesColumnVector {
        ArrowBuf offsets;
        int rows;
        boolean copied; // heap holds this load's bytes
        byte[] heap = new byte[0];
        MemorySegment[] heapSegments = {MemorySegmentFactory.wrap(heap)};

        long offsetsAddress;
        long dataCapacity;

        StringColumn(FieldVector v) {
            super(v, UTF8);
        }

        @Override
        void load(int rows) {
            super.load(rows);
            offsets = vector.getOffsetBuffer();
            need(offsets, rows == 0 ? 0 : 4L * (rows + 1), vector.getField());
            offsetsAddress = offsets.memoryAddress();
            dataCapacity = data == null ? 0 : data.capacity();
            this.rows = rows;
            copied = false;
        }

        /**
         * {@link #write}, a string of up to 7 bytes straight from the data buffer into the
         * field's slot as Flink's writer lays it out: the bytes little-endian in the low 7
         * bytes, {@code 0x80 | length} in the high byte.
         */
        void writeDirect(BinaryRowWriter w, int pos, int i) {
            long at = offsetsAddress + ((long) i << 2);
            int start = MemoryUtil.getInt(at);
            int len = MemoryUtil.getInt(at + 4) - start;
            if (len > 7 || !BinaryRowData.LITTLE_ENDIAN) {
                write(w, pos, i);
                return;
            }
            if (start < 0 || len < 0 || start + len > dataCapacity) {
                throw new IllegalStateException("string " + i + " of " + vector.getField() + " spans [" + start + ", "
                        + (start + len) + ") of " + dataCapacity + " data bytes");
            }
            long from = dataAddress + start;
            long sevenBytes = 0;
            for (int k = 0; k < len; k++) {
                sevenBytes |= (MemoryUtil.getByte(from + k) & 0xFFL) << (k << 3);
            }
            w.writeLong(pos, ((len | 0x80L) << 56) | sevenBytes);
        }

        private void copyToHeap() {
            int bytes = rows == 0 ? 0 : offsets.getInt((long) rows * 4);
            if (heap.length < bytes) {
                heap = new byte[Math.max(bytes, heap.length * 2)];
                heapSegments = new MemorySegment[] {MemorySegmentFactory.wrap(heap)};
            }
            if (bytes > 0) {
                data.getBytes(0, heap, 0, bytes);
            }
            copied = true;
        }

        @Override
        void write(BinaryRowWriter w, int pos, int i) {
            if (!copied) {
                copyToHeap();
            }
            int start = offsets.getInt((long) i * 4);
            int len = offsets.getInt((long) i * 4 + 4) - start;
            w.writeString(pos, BinaryStringData.fromAddress(heapSegments, start, len));
        }

        @Override
        public Bytes getBytes(int i) {
            int start = offsets.getInt((long) i * 4);
            int len = offsets.getInt((long) i * 4 + 4) - start;
            byte[] b = new byte[len];
            if (len > 0) {
                data.getBytes(start, b, 0, len);
            }
            return new Bytes(b, 0, len);
        }
    }

    /**
     * A DISTINCT call's map: Ferry's encoding ({@link DistinctViews}) decoded into a heap MapView,
     * written as Flink's local aggregate writes it ({@code BinaryRawValueData.fromObject}).
     */
    private static final class DistinctViewColumn extends ArrowColumn implements BytesColumnVector {
        final DistinctViews.Codec codec;
        final RawValueDataSerializer<MapView<Object, Object>> raw;
        ArrowBuf offsets;

        DistinctViewColumn(FieldVector v, DistinctViews.Codec codec) {
            super(v);
            this.codec = codec;
            this.raw = new RawValueDataSerializer<>(codec.serializer());
        }

        @Override
        void load(int rows) {
            super.load(rows);
            offsets = vector.getOffsetBuffer();
        }

        MapView<Object, Object> view(int i) {
            int start = offsets.getInt((long) i * 4);
            int len = offsets.getInt((long) i * 4 + 4) - start;
            return codec.decode(data, start, len);
        }

        @Override
        void write(BinaryRowWriter w, int pos, int i) {
            w.writeRawValue(pos, BinaryRawValueData.fromObject(view(i)), raw);
        }

        /** The map serialized by the RAW type's serializer (what BinaryRawValueData.fromBytes reads). */
        @Override
        public Bytes getBytes(int i) {
            byte[] b = BinaryRawValueData.fromObject(view(i)).toBytes(codec.serializer());
            return new Bytes(b, 0, b.length);
        }
    }

    /**
     * A nested accumulator row: Ferry's encoding ({@link AccumulatorCodec})
     * decoded into the nested row Flink's local aggregate emits. Only {@link #write} reads it
     * ({@code readBinary}); the columnar {@code read} path has no nested rows.
     */
    private static final class AccumulatorColumn extends ArrowColumn implements BytesColumnVector {
        final AccumulatorCodec codec;
        ArrowBuf offsets;

        AccumulatorColumn(FieldVector v, AccumulatorCodec codec) {
            super(v);
            this.codec = codec;
        }

        @Override
        void load(int rows) {
            super.load(rows);
            offsets = vector.getOffsetBuffer();
        }

        @Override
        void write(BinaryRowWriter w, int pos, int i) {
            int start = offsets.getInt((long) i * 4);
            int len = offsets.getInt((long) i * 4 + 4) - start;
            w.writeRow(pos, codec.decode(data, start, len), codec.rowSerializer());
        }

        @Override
        public Bytes getBytes(int i) {
            throw new UnsupportedOperationException("a nested accumulator row: read it with readBinary");
        }
    }

    /** TIMESTAMP(p ≤ 3): epoch millis. */
    private static final class TimestampMilliColumn extends ArrowColumn implements TimestampColumnVector {
        TimestampMilliColumn(FieldVector v) {
            super(v, LONG);
        }

        @Override
        public TimestampData getTimestamp(int i, int precision) {
            return TimestampData.fromEpochMillis(data.getLong((long) i * 8));
        }

        /** A compact timestamp is its epoch millis in the fixed part (BinaryWriter.writeTimestamp). */
        @Override
        void write(BinaryRowWriter w, int pos, int i) {
            w.writeLong(pos, data.getLong((long) i * 8));
        }
    }

    /** TIMESTAMP(p > 3): int64 epoch millis LE, then int32 nano-of-millisecond LE. */
    private static final class TimestampColumn extends ArrowColumn implements TimestampColumnVector {
        TimestampColumn(FieldVector v) {
            super(v);
        }

        @Override
        public TimestampData getTimestamp(int i, int precision) {
            long at = (long) i * ArrowTypes.TIMESTAMP_WIDTH;
            return TimestampData.fromEpochMillis(data.getLong(at), data.getInt(at + 8));
        }

        @Override
        void write(BinaryRowWriter w, int pos, int i) {
            w.writeTimestamp(pos, getTimestamp(i, TimestampType.MAX_PRECISION), TimestampType.MAX_PRECISION);
        }
    }
}
