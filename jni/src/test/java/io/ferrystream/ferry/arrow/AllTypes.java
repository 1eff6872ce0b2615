package io.ferrystream.ferry.arrow;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.BooleanType;
import org.apache.flink.table.types.logical.CharType;
import org.apache.flink.table.types.logical.DateType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.DoubleType;
import org.apache.flink.table.types.logical.FloatType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.SmallIntType;
import org.apache.flink.table.types.logical.TimestampType;
import org.apache.flink.table.types.logical.TinyIntType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.flink.table.types.logical.utils.LogicalTypeChecks;
import org.apache.flink.types.RowKind;

/** A row type with every type of docs/abi.md, and rows full of boundary values and NULLs. */
final class AllTypes {
    private AllTypes() {}

    static final String[] NAMES = {
        "id", "b", "ti", "si", "i", "bi", "f", "d", "dec10_2", "dec18_4", "dec38_0", "dec38_10",
        "s", "c", "dt", "ts0", "ts3", "ts6", "ts9", "bi_nn", "s_nn", "ts9_nn"
    };

    static final LogicalType[] TYPES = {
        new IntType(false),
        new BooleanType(),
        new TinyIntType(),
        new SmallIntType(),
        new IntType(),
        new BigIntType(),
        new FloatType(),
        new DoubleType(),
        new DecimalType(10, 2),
        new DecimalType(18, 4),
        new DecimalType(38, 0),
        new DecimalType(38, 10),
        new VarCharType(VarCharType.MAX_LENGTH),
        new CharType(3),
        new DateType(),
        new TimestampType(0),
        new TimestampType(3),
        new TimestampType(6),
        new TimestampType(9),
        new BigIntType(false),
        new VarCharType(false, 20),
        new TimestampType(false, 9),
    };

    static final RowType ROW_TYPE = RowType.of(TYPES, NAMES);

    static final BigInteger MAX38 = BigInteger.TEN.pow(38).subtract(BigInteger.ONE);

    private static DecimalData dec(BigInteger unscaled, int p, int s) {
        return DecimalData.fromBigDecimal(new BigDecimal(unscaled, s), p, s);
    }

    private static TimestampData ts(int y, int mo, int d, int h, int mi, int s, int nanos) {
        return TimestampData.fromLocalDateTime(LocalDateTime.of(y, mo, d, h, mi, s, nanos));
    }

    private static int day(int y, int m, int d) {
        return (int) LocalDate.of(y, m, d).toEpochDay();
    }

