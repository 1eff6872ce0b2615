package io.ferrystream.ferry.arrow;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.BaseFixedWidthVector;
import org.apache.arrow.vector.BaseVariableWidthVector;
import org.apache.arrow.vector.BigIntVector;
import org.apache.arrow.vector.BitVector;
import org.apache.arrow.vector.DateDayVector;
import org.apache.arrow.vector.DecimalVector;
import org.apache.arrow.vector.FieldVector;
import org.apache.arrow.vector.Float4Vector;
import org.apache.arrow.vector.Float8Vector;
import org.apache.arrow.vector.IntVector;
import org.apache.arrow.vector.SmallIntVector;
import org.apache.arrow.vector.TinyIntVector;
import org.apache.arrow.vector.VarCharVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.arrow.vector.FixedSizeBinaryVector;
import org.apache.arrow.vector.TimeStampMilliVector;
import org.apache.arrow.vector.types.pojo.ArrowType;
import org.apache.arrow.vector.types.pojo.Field;
import org.apache.arrow.vector.types.pojo.Schema;
import org.apache.flink.core.memory.MemorySegment;
import org.apache.flink.core.memory.MemorySegmentFactory;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.binary.BinarySegmentUtils;
import org.apache.flink.table.data.binary.BinaryStringData;
import org.apache.flink.table.data.utils.ProjectedRowData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.ArrayType;
import org.apache.flink.table.types.logical.CharType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.MapType;
import org.apache.flink.table.types.logical.MultisetType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.TimeType;
import org.apache.flink.table.types.logical.TimestampKind;
import org.apache.flink.table.types.logical.TimestampType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.flink.types.RowKind;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** RowData → Arrow → RowData in Java only: every type, NULLs, boundaries, RowKinds. */
class RowDataArrowRoundTripTest {
    private BufferAllocator allocator;

    @BeforeEach
    void setUp() {
        allocator = new RootAllocator();
    }

    @AfterEach
    void tearDown() {
        allocator.close(); // fails on any leaked buffer
    }

    @Test
    void schemaFollowsTheAbiTable() {
        Schema s = ArrowTypes.schemaOf(AllTypes.ROW_TYPE);
        List<Field> f = s.getFields();
        assertEquals(AllTypes.NAMES.length + 1, f.size());
        String[] want = {
            "Int(32, true)", "Bool", "Int(8, true)", "Int(16, true)", "Int(32, true)", "Int(64, true)",
            "FloatingPoint(SINGLE)", "FloatingPoint(DOUBLE)", "Decimal(10, 2, 128)", "Decimal(18, 4, 128)",
            "Decimal(38, 0, 128)", "Decimal(38, 10, 128)", "Utf8", "Utf8", "Date(DAY)", "Timestamp(MILLISECOND, null)",
            "Timestamp(MILLISECOND, null)", "FixedSizeBinary(12)", "FixedSizeBinary(12)", "Int(64, true)", "Utf8",
            "FixedSizeBinary(12)", "Int(8, true)"
        };
        for (int i = 0; i < want.length; i++) {
            assertEquals(want[i], f.get(i).getType().toString(), "field " + i);
        }
        for (int i = 0; i < AllTypes.NAMES.length; i++) {
            assertEquals(AllTypes.NAMES[i], f.get(i).getName());
            assertEquals(AllTypes.TYPES[i].isNullable(), f.get(i).isNullable(), "nullable " + i);
        }
        Field kind = f.get(f.size() - 1);
        assertEquals(ArrowTypes.ROW_KIND_FIELD, kind.getName());
        assertFalse(kind.isNullable());
        assertEquals("TIMESTAMP(9) NOT NULL", ArrowTypes.specTypeOf(new TimestampType(false, 9)));
        // an empty string literal's type has no serializable form
        assertEquals("STRING NOT NULL", ArrowTypes.specTypeOf(CharType.ofEmptyLiteral()));
        assertEquals("STRING", ArrowTypes.specTypeOf(VarCharType.ofEmptyLiteral().copy(true)));
    }

