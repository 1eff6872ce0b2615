package io.ferrystream.ferry.planner;

import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateKind;
import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateSpec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.calcite.rel.core.AggregateCall;
import org.apache.calcite.rel.type.RelDataType;
import org.apache.calcite.rel.type.RelDataTypeSystem;
import org.apache.calcite.sql.fun.SqlStdOperatorTable;
import org.apache.calcite.sql.type.SqlTypeFactoryImpl;
import org.apache.calcite.sql.type.SqlTypeName;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Optional;

/** Call-shape checks SQL cannot reach, and the native probe on its own. */
class GroupAggregateMatcherTest {
    private static final RelDataType BIGINT =
            new SqlTypeFactoryImpl(RelDataTypeSystem.DEFAULT).createSqlType(SqlTypeName.BIGINT);

    @SuppressWarnings("deprecation")
    private static AggregateCall call(
            org.apache.calcite.sql.SqlAggFunction f, boolean distinct, boolean approximate, List<Integer> args, int filter) {
        return AggregateCall.create(f, distinct, approximate, args, filter, BIGINT, "c");
    }

    @Test
    void callShapes() {
        assertNull(GroupAggregateKind.callReason(call(SqlStdOperatorTable.COUNT, false, false, List.of(), -1)));
        assertNull(GroupAggregateKind.callReason(call(SqlStdOperatorTable.COUNT, false, false, List.of(1), -1)));
        assertNull(GroupAggregateKind.callReason(call(SqlStdOperatorTable.MAX, false, false, List.of(1), -1)));
        assertEquals(
                "COUNT over 2 arguments: not native yet",
                GroupAggregateKind.callReason(call(SqlStdOperatorTable.COUNT, false, false, List.of(1, 2), -1)));
        assertEquals(
                "approximate COUNT: not native yet",
                GroupAggregateKind.callReason(call(SqlStdOperatorTable.COUNT, false, true, List.of(1), -1)));
        // DISTINCT and FILTER are for Go to judge (it refuses AVG(DISTINCT), for one).
        assertEquals(null, GroupAggregateKind.callReason(call(SqlStdOperatorTable.SUM, true, false, List.of(1), -1)));
        assertEquals(null, GroupAggregateKind.callReason(call(SqlStdOperatorTable.MIN, false, false, List.of(1), 2)));
        assertEquals(
                "aggregate function STDDEV_POP: not native yet",
                GroupAggregateKind.callReason(call(SqlStdOperatorTable.STDDEV_POP, false, false, List.of(1), -1)));
        assertEquals(null, GroupAggregateKind.callReason(call(SqlStdOperatorTable.SUM0, false, false, List.of(1), -1)));
    }

    /** A probe spec calling function over v (BIGINT), or over k (VARCHAR) when overString. */
    private static GroupAggregateSpec spec(String function, boolean overString) {
        RowType input =
                RowType.of(
                        new org.apache.flink.table.types.logical.LogicalType[] {
                            new VarCharType(VarCharType.MAX_LENGTH), new BigIntType(), new DecimalType(10, 2)
                        },
                        new String[] {"k", "v", "m"});
        return new GroupAggregateSpec(
                "probe",
                input,
                new int[] {0},
                List.of(new GroupAggregateSpec.Call(function, new int[] {overString ? 0 : 1}, false, "x")),
                false,
                false,
                0,
                false);
    }

    @Test
    void goDecidesAndAnswersAreCached() {
        NativeSupport.clearCache();
        assertEquals(Optional.empty(), NativeSupport.check(spec("SUM", false)));
        assertEquals(
                Optional.of("aggs[0]: AVG over VARCHAR: not native yet"), NativeSupport.check(spec("AVG", true)));
        assertEquals(2, NativeSupport.cacheSize());
        assertEquals(Optional.empty(), NativeSupport.check(spec("SUM", false)));
        assertEquals(2, NativeSupport.cacheSize());
        // an invalid spec (EINVAL) is a fallback too, never an error
        Optional<String> invalid = NativeSupport.check(spec("NOPE", false));
        assertTrue(invalid.isPresent() && invalid.get().contains("NOPE"), invalid.toString());
    }

    @Test
    void nativeMessagesAreShortened() {
        assertEquals(
                "aggs[0]: AVG over DECIMAL(10, 2): not native yet",
                NativeSupport.nativeReason(
                        "ferry_operator_open: GroupAggregate(groupBy=[k]): aggs[0]: not supported natively: AVG over"
                                + " DECIMAL(10, 2): not native yet",
                        "GroupAggregate(groupBy=[k])"));
        assertEquals("something else", NativeSupport.nativeReason("something else", "n"));
        assertEquals("refused by libferry.so", NativeSupport.nativeReason("", "n"));
    }
}