    /** The distinct values of each column (index = column); null is a value of nullable columns. */
    static List<List<Object>> values() {
        List<List<Object>> v = new ArrayList<>();
        v.add(List.of()); // id: row number
        v.add(Arrays.asList(true, false, null));
        v.add(Arrays.asList(Byte.MIN_VALUE, Byte.MAX_VALUE, (byte) 0, (byte) -1, null));
        v.add(Arrays.asList(Short.MIN_VALUE, Short.MAX_VALUE, (short) 0, (short) -1, null));
        v.add(Arrays.asList(Integer.MIN_VALUE, Integer.MAX_VALUE, 0, -1, null));
        v.add(Arrays.asList(Long.MIN_VALUE, Long.MAX_VALUE, 0L, -1L, null));
        v.add(Arrays.asList(Float.NaN, Float.intBitsToFloat(0x7fc12345), Float.intBitsToFloat(0xffc00001),
                Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, -0.0f, 0.0f, Float.MIN_VALUE, Float.MAX_VALUE,
                -Float.MAX_VALUE, null));
        v.add(Arrays.asList(Double.NaN, Double.longBitsToDouble(0x7ff8000000000123L),
                Double.longBitsToDouble(0xfff8000000000001L), Double.POSITIVE_INFINITY,
                Double.NEGATIVE_INFINITY, -0.0, 0.0, Double.MIN_VALUE, Double.MAX_VALUE, -Double.MAX_VALUE, null));
        v.add(Arrays.asList(dec(BigInteger.valueOf(9_999_999_999L), 10, 2), dec(BigInteger.valueOf(-9_999_999_999L), 10, 2),
                dec(BigInteger.ZERO, 10, 2), dec(BigInteger.valueOf(-1), 10, 2), null));
        v.add(Arrays.asList(dec(BigInteger.valueOf(999_999_999_999_999_999L), 18, 4),
                dec(BigInteger.valueOf(-999_999_999_999_999_999L), 18, 4), dec(BigInteger.ONE, 18, 4), null));
        v.add(Arrays.asList(dec(MAX38, 38, 0), dec(MAX38.negate(), 38, 0), dec(BigInteger.ZERO, 38, 0),
                dec(BigInteger.valueOf(Long.MIN_VALUE), 38, 0), dec(BigInteger.valueOf(Long.MAX_VALUE).add(BigInteger.ONE), 38, 0),
                dec(BigInteger.valueOf(-1), 38, 0), null));
        v.add(Arrays.asList(dec(MAX38, 38, 10), dec(MAX38.negate(), 38, 10), dec(BigInteger.valueOf(12345), 38, 10),
                dec(BigInteger.ONE.shiftLeft(64), 38, 10), dec(BigInteger.ONE.shiftLeft(64).negate(), 38, 10), null));
        v.add(Arrays.asList(str(""), str("a"), str("héllo wörld"), str("日本語テキスト"), str("😀𝄞 supplementary 🚀"),
                str("nul\u0000inside"), str("x".repeat(1000) + "é"), null));
        v.add(Arrays.asList(str("abc"), str("é  "), str("   "), null));
        v.add(Arrays.asList(day(1970, 1, 1), -1, day(1, 1, 1), day(9999, 12, 31), day(1969, 7, 20), null));
        v.add(Arrays.asList(ts(1970, 1, 1, 0, 0, 0, 0), ts(1969, 12, 31, 23, 59, 59, 0), ts(1, 1, 1, 0, 0, 0, 0),
                ts(9999, 12, 31, 23, 59, 59, 0), null));
        v.add(Arrays.asList(ts(1970, 1, 1, 0, 0, 0, 0), ts(1969, 12, 31, 23, 59, 59, 999_000_000),
                ts(1, 1, 1, 0, 0, 0, 1_000_000), ts(9999, 12, 31, 23, 59, 59, 999_000_000), null));
        v.add(Arrays.asList(ts(1970, 1, 1, 0, 0, 0, 1000), ts(1969, 12, 31, 23, 59, 59, 999_999_000),
                ts(1, 1, 1, 0, 0, 0, 0), ts(9999, 12, 31, 23, 59, 59, 999_999_000), ts(1900, 1, 1, 0, 0, 0, 123_456_000),
                null));
        v.add(Arrays.asList(ts(9999, 12, 31, 23, 59, 59, 999_999_999), ts(1969, 12, 31, 23, 59, 59, 999_999_999),
                ts(0, 1, 1, 0, 0, 0, 1), ts(1970, 1, 1, 0, 0, 0, 1), ts(1677, 9, 21, 0, 12, 43, 145_224_191),
                ts(2262, 4, 11, 23, 47, 16, 854_775_808), null));
        v.add(Arrays.asList(Long.MIN_VALUE, Long.MAX_VALUE, 42L));
        v.add(Arrays.asList(str(""), str("ß"), str("🙂🙃")));
        v.add(Arrays.asList(ts(9999, 12, 31, 23, 59, 59, 999_999_999), ts(1, 1, 1, 0, 0, 0, 0)));
        return v;
    }

    static StringData str(String s) {
        return StringData.fromString(s);
    }