    /** TIMESTAMP_LTZ(p) crosses as TIMESTAMP(p); an unmaterialized proc-time attribute as nullable. */
    @Test
    void timestampLtzIsCarriedAsTimestamp() {
        assertEquals("TIMESTAMP(6) NOT NULL", ArrowTypes.specTypeOf(new LocalZonedTimestampType(false, 6)));
        assertEquals("INT", ArrowTypes.specTypeOf(new TimeType(3))); // TIME: an int of milliseconds of the day
        assertEquals(ArrowTypes.fieldOf("x", new TimestampType(3)), ArrowTypes.fieldOf("x", new LocalZonedTimestampType(3)));
        LogicalType proctime = new LocalZonedTimestampType(false, TimestampKind.PROCTIME, 3);
        assertTrue(ArrowTypes.fieldOf("x", proctime).isNullable());
        RowType ltz = RowType.of(new LocalZonedTimestampType(3), new LocalZonedTimestampType(9));
        List<RowData> rows = List.of(
                GenericRowData.of(TimestampData.fromEpochMillis(1700000000123L), TimestampData.fromEpochMillis(-1L, 999_999)),
                GenericRowData.of(null, TimestampData.fromEpochMillis(253402300799999L, 1)));
        try (RowDataArrowWriter w = RowDataArrowWriter.create(ltz, allocator, 4)) {
            ArrowRowDataReader reader = new ArrowRowDataReader(w.root());
            rows.forEach(w::write);
            w.finish();
            reader.load();
            for (int i = 0; i < rows.size(); i++) {
                AllTypes.assertRowEquals(ltz, rows.get(i), reader.read(i), "row " + i);
            }
        }
    }

    @Test
    void unsupportedTypesAreNamed() {
        for (LogicalType t : List.of(new MultisetType(new IntType()), new MapType(new IntType(), new IntType()), new ArrayType(new IntType()))) {
            UnsupportedOperationException e =
                    assertThrows(UnsupportedOperationException.class, () -> ArrowTypes.fieldOf("x", t));
            assertTrue(e.getMessage().contains(t.getTypeRoot().toString()), e.getMessage());
        }
    }

    @Test
    void everyTypeRoundTripsFromGenericRows() {
        roundTrip(AllTypes.rows(true), 8); // capacity 8: forces growth of every buffer
    }

    @Test
    void everyTypeRoundTripsFromBinaryRows() {
        RowDataSerializer ser = new RowDataSerializer(AllTypes.ROW_TYPE);
        List<? extends RowData> rows = AllTypes.rows(true).stream().map(r -> ser.toBinaryRow(r).copy()).toList();
        assertInstanceOf(BinaryRowData.class, rows.get(0));
        roundTrip(rows, 1024);
    }

    private void roundTrip(List<? extends RowData> rows, int capacity) {
        RowDataSerializer ser = new RowDataSerializer(AllTypes.ROW_TYPE);
        try (RowDataArrowWriter w = RowDataArrowWriter.create(AllTypes.ROW_TYPE, allocator, capacity)) {
            ArrowRowDataReader reader = new ArrowRowDataReader(w.root());
            for (int round = 0; round < 3; round++) { // reuse: reset and refill the same root
                for (RowData r : rows) {
                    w.write(r);
                }
                w.finish();
                assertEquals(rows.size(), w.count());
                assertEquals(rows.size(), w.root().getRowCount());
                reader.load();
                assertEquals(rows.size(), reader.rowCount());
                assertEquals(AllTypes.NAMES.length, reader.arity());
                for (int i = 0; i < rows.size(); i++) {
                    RowData got = reader.read(i);
                    assertEquals(rows.get(i).getRowKind(), got.getRowKind(), "row " + i);
                    AllTypes.assertRowEquals(AllTypes.ROW_TYPE, rows.get(i), got, "round " + round + ", row " + i);
                    if (!got.isNullAt(12)) {
                        assertInstanceOf(BinaryStringData.class, got.getString(12));
                    }
                    // readBinary writes the bytes Flink's serializer makes of the same row
                    BinaryRowData want = ser.toBinaryRow(got).copy();
                    BinaryRowData binary = reader.readBinary(i);
                    assertEquals(want.getSizeInBytes(), binary.getSizeInBytes(), "row " + i);
                    assertArrayEquals(bytes(want), bytes(binary), "round " + round + ", row " + i);
                }
                w.reset();
                assertEquals(0, w.count());
            }
        }
    }

