package io.ferrystream.ferry.kinds.topn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.apache.flink.table.planner.plan.nodes.exec.spec.SortSpec;
import org.apache.flink.table.planner.plan.utils.RankProcessStrategy;
import org.apache.flink.table.runtime.operators.rank.ConstantRankRange;
import org.apache.flink.table.runtime.operators.rank.ConstantRankRangeWithoutEnd;
import org.apache.flink.table.runtime.operators.rank.RankRange;
import org.apache.flink.table.runtime.operators.rank.RankType;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.DoubleType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.TimestampKind;
import org.apache.flink.table.types.logical.TimestampType;
import org.apache.flink.table.types.logical.VarCharType;
import org.junit.jupiter.api.Test;

/**
 * The function {@link TopNKind#choose} picks from an exec node's fields, as {@code
 * StreamExecRank#translateToPlanInternal} does, with the shapes a compiled plan can hold but SQL
 * cannot plan (a rank range without end, an undecided strategy).
 */
class TopNChoiceTest {
    /** k, v, s, a row time, a processing time, a DOUBLE. */
    static final RowType INPUT = RowType.of(new BigIntType(), new IntType(), VarCharType.STRING_TYPE,
            new TimestampType(true, TimestampKind.ROWTIME, 3), new LocalZonedTimestampType(true, TimestampKind.PROCTIME, 3),
            new DoubleType());

    static final RowType NO_DOUBLE = RowType.of(new BigIntType(), new IntType(), VarCharType.STRING_TYPE);

    static final RankProcessStrategy APPEND = RankProcessStrategy.APPEND_FAST_STRATEGY;
    static final RankProcessStrategy RETRACT = RankProcessStrategy.RETRACT_STRATEGY;
    static final RankProcessStrategy UPSERT = new RankProcessStrategy.UpdateFastStrategy(new int[] {0});
    static final ConstantRankRange TOP3 = new ConstantRankRange(1, 3);
    static final ConstantRankRange TOP1 = new ConstantRankRange(1, 1);

    static SortSpec sort(int field, boolean ascending) {
        return SortSpec.builder().addField(field, ascending, !ascending).build();
    }

    static TopNKind.Choice choose(RankRange range, RankProcessStrategy strategy, RowType input, SortSpec sort,
            boolean rankNumber, long ttl) {
        return TopNKind.choose(RankType.ROW_NUMBER, range, strategy, input, sort, rankNumber, ttl);
    }

    static TopNSpec.Function function(RankRange range, RankProcessStrategy strategy, RowType input, SortSpec sort, long ttl) {
        TopNKind.Choice c = choose(range, strategy, input, sort, false, ttl);
        assertNull(c.reason);
        return c.function;
    }

    @Test
    void functions() {
        assertEquals(TopNSpec.Function.APPEND_ONLY_TOP_N, function(TOP3, APPEND, INPUT, sort(1, false), 0));
        assertEquals(TopNSpec.Function.FAST_TOP1, function(TOP1, APPEND, INPUT, sort(1, false), 0));
        // the processing time ascending, alone: the first N, top-1 too, with TTL
        assertEquals(TopNSpec.Function.APPEND_ONLY_FIRST_N, function(TOP1, APPEND, INPUT, sort(4, true), 1000));
        assertEquals(TopNSpec.Function.APPEND_ONLY_TOP_N, function(TOP3, APPEND, INPUT, sort(4, false), 0));
        // the row time ascending is sorted
        assertEquals(TopNSpec.Function.APPEND_ONLY_TOP_N, function(TOP3, APPEND, INPUT, sort(3, true), 0));
        SortSpec twoKeys = SortSpec.builder().addField(4, true, false).addField(1, true, false).build();
        assertEquals(TopNSpec.Function.APPEND_ONLY_TOP_N, function(TOP3, APPEND, INPUT, twoKeys, 0));
        assertEquals(TopNSpec.Function.FAST_TOP1, function(TOP1, UPSERT, INPUT, sort(1, false), 0));
        assertEquals(TopNSpec.Function.UPDATABLE_TOP_N, function(TOP3, UPSERT, INPUT, sort(1, false), 0));
        assertEquals(TopNSpec.Function.RETRACTABLE_TOP_N, function(TOP3, RETRACT, NO_DOUBLE, sort(1, false), 0));
        assertEquals(TopNSpec.Function.RETRACTABLE_TOP_N, function(TOP1, RETRACT, NO_DOUBLE, sort(1, false), 0));
        // an offset with the rank number
        assertNull(choose(new ConstantRankRange(2, 4), RETRACT, NO_DOUBLE, sort(1, false), true, 0).reason);
    }

