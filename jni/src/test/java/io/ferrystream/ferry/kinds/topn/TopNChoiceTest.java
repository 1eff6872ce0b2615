package io.ferrystream.ferry.kinds.topn;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

import org.apache.flink.table.planner.plan.nodes.exec.spec.SortSpec;
import org.apache.flink.table.planner.plan.utils.RankProcessStrategy;
import org.apache.flink.table.runtime.operators.rank.ConstantRankRange;
import org.apache.flink.table.runtime.operators.rank.ConstantRankRangeWithoutEnd;
import org.apache.flink.table.runtime.operators.rank.RankType;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LocalZonedTimestampType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.TimestampKind;
import org.apache.flink.table.types.logical.TimestampType;
import org.apache.flink.table.types.logical.VarCharType;
import org.junit.jupiter.api.Test;

/**
 * The function {@link TopNKind#choose} picks from an exec node's fields, as {@code
 * StreamExecRank#translateToPlanInternal} does, for the shapes a compiled plan can hold but SQL
 * cannot plan (a rank range without end, an undecided strategy).
 */
class TopNChoiceTest {
    static final RowType INPUT = RowType.of(new BigIntType(), new IntType(), VarCharType.STRING_TYPE,
            new TimestampType(true, TimestampKind.ROWTIME, 3), new LocalZonedTimestampType(true, TimestampKind.PROCTIME, 3));

    static SortSpec sort(int field, boolean ascending) {
        return SortSpec.builder().addField(field, ascending, !ascending).build();
    }

    static final RankProcessStrategy APPEND = RankProcessStrategy.APPEND_FAST_STRATEGY;

    @Test
    void functions() {
        ConstantRankRange top3 = new ConstantRankRange(1, 3);
        ConstantRankRange top1 = new ConstantRankRange(1, 1);
        assertEquals(TopNSpec.Function.APPEND_ONLY_TOP_N, TopNKind.choose(RankType.ROW_NUMBER, top3, APPEND, INPUT, sort(1, false), 0).function);
        assertEquals(TopNSpec.Function.FAST_TOP1, TopNKind.choose(RankType.ROW_NUMBER, top1, APPEND, INPUT, sort(1, false), 0).function);
        // the processing time ascending, alone: the first N, top-1 too, with TTL
        assertEquals(TopNSpec.Function.APPEND_ONLY_FIRST_N,
                TopNKind.choose(RankType.ROW_NUMBER, top1, APPEND, INPUT, sort(4, true), 1000).function);
        assertEquals(TopNSpec.Function.APPEND_ONLY_TOP_N, TopNKind.choose(RankType.ROW_NUMBER, top3, APPEND, INPUT, sort(4, false), 0).function);
        // the row time ascending is sorted
        assertEquals(TopNSpec.Function.APPEND_ONLY_TOP_N, TopNKind.choose(RankType.ROW_NUMBER, top3, APPEND, INPUT, sort(3, true), 0).function);
        SortSpec twoKeys = SortSpec.builder().addField(4, true, false).addField(1, true, false).build();
        assertEquals(TopNSpec.Function.APPEND_ONLY_TOP_N, TopNKind.choose(RankType.ROW_NUMBER, top3, APPEND, INPUT, twoKeys, 0).function);
        RankProcessStrategy upsert = new RankProcessStrategy.UpdateFastStrategy(new int[] {0});
        assertEquals(TopNSpec.Function.FAST_TOP1, TopNKind.choose(RankType.ROW_NUMBER, top1, upsert, INPUT, sort(1, false), 0).function);
        assertNull(TopNKind.choose(RankType.ROW_NUMBER, top1, upsert, INPUT, sort(1, false), 0).reason);
    }

    @Test
    void whatFlinkRejectsOrNobodyDecided() {
        assertEquals("a Top-N without a rank end (rankStart=3 only): Flink rejects it at translation",
                TopNKind.choose(RankType.ROW_NUMBER, new ConstantRankRangeWithoutEnd(3), APPEND, INPUT, sort(1, true), 0).reason);
        assertEquals("RANK() on a streaming table: Flink rejects it at translation",
                TopNKind.choose(RankType.RANK, new ConstantRankRange(1, 3), APPEND, INPUT, sort(1, true), 0).reason);
        assertEquals("rank strategy UndefinedStrategy: not native",
                TopNKind.choose(RankType.ROW_NUMBER, new ConstantRankRange(1, 3), RankProcessStrategy.UNDEFINED_STRATEGY, INPUT,
                        sort(1, true), 0).reason);
    }
}