    /**
     * A batch of fixed-width columns only is transposed into one buffer: readBinary still returns,
     * in any order and more than once, the bytes Flink's serializer makes of each row.
     */
    @Test
    void fixedWidthBatchesReadBinaryAsFlinkWritesThem() {
        int[] fixed = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 14, 15, 16, 19};
        LogicalType[] types = new LogicalType[fixed.length];
        String[] names = new String[fixed.length];
        for (int k = 0; k < fixed.length; k++) {
            types[k] = AllTypes.TYPES[fixed[k]];
            names[k] = AllTypes.NAMES[fixed[k]];
        }
        RowType t = RowType.of(types, names);
        List<GenericRowData> rows = new java.util.ArrayList<>();
        for (GenericRowData r : AllTypes.rows(true)) {
            GenericRowData p = new GenericRowData(r.getRowKind(), fixed.length);
            for (int k = 0; k < fixed.length; k++) {
                p.setField(k, r.getField(fixed[k]));
            }
            rows.add(p);
        }
        RowDataSerializer ser = new RowDataSerializer(t);
        try (RowDataArrowWriter w = RowDataArrowWriter.create(t, allocator, 4)) {
            ArrowRowDataReader reader = new ArrowRowDataReader(w.root());
            for (int round = 0; round < 2; round++) {
                List<GenericRowData> batch = round == 0 ? rows : rows.subList(0, 5); // a smaller batch reuses the buffer
                batch.forEach(w::write);
                w.finish();
                reader.load();
                for (int k = 0; k < 2 * batch.size(); k++) {
                    int i = k < batch.size() ? batch.size() - 1 - k : k - batch.size(); // backwards, then forwards
                    BinaryRowData want = ser.toBinaryRow(reader.read(i)).copy();
                    BinaryRowData got = reader.readBinary(i);
                    assertEquals(batch.get(i).getRowKind(), got.getRowKind(), "row " + i);
                    assertArrayEquals(bytes(want), bytes(got), "round " + round + ", row " + i);
                    AllTypes.assertRowEquals(t, batch.get(i), got, "round " + round + ", row " + i);
                }
                w.reset();
            }
        }
    }

    /**
     * The writer's buffers hold, for every row written, the bytes Arrow Java's own {@code setSafe}
     * methods write for the same values (validity bits, offsets, data), across growth and reuse.
     */
    @Test
    void writerBytesEqualArrowJavasSetSafe() {
        List<GenericRowData> rows = AllTypes.rows(true);
        try (RowDataArrowWriter w = RowDataArrowWriter.create(AllTypes.ROW_TYPE, allocator, 3);
                VectorSchemaRoot want = VectorSchemaRoot.create(ArrowTypes.schemaOf(AllTypes.ROW_TYPE), allocator)) {
            want.allocateNew();
            for (int round = 0; round < 2; round++) {
                for (int r = 0; r < rows.size(); r++) {
                    w.write(rows.get(r));
                    setSafe(want, r, rows.get(r));
                }
                w.finish();
                want.setRowCount(rows.size());
                int n = rows.size();
                for (int c = 0; c < want.getFieldVectors().size(); c++) {
                    FieldVector a = want.getVector(c);
                    FieldVector b = w.root().getVector(c);
                    String where = "round " + round + ", " + a.getField();
                    assertEquals(a.getValueCount(), b.getValueCount(), where);
                    assertEquals(a.getNullCount(), b.getNullCount(), where);
                    for (int i = 0; i < n; i++) {
                        assertEquals(a.isNull(i), b.isNull(i), where + " row " + i);
                        assertArrayEquals(slot(a, i), slot(b, i), where + " row " + i);
                    }
                }
                w.reset();
                want.getFieldVectors().forEach(FieldVector::reset);
            }
        }
    }

    /**
     * writeProjected over BinaryRowData writes what write does over the projected view (every
     * type, NULLs, fields reordered), and declines rows of more than 56 fields.
     */
    @Test
    void writeProjectedEqualsWriteOfTheView() {
        int n = AllTypes.TYPES.length;
        int[] fields = new int[n];
        LogicalType[] types = new LogicalType[n];
        for (int k = 0; k < n; k++) {
            fields[k] = (k * 7 + 3) % n; // a permutation (7 and 22 are coprime)
            types[k] = AllTypes.TYPES[fields[k]];
        }
        RowType t = RowType.of(types);
        RowDataSerializer ser = new RowDataSerializer(AllTypes.ROW_TYPE);
        List<BinaryRowData> rows = AllTypes.rows(true).stream().map(r -> ser.toBinaryRow(r).copy()).toList();
        ProjectedRowData view = ProjectedRowData.from(fields);
        try (RowDataArrowWriter a = RowDataArrowWriter.create(t, allocator, 2);
                RowDataArrowWriter b = RowDataArrowWriter.create(t, allocator, 2)) {
            for (BinaryRowData r : rows) {
                a.write(view.replaceRow(r));
                assertTrue(b.writeProjected(r, fields));
            }
            a.finish();
            b.finish();
            for (int c = 0; c <= n; c++) {
                FieldVector va = a.root().getVector(c);
                FieldVector vb = b.root().getVector(c);
                assertEquals(va.getValueCount(), vb.getValueCount());
                for (int i = 0; i < rows.size(); i++) {
                    assertEquals(va.isNull(i), vb.isNull(i), va.getField() + " row " + i);
                    assertArrayEquals(slot(va, i), slot(vb, i), va.getField() + " row " + i);
                }
            }
        }
        RowType wide = RowType.of(java.util.Collections.nCopies(57, (LogicalType) new IntType()).toArray(new LogicalType[0]));
        try (RowDataArrowWriter w = RowDataArrowWriter.create(RowType.of(new IntType()), allocator, 2)) {
            BinaryRowData r = new RowDataSerializer(wide).toBinaryRow(new GenericRowData(57));
            assertFalse(w.writeProjected(r, new int[] {56}));
            assertEquals(0, w.count());
            BinaryRowData bad = new RowDataSerializer(RowType.of(new IntType())).toBinaryRow(GenericRowData.of(1)).copy();
            bad.getSegments()[0].put(bad.getOffset(), (byte) 9); // not a RowKind byte
            assertThrows(UnsupportedOperationException.class, () -> w.writeProjected(bad, new int[] {0}));
            assertEquals(0, w.count());
        }
    }

    /** Row {@code i}'s data bytes: its fixed-width slot (bits for BOOLEAN), or its offsets and bytes. */
    private static byte[] slot(FieldVector v, int i) {
        if (v instanceof BaseVariableWidthVector) {
            BaseVariableWidthVector var = (BaseVariableWidthVector) v;
            int start = var.getOffsetBuffer().getInt(4L * i);
            int end = var.getOffsetBuffer().getInt(4L * i + 4);
            byte[] b = new byte[8 + end - start];
            java.nio.ByteBuffer.wrap(b).putInt(start).putInt(end);
            var.getDataBuffer().getBytes(start, b, 8, end - start);
            return b;
        }
        if (v instanceof BitVector) {
            return new byte[] {(byte) ((v.getDataBuffer().getByte(i >>> 3) >> (i & 7)) & 1)};
        }
        int width = ((BaseFixedWidthVector) v).getTypeWidth();
        byte[] b = new byte[width];
        v.getDataBuffer().getBytes((long) i * width, b, 0, width);
        return b;
    }

    /** Row {@code r} written with Arrow Java's setSafe per vector type: the reference encoding. */
    private static void setSafe(VectorSchemaRoot root, int r, RowData row) {
        for (int c = 0; c < AllTypes.TYPES.length; c++) {
            LogicalType t = AllTypes.TYPES[c];
            FieldVector v = root.getVector(c);
            if (row.isNullAt(c)) {
                if (v instanceof BaseFixedWidthVector) {
                    ((BaseFixedWidthVector) v).setNull(r);
                } else {
                    ((BaseVariableWidthVector) v).setNull(r);
                }
                continue;
            }
            switch (t.getTypeRoot()) {
                case BOOLEAN -> ((BitVector) v).setSafe(r, row.getBoolean(c) ? 1 : 0);
                case TINYINT -> ((TinyIntVector) v).setSafe(r, row.getByte(c));
                case SMALLINT -> ((SmallIntVector) v).setSafe(r, row.getShort(c));
                case INTEGER -> ((IntVector) v).setSafe(r, row.getInt(c));
                case DATE -> ((DateDayVector) v).setSafe(r, row.getInt(c));
                case BIGINT -> ((BigIntVector) v).setSafe(r, row.getLong(c));
                case FLOAT -> ((Float4Vector) v).setSafe(r, row.getFloat(c));
                case DOUBLE -> ((Float8Vector) v).setSafe(r, row.getDouble(c));
                case DECIMAL -> {
                    DecimalType d = (DecimalType) t;
                    ((DecimalVector) v).setBigEndianSafe(r,
                            row.getDecimal(c, d.getPrecision(), d.getScale()).toBigDecimal().unscaledValue().toByteArray());
                }
                case CHAR, VARCHAR -> {
                    byte[] b = row.getString(c).toBytes();
                    ((VarCharVector) v).setSafe(r, b, 0, b.length);
                }
                case TIMESTAMP_WITHOUT_TIME_ZONE -> {
                    int p = ((TimestampType) t).getPrecision();
                    TimestampData ts = row.getTimestamp(c, p);
                    if (p <= 3) {
                        ((TimeStampMilliVector) v).setSafe(r, ts.getMillisecond());
                    } else {
                        byte[] b = new byte[ArrowTypes.TIMESTAMP_WIDTH];
                        java.nio.ByteBuffer.wrap(b).order(java.nio.ByteOrder.LITTLE_ENDIAN)
                                .putLong(ts.getMillisecond()).putInt(ts.getNanoOfMillisecond());
                        ((FixedSizeBinaryVector) v).setSafe(r, b);
                    }
                }
                default -> throw new AssertionError("untested type " + t);
            }
        }
        ((TinyIntVector) root.getVector(AllTypes.TYPES.length)).setSafe(r, row.getRowKind().toByteValue());
    }

    private static byte[] bytes(BinaryRowData r) {
        return BinarySegmentUtils.copyToBytes(r.getSegments(), r.getOffset(), r.getSizeInBytes());
    }

    @Test
    void timestampLayoutIsMillisThenNanoOfMilli() {
        RowType t = RowType.of(new LogicalType[] {new TimestampType(9), new TimestampType(3)}, new String[] {"a", "b"});
        try (RowDataArrowWriter w = RowDataArrowWriter.create(t, allocator, 4)) {
            GenericRowData r = GenericRowData.of(
                    org.apache.flink.table.data.TimestampData.fromEpochMillis(-2, 999_999),
                    org.apache.flink.table.data.TimestampData.fromEpochMillis(-1));
            w.write(r);
            w.finish();
            FixedSizeBinaryVector v = (FixedSizeBinaryVector) w.root().getVector(0);
            assertEquals(new ArrowType.FixedSizeBinary(12), v.getField().getType());
            assertEquals(-2L, v.getDataBuffer().getLong(0));
            assertEquals(999_999, v.getDataBuffer().getInt(8));
            byte[] raw = v.get(0);
            assertEquals((byte) 0xFE, raw[0]); // little-endian int64 -2
            assertEquals((byte) 0xFF, raw[7]);
            assertEquals((byte) 0x3F, raw[8]); // 999999 = 0x000F423F
            assertEquals(-1L, ((TimeStampMilliVector) w.root().getVector(1)).get(0));
        }
    }

    @Test
    void stringsFromOffHeapAndMultiSegmentData() {
        RowType t = RowType.of(new LogicalType[] {new VarCharType(100)}, new String[] {"s"});
        byte[] text = "grüße, 世界 🌍!".getBytes(StandardCharsets.UTF_8);
        MemorySegment a = MemorySegmentFactory.allocateOffHeapUnsafeMemory(8);
        MemorySegment b = MemorySegmentFactory.allocateOffHeapUnsafeMemory(64);
        try {
            // the string starts at offset 3 of segment a and continues in segment b
            a.put(3, text, 0, 5);
            b.put(0, text, 5, text.length - 5);
            BinaryStringData split = BinaryStringData.fromAddress(new MemorySegment[] {a, b}, 3, text.length);
            MemorySegment c = MemorySegmentFactory.allocateOffHeapUnsafeMemory(64);
            c.put(10, text, 0, text.length);
            BinaryStringData offHeap = BinaryStringData.fromAddress(new MemorySegment[] {c}, 10, text.length);
            try (RowDataArrowWriter w = RowDataArrowWriter.create(t, allocator, 2)) {
                w.write(GenericRowData.ofKind(RowKind.UPDATE_AFTER, split));
                w.write(GenericRowData.ofKind(RowKind.DELETE, offHeap));
                w.finish();
                ArrowRowDataReader reader = new ArrowRowDataReader(w.root());
                for (int i = 0; i < 2; i++) {
                    assertEquals("grüße, 世界 🌍!", reader.read(i).getString(0).toString());
                }
                assertEquals(RowKind.UPDATE_AFTER, reader.rowKind(0));
                assertEquals(RowKind.DELETE, reader.read(1).getRowKind());
            } finally {
                c.free();
            }
        } finally {
            a.free();
            b.free();
        }
    }

    @Test
    void resetKeepsCapacityAndReaderRejectsRowsPastTheEnd() {
        RowType t = RowType.of(new LogicalType[] {new IntType()}, new String[] {"x"});
        try (RowDataArrowWriter w = RowDataArrowWriter.create(t, allocator, 16)) {
            for (int i = 0; i < 100; i++) {
                w.write(GenericRowData.of(i));
            }
            w.finish();
            long allocated = allocator.getAllocatedMemory();
            w.reset();
            for (int i = 0; i < 100; i++) {
                w.write(GenericRowData.of(i % 3 == 0 ? null : i));
            }
            w.finish();
            assertEquals(allocated, allocator.getAllocatedMemory(), "no growth after reset");
            ArrowRowDataReader reader = new ArrowRowDataReader(w.root());
            assertTrue(reader.read(99).isNullAt(0));
            assertEquals(98, reader.read(98).getInt(0));
            assertThrows(IndexOutOfBoundsException.class, () -> reader.read(100));
            for (FieldVector v : w.root().getFieldVectors()) {
                assertEquals(100, v.getValueCount());
            }
        }
    }
}