    /** Enough rows that every value of every column appears; row r takes value r mod size. */
    static List<GenericRowData> rows(boolean allKinds) {
        List<List<Object>> values = values();
        int n = 0;
        for (List<Object> l : values) {
            n = Math.max(n, l.size());
        }
        n = n * 3 + 1; // also mixes the combinations a bit
        List<GenericRowData> rows = new ArrayList<>();
        for (int r = 0; r < n; r++) {
            GenericRowData row = new GenericRowData(TYPES.length);
            row.setField(0, r);
            for (int c = 1; c < TYPES.length; c++) {
                List<Object> l = values.get(c);
                row.setField(c, l.get((r + c) % l.size()));
            }
            row.setRowKind(allKinds ? RowKind.values()[r % 4] : RowKind.INSERT);
            rows.add(row);
        }
        return rows;
    }

    /** Field-by-field comparison with the typed getters; floats by raw bits. */
    static void assertRowEquals(RowType type, RowData want, RowData got, String ctx) {
        assertTrue(got.getArity() >= type.getFieldCount(), ctx + ": arity"); // output rows may carry more
        for (int i = 0; i < type.getFieldCount(); i++) {
            String where = ctx + ", field " + i + " (" + type.getFieldNames().get(i) + " " + type.getTypeAt(i) + ")";
            LogicalType t = type.getTypeAt(i);
            if (want.isNullAt(i)) {
                assertTrue(got.isNullAt(i), where + ": want NULL");
                continue;
            }
            assertFalse(got.isNullAt(i), where + ": unexpected NULL");
            switch (t.getTypeRoot()) {
                case BOOLEAN:
                    assertEquals(want.getBoolean(i), got.getBoolean(i), where);
                    break;
                case TINYINT:
                    assertEquals(want.getByte(i), got.getByte(i), where);
                    break;
                case SMALLINT:
                    assertEquals(want.getShort(i), got.getShort(i), where);
                    break;
                case INTEGER:
                case DATE:
                    assertEquals(want.getInt(i), got.getInt(i), where);
                    break;
                case BIGINT:
                    assertEquals(want.getLong(i), got.getLong(i), where);
                    break;
                case FLOAT:
                    assertEquals(Float.floatToRawIntBits(want.getFloat(i)), Float.floatToRawIntBits(got.getFloat(i)),
                            where + ": " + want.getFloat(i) + " vs " + got.getFloat(i));
                    break;
                case DOUBLE:
                    assertEquals(Double.doubleToRawLongBits(want.getDouble(i)),
                            Double.doubleToRawLongBits(got.getDouble(i)),
                            where + ": " + want.getDouble(i) + " vs " + got.getDouble(i));
                    break;
                case DECIMAL: {
                    DecimalType d = (DecimalType) t;
                    DecimalData w = want.getDecimal(i, d.getPrecision(), d.getScale());
                    DecimalData g = got.getDecimal(i, d.getPrecision(), d.getScale());
                    assertEquals(w.toBigDecimal(), g.toBigDecimal(), where);
                    assertEquals(d.getPrecision(), g.precision(), where + ": precision");
                    assertEquals(d.getScale(), g.scale(), where + ": scale");
                    break;
                }
                case CHAR:
                case VARCHAR:
                    assertEquals(want.getString(i), got.getString(i), where);
                    assertEquals(want.getString(i).toString(), got.getString(i).toString(), where);
                    break;
                case TIMESTAMP_WITHOUT_TIME_ZONE:
                case TIMESTAMP_WITH_LOCAL_TIME_ZONE: {
                    int p = LogicalTypeChecks.getPrecision(t);
                    TimestampData w = want.getTimestamp(i, p);
                    TimestampData g = got.getTimestamp(i, p);
                    assertEquals(w.getMillisecond(), g.getMillisecond(), where + ": millis");
                    assertEquals(w.getNanoOfMillisecond(), g.getNanoOfMillisecond(), where + ": nanos");
                    break;
                }
                default:
                    throw new AssertionError("untested type " + t);
            }
        }
    }
}
