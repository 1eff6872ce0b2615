package io.ferrystream.ferry.nexmark.table;

import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.utils.JoinedRowData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.RowKind;
import org.junit.jupiter.api.Test;

import java.math.BigDecimal;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** The checksum sink's row hash: the values, not the row's class or layout. */
class RowFingerprintTest {
    private static final RowType TYPE = (RowType) DataTypes.ROW(
            DataTypes.FIELD("a", DataTypes.BIGINT()), DataTypes.FIELD("s", DataTypes.STRING()),
            DataTypes.FIELD("d", DataTypes.DECIMAL(23, 3)), DataTypes.FIELD("t", DataTypes.TIMESTAMP(3)),
            DataTypes.FIELD("x", DataTypes.DOUBLE())).getLogicalType();

    private static GenericRowData row(long a, String s, String d, long millis, Double x) {
        return GenericRowData.of(a, s == null ? null : StringData.fromString(s),
                DecimalData.fromBigDecimal(new BigDecimal(d), 23, 3), TimestampData.fromEpochMillis(millis), x);
    }

    @Test
    void equalValuesHashEquallyInEveryRowClass() {
        RowFingerprint f = new RowFingerprint(TYPE);
        GenericRowData generic = row(7, "a string longer than eight bytes", "12.345", 1_767_225_600_123L, 1.5);
        long h = f.hash(generic);
        assertEquals(h, f.hash(new RowDataSerializer(TYPE).toBinaryRow(generic).copy()));
        GenericRowData left = GenericRowData.of(7L, StringData.fromString("a string longer than eight bytes"));
        GenericRowData right = GenericRowData.of(DecimalData.fromBigDecimal(new BigDecimal("12.345"), 23, 3),
                TimestampData.fromEpochMillis(1_767_225_600_123L), 1.5);
        assertEquals(h, f.hash(new JoinedRowData(left, right)));
        generic.setRowKind(RowKind.UPDATE_BEFORE);
        assertEquals(h, f.hash(generic), "the row kind is the sink's sign, not part of the hash");
    }

    @Test
    void anyDifferentValueChangesTheHash() {
        RowFingerprint f = new RowFingerprint(TYPE);
        long h = f.hash(row(7, "abc", "1.000", 5, 2.0));
        assertNotEquals(h, f.hash(row(8, "abc", "1.000", 5, 2.0)));
        assertNotEquals(h, f.hash(row(7, "abd", "1.000", 5, 2.0)));
        assertNotEquals(h, f.hash(row(7, null, "1.000", 5, 2.0)));
        assertNotEquals(h, f.hash(row(7, "abc", "1.001", 5, 2.0)));
        assertNotEquals(h, f.hash(row(7, "abc", "1.000", 6, 2.0)));
        assertNotEquals(h, f.hash(row(7, "abc", "1.000", 5, null)));
        assertNotEquals(f.hash(row(1, "ab", "0", 0, 0.0)), f.hash(row(1, "ba", "0", 0, 0.0)));
    }

    @Test
    void refusesTypesItCannotRead() {
        RowType nested = (RowType) DataTypes.ROW(DataTypes.FIELD("r", DataTypes.ROW(DataTypes.FIELD("i", DataTypes.INT()))))
                .getLogicalType();
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new RowFingerprint(nested));
        assertEquals("nexmark-checksum: column r has type ROW<`i` INT>, which the checksum does not read", e.getMessage());
    }

    @Test
    void countCharCountsBytes() {
        CountChar c = new CountChar();
        assertEquals(3, c.eval(StringData.fromString("cacbc"), StringData.fromString("c")));
        assertEquals(0, c.eval(null, StringData.fromString("c")));
        assertEquals(0, c.eval(StringData.fromString("abc"), StringData.fromString("")));
    }
}
