package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.arrow.RowDataArrowWriter;
import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateSpec;
import io.ferrystream.ferry.nativelib.FerryException;
import io.ferrystream.ferry.nativelib.NativeOperator;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.planner.plan.utils.KeySelectorUtil;
import org.apache.flink.table.runtime.keyselector.RowDataKeySelector;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.BooleanType;
import org.apache.flink.table.types.logical.DateType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.DoubleType;
import org.apache.flink.table.types.logical.FloatType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.SmallIntType;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.TimeType;
import org.apache.flink.table.types.logical.TimestampType;
import org.apache.flink.table.types.logical.utils.LogicalTypeChecks;
import org.apache.flink.table.types.logical.TinyIntType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.flink.types.RowKind;

import org.junit.jupiter.api.Test;

import java.math.BigDecimal;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Go must put every key in the key group Flink puts it in: Flink's key selector
 * ({@code KeySelectorUtil.getRowDataSelector}) and {@code KeyGroupRangeAssignment} decide the key
 * group of random keys of every key type; for each key group, a native operator owning exactly
 * that key group must accept all of its keys, and reject a key of another key group.
 */
class KeyGroupParityTest {
    static final int MAX_PARALLELISM = 128;

    static final List<LogicalType> KEY_TYPES =
            List.of(
                    new BigIntType(), new IntType(), new SmallIntType(), new TinyIntType(),
                    new BooleanType(), new FloatType(), new DoubleType(),
                    new VarCharType(VarCharType.MAX_LENGTH), new DateType(),
                    new TimestampType(3), new TimestampType(9),
                    new LocalZonedTimestampType(3), new LocalZonedTimestampType(9), new TimeType(),
                    new DecimalType(10, 2), new DecimalType(38, 10));

    static Object value(Random r, LogicalType t) {
        if (r.nextInt(6) == 0) {
            return null;
        }
        switch (t.getTypeRoot()) {
            case BIGINT:
                return r.nextBoolean() ? r.nextLong() : (long) r.nextInt(50);
            case INTEGER:
            case DATE:
                return r.nextBoolean() ? r.nextInt() : r.nextInt(50) - 25;
            case TIME_WITHOUT_TIME_ZONE:
                return r.nextInt(86_400_000);
            case SMALLINT:
                return (short) r.nextInt();
            case TINYINT:
                return (byte) r.nextInt();
            case BOOLEAN:
                return r.nextBoolean();
            case FLOAT:
                return new float[] {Float.NaN, -0.0f, 0.0f, Float.intBitsToFloat(r.nextInt()), r.nextFloat()}[r.nextInt(5)];
            case DOUBLE:
                return new double[] {Double.NaN, -0.0d, Double.NEGATIVE_INFINITY, r.nextDouble() * 1e6}[r.nextInt(4)];
            case VARCHAR:
                String[] words = {"", "a", "1234567", "12345678", "日本語", "😀😀", "a much longer string key"};
                return StringData.fromString(words[r.nextInt(words.length)] + r.nextInt(30));
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                long millis = r.nextLong() % 253402300799999L;
                int nanos = LogicalTypeChecks.getPrecision(t) > 3 ? r.nextInt(1_000_000) : 0;
                return TimestampData.fromEpochMillis(millis, nanos);
            case DECIMAL:
                DecimalType d = (DecimalType) t;
                BigInteger unscaled = new BigInteger(d.getPrecision() * 3, r);
                if (r.nextBoolean()) {
                    unscaled = unscaled.negate();
                }
                DecimalData v = DecimalData.fromBigDecimal(new BigDecimal(unscaled, d.getScale()), d.getPrecision(), d.getScale());
                return v == null ? DecimalData.zero(d.getPrecision(), d.getScale()) : v;
            default:
                throw new IllegalArgumentException(t.toString());
        }
    }

    @Test
    void everyKeyTypeLandsInFlinksKeyGroup() throws Exception {
        Random r = new Random(7);
        List<List<LogicalType>> keyLists = new ArrayList<>();
        for (LogicalType t : KEY_TYPES) {
            keyLists.add(List.of(t));
        }
        keyLists.add(List.of(new BigIntType(), new VarCharType(VarCharType.MAX_LENGTH)));
        keyLists.add(new ArrayList<>(KEY_TYPES));
        int checked = 0;
        try (BufferAllocator allocator = new RootAllocator()) {
            for (List<LogicalType> keyTypes : keyLists) {
                checked += check(keyTypes, r, allocator);
            }
        }
        assertTrue(checked >= 15 * 400, "checked " + checked + " keys");
    }

    int check(List<LogicalType> keyTypes, Random r, BufferAllocator allocator) throws Exception {
        RowType rowType = RowType.of(keyTypes.toArray(new LogicalType[0]));
        int[] fields = new int[keyTypes.size()];
        for (int i = 0; i < fields.length; i++) {
            fields[i] = i;
        }
        RowDataKeySelector selector =
                KeySelectorUtil.getRowDataSelector(getClass().getClassLoader(), fields, InternalTypeInfo.of(rowType));
        Map<Integer, List<RowData>> byGroup = new TreeMap<>();
        for (int i = 0; i < 400; i++) {
            GenericRowData row = new GenericRowData(RowKind.INSERT, keyTypes.size());
            for (int c = 0; c < keyTypes.size(); c++) {
                row.setField(c, value(r, keyTypes.get(c)));
            }
            int kg = KeyGroupRangeAssignment.assignToKeyGroup(selector.getKey(row), MAX_PARALLELISM);
            byGroup.computeIfAbsent(kg, k -> new ArrayList<>()).add(row);
        }
        GroupAggregateSpec spec =
                new GroupAggregateSpec(
                        "parity " + rowType,
                        rowType,
                        fields,
                        List.of(new GroupAggregateSpec.Call("COUNT", new int[0], false, "n")),
                        false,
                        false,
                        0,
                        false);
        int checked = 0;
        for (Map.Entry<Integer, List<RowData>> e : byGroup.entrySet()) {
            int kg = e.getKey();
            try (NativeOperator op = NativeOperator.open(spec.toJson(MAX_PARALLELISM, kg, kg), ArrowTypes.schemaOf(spec.inputType()), allocator);
                    RowDataArrowWriter writer = RowDataArrowWriter.create(spec.inputType(), allocator, 16);
                    VectorSchemaRoot out = VectorSchemaRoot.create(op.outputSchema(), allocator)) {
                for (RowData row : e.getValue()) {
                    writer.write(row);
                }
                writer.finish();
                assertEquals(1, op.process(0, writer.root(), 0, out, c -> { }), "keys of key group " + kg + " " + rowType);
                writer.reset();
                checked += e.getValue().size();
                // A key of another key group is refused.
                for (Map.Entry<Integer, List<RowData>> other : byGroup.entrySet()) {
                    if (other.getKey() != kg) {
                        writer.write(other.getValue().get(0));
                        writer.finish();
                        FerryException ex = assertThrows(FerryException.class, () -> op.process(0, writer.root(), 0, out, c -> { }));
                        assertEquals(FerryException.EDATA, ex.code());
                        assertTrue(ex.getMessage().contains("key group " + other.getKey()), ex.getMessage());
                        writer.reset();
                        break;
                    }
                }
            }
        }
        return checked;
    }
}