    @Test
    void theUpdatableTopNsRowKeyIsTheStrategys() {
        RowType input = RowType.of(new IntType(), new BigIntType(), new IntType());
        TopNSpec spec = TopNKind.build("r", input, input, new int[] {0}, TopNSpec.Function.UPDATABLE_TOP_N,
                new RankProcessStrategy.UpdateFastStrategy(new int[] {0, 1}), sort(2, false), TOP3, false, true, 0);
        assertEquals(2, spec.rowKeys().length);
        assertEquals(1, spec.rowKeys()[1]);
        TopNSpec append = TopNKind.build("r", input, input, new int[] {0}, TopNSpec.Function.APPEND_ONLY_TOP_N, APPEND,
                sort(2, false), TOP3, false, true, 0);
        assertEquals(0, append.rowKeys().length);
    }

    @Test
    void fallbacks() {
        assertEquals("a Top-N over an updating input (RetractableTopNFunction) with an offset (rank 2 to 4) and without the"
                + " rank number selected: not native yet (Flink's function then stores rows with the row kind it emitted them"
                + " with, which its retractions compare)",
                choose(new ConstantRankRange(2, 4), RETRACT, NO_DOUBLE, sort(1, false), false, 0).reason);
        assertEquals("input field f5 of type DOUBLE in a Top-N over an updating input (RetractableTopNFunction): not native"
                + " yet (Flink's equaliser compares FLOAT/DOUBLE by value or by bits, depending on the form a row arrives in)",
                choose(TOP3, RETRACT, INPUT, sort(1, false), true, 0).reason);
        assertEquals("row key field f5 of type DOUBLE of a Top-N over an upsert input (UpdatableTopNFunction): a FLOAT/DOUBLE"
                + " row key is not native yet",
                choose(TOP3, new RankProcessStrategy.UpdateFastStrategy(new int[] {0, 5}), INPUT, sort(1, false), true, 0).reason);
        // a DOUBLE field that is no row key and no sort key
        assertNull(choose(TOP3, UPSERT, INPUT, sort(1, false), false, 0).reason);
        assertEquals("idle-state TTL (table.exec.state.ttl) on a Top-N kept by RetractableTopNFunction: its sorted-map and"
                + " data-state then expire separately; not native", choose(TOP3, RETRACT, NO_DOUBLE, sort(1, false), false, 1).reason);
        assertEquals("idle-state TTL (table.exec.state.ttl) on a Top-N kept by UpdatableTopNFunction: Flink's results then"
                + " depend on which partitions its cache (table.exec.rank.topn-cache-size) holds; not native",
                choose(TOP3, UPSERT, INPUT, sort(1, false), false, 1).reason);
        assertEquals("ORDER BY f5 of type DOUBLE: a FLOAT/DOUBLE sort key is not native yet (Flink's comparator takes NaN as"
                + " equal to every value)", choose(TOP3, UPSERT, INPUT, sort(5, false), false, 0).reason);
    }

    @Test
    void whatFlinkRejectsOrNobodyDecided() {
        assertEquals("a Top-N without a rank end (rankStart=3 only): Flink rejects it at translation",
                choose(new ConstantRankRangeWithoutEnd(3), APPEND, INPUT, sort(1, true), false, 0).reason);
        assertEquals("RANK() on a streaming table: Flink rejects it at translation",
                TopNKind.choose(RankType.RANK, TOP3, APPEND, INPUT, sort(1, true), false, 0).reason);
        assertEquals("rank strategy UndefinedStrategy: not native",
                choose(TOP3, RankProcessStrategy.UNDEFINED_STRATEGY, INPUT, sort(1, true), false, 0).reason);
    }
}
