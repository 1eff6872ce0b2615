package io.ferrystream.ferry.kinds.lookupjoin;

import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.flink.util.InstantiationUtil;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/** Key rows as Flink's generated fetcher builds them: dim order, fields and constants, NULL skips. */
class LookupKeysTest {
    @Test
    void fieldsAndConstantsSurviveSerialization() throws Exception {
        // dims 0 (constant 'Julian'), 2 (probe field 1), 5 (constant 7L)
        LookupKeys keys = InstantiationUtil.clone(new LookupKeys(new int[] {0, 2, 5}, new int[] {-1, 1, -1},
                new LogicalType[] {new VarCharType(6), new IntType(), new BigIntType()},
                new Object[] {StringData.fromString("Julian"), null, 7L}));
        RowData key = keys.keyRow(GenericRowData.of(StringData.fromString("x"), 42));
        assertEquals(GenericRowData.of(StringData.fromString("Julian"), 42, 7L), key);
        assertArrayEquals(new int[] {0, 2, 5}, keys.dims());
        assertEquals("ROW<`k0` VARCHAR(6), `k1` INT, `k2` BIGINT>", keys.keyType().asSummaryString());
        // a NULL probe key: not looked up
        assertNull(keys.keyRow(GenericRowData.of(StringData.fromString("x"), null)));
    }

    @Test
    void aNullConstantIsNeverLookedUp() {
        LookupKeys keys = new LookupKeys(new int[] {0, 1}, new int[] {0, -1},
                new LogicalType[] {new IntType(), new IntType()}, new Object[] {null, null});
        assertNull(keys.keyRow(GenericRowData.of(1)));
    }
}
