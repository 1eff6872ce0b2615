package io.ferrystream.ferry.kinds.topn;

import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.binary.BinarySegmentUtils;
import org.apache.flink.table.planner.plan.utils.KeySelectorUtil;
import org.apache.flink.table.runtime.keyselector.RowDataKeySelector;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.BooleanType;
import org.apache.flink.table.types.logical.CharType;
import org.apache.flink.table.types.logical.DateType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.SmallIntType;
import org.apache.flink.table.types.logical.TimeType;
import org.apache.flink.table.types.logical.TimestampType;
import org.apache.flink.table.types.logical.TinyIntType;
import org.apache.flink.table.types.logical.VarCharType;

import org.junit.jupiter.api.Test;

import java.math.BigDecimal;
import java.util.Arrays;
import java.util.Random;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The sort keys {@link FlinkTopNState} writes into Flink's {@code data-state-with-append} are
 * byte for byte those Flink's sort key selector ({@code KeySelectorUtil}'s generated projection)
 * makes, NULLs of wide DECIMAL and TIMESTAMP included: Flink's map state finds entries by their
 * bytes, so a key written otherwise would be a second entry for the same sort key.
 */
class FlinkTopNStateTest {
    static final RowType TYPE = RowType.of(
            new IntType(), new BigIntType(), new VarCharType(VarCharType.MAX_LENGTH), new DecimalType(10, 2),
            new DecimalType(22, 4), new TimestampType(3), new TimestampType(9), new LocalZonedTimestampType(3),
            new LocalZonedTimestampType(6), new BooleanType(), new DateType(), new TimeType(), new SmallIntType(),
            new TinyIntType(), new CharType(3), new DecimalType(38, 0), new IntType(false));

    static Object value(Random r, LogicalType t) {
        if (t.isNullable() && r.nextInt(3) == 0) {
            return null;
        }
        return switch (t.getTypeRoot()) {
            case INTEGER, DATE, TIME_WITHOUT_TIME_ZONE -> r.nextInt(5) - 2;
            case BIGINT -> (long) r.nextInt(5) - 2;
            case SMALLINT -> (short) r.nextInt(5);
            case TINYINT -> (byte) r.nextInt(5);
            case BOOLEAN -> r.nextBoolean();
            case VARCHAR, CHAR -> StringData.fromString(new String[] {"", "a", "abc", "a longer string ü"}[r.nextInt(4)]);
            case DECIMAL -> {
                DecimalType d = (DecimalType) t;
                yield DecimalData.fromBigDecimal(new BigDecimal(r.nextInt(2000) - 1000).movePointLeft(d.getScale() > 0 ? 2 : 0),
                        d.getPrecision(), d.getScale());
            }
            case TIMESTAMP_WITHOUT_TIME_ZONE, TIMESTAMP_WITH_LOCAL_TIME_ZONE -> TimestampData.fromEpochMillis(r.nextInt(3000) - 1000,
                    r.nextInt(3) * 1000);
            default -> throw new IllegalArgumentException(t.toString());
        };
    }

    static byte[] bytes(BinaryRowData row) {
        return BinarySegmentUtils.copyToBytes(row.getSegments(), row.getOffset(), row.getSizeInBytes());
    }

    @Test
    void sortKeysAreFlinksProjection() throws Exception {
        Random r = new Random(7);
        RowDataSerializer rows = new RowDataSerializer(TYPE);
        for (int round = 0; round < 200; round++) {
            int[] fields = r.ints(1 + r.nextInt(4), 0, TYPE.getFieldCount()).toArray();
            RowDataKeySelector flink = KeySelectorUtil.getRowDataSelector(Thread.currentThread().getContextClassLoader(), fields,
                    InternalTypeInfo.of(TYPE));
            FlinkTopNState state = new FlinkTopNState(TYPE, new int[] {0}, TopNSpec.Function.APPEND_ONLY_TOP_N, fields, false);
            for (int i = 0; i < 20; i++) {
                GenericRowData row = new GenericRowData(TYPE.getFieldCount());
                for (int f = 0; f < TYPE.getFieldCount(); f++) {
                    row.setField(f, value(r, TYPE.getTypeAt(f)));
                }
                BinaryRowData input = rows.toBinaryRow(row).copy();
                BinaryRowData want = (BinaryRowData) flink.getKey(input);
                assertArrayEquals(bytes(want), bytes(state.sortKeyOf(input)), Arrays.toString(fields) + " of " + row);
                assertArrayEquals(bytes(want), bytes(state.sortKeyOf(row)), Arrays.toString(fields) + " of " + row + " (generic)");
            }
        }
    }

    @Test
    void ttlOnlyForFirstN() {
        assertThrows(IllegalArgumentException.class,
                () -> new FlinkTopNState(TYPE, new int[] {0}, TopNSpec.Function.FAST_TOP1, new int[] {1}, true));
        assertThrows(IllegalArgumentException.class,
                () -> new FlinkTopNState(TYPE, new int[] {0}, TopNSpec.Function.APPEND_ONLY_TOP_N, new int[] {1}, true));
        new FlinkTopNState(TYPE, new int[] {0}, TopNSpec.Function.APPEND_ONLY_FIRST_N, new int[] {1}, true);
    }
}
