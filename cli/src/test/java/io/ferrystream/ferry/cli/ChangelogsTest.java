package io.ferrystream.ferry.cli;

import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

/** The three levels changelogs are compared at, each implied by the one before. */
class ChangelogsTest {
    private static Row r(RowKind kind, Object... fields) {
        return Row.ofKind(kind, fields);
    }

    @Test
    void strictMultisetAndFinal() {
        List<Row> a = List.of(r(RowKind.INSERT, "a", 1L), r(RowKind.INSERT, "b", 1L),
                r(RowKind.UPDATE_BEFORE, "a", 1L), r(RowKind.UPDATE_AFTER, "a", 2L));
        List<Row> reordered = List.of(r(RowKind.INSERT, "b", 1L), r(RowKind.INSERT, "a", 1L),
                r(RowKind.UPDATE_BEFORE, "a", 1L), r(RowKind.UPDATE_AFTER, "a", 2L));
        List<Row> otherUpdates = List.of(r(RowKind.INSERT, "b", 1L), r(RowKind.INSERT, "a", 2L));
        List<Row> otherResult = List.of(r(RowKind.INSERT, "b", 1L), r(RowKind.INSERT, "a", 3L));

        assertNull(Changelogs.firstDifference(a, a));
        assertNotNull(Changelogs.firstDifference(a, reordered));
        assertNull(Changelogs.multisetDifference(a, reordered));
        assertNotNull(Changelogs.multisetDifference(a, otherUpdates));
        assertNull(Changelogs.finalResultDifference(a, otherUpdates, null));
        assertEquals("final row +I[a, 2]: stock x1, Ferry x0", Changelogs.finalResultDifference(a, otherResult, null));

        Map<String, Integer> table = Changelogs.materialize(a, null);
        assertEquals(Map.of("+I[a, 2]", 1, "+I[b, 1]", 1), table);
        assertEquals(Changelogs.checksum(table), Changelogs.checksum(Changelogs.materialize(otherUpdates, null)));
        assertNotEquals(Changelogs.checksum(table), Changelogs.checksum(Changelogs.materialize(otherResult, null)));
    }

    /**
     * A floating-point sum added in another order differs in its last bits: equal within rounding,
     * but not exactly; a real difference, a missing row or a changed exact field stays a difference.
     */
    @Test
    void finalResultWithinRounding() {
        List<Row> stock = List.of(r(RowKind.INSERT, 0L, 70.75238095238095), r(RowKind.INSERT, 1L, 2.5),
                r(RowKind.UPDATE_BEFORE, 1L, 2.5), r(RowKind.UPDATE_AFTER, 1L, 1e-12));
        List<Row> lastBits = List.of(r(RowKind.INSERT, 1L, 0.0), r(RowKind.INSERT, 0L, 70.75238095238096));
        List<Row> otherValue = List.of(r(RowKind.INSERT, 0L, 70.7524), r(RowKind.INSERT, 1L, 0.0));
        List<Row> otherKey = List.of(r(RowKind.INSERT, 0L, 70.75238095238096), r(RowKind.INSERT, 2L, 0.0));
        List<Row> missing = List.of(r(RowKind.INSERT, 0L, 70.75238095238096));

        assertNotNull(Changelogs.finalResultDifference(stock, lastBits, null));
        assertNull(Changelogs.finalResultDifferenceBeyondRounding(stock, lastBits, null));
        assertNull(Changelogs.finalResultDifferenceBeyondRounding(stock, stock, null));
        assertEquals("final row stock +I[0, 70.75238095238095], Ferry +I[0, 70.7524]",
                Changelogs.finalResultDifferenceBeyondRounding(stock, otherValue, null));
        assertNotNull(Changelogs.finalResultDifferenceBeyondRounding(stock, otherKey, null));
        assertEquals("final row +I[1, 1.0E-12]: stock x1, Ferry x0", Changelogs.finalResultDifferenceBeyondRounding(stock, missing, null));
    }

    /**
     * An upsert changelog ({@code +U} without {@code -U}) materializes by its upsert key: each
     * version replaces the key's row, so runs whose intermediate versions differ leave the same
     * table; counted as a retract changelog they would not.
     */
    @Test
    void upsertChangelogByKey() {
        int[] key = {0};
        List<Row> stock = List.of(r(RowKind.INSERT, "a", 1L), r(RowKind.INSERT, "b", 5L), r(RowKind.UPDATE_AFTER, "a", 3L),
                r(RowKind.INSERT, "c", 1L), r(RowKind.DELETE, "c", 1L), r(RowKind.UPDATE_AFTER, "a", 4L));
        List<Row> otherVersions = List.of(r(RowKind.INSERT, "b", 5L), r(RowKind.INSERT, "a", 2L), r(RowKind.UPDATE_AFTER, "a", 4L));
        List<Row> otherResult = List.of(r(RowKind.INSERT, "b", 5L), r(RowKind.INSERT, "a", 3L));
        List<Row> deleted = List.of(r(RowKind.INSERT, "b", 5L), r(RowKind.INSERT, "a", 4L), r(RowKind.DELETE, "a", 4L));

        assertEquals(Map.of("+I[a, 4]", 1, "+I[b, 5]", 1), Changelogs.materialize(stock, key));
        assertNull(Changelogs.finalResultDifference(stock, otherVersions, key));
        assertNotNull(Changelogs.finalResultDifference(stock, otherVersions, null));
        assertEquals("final row +I[a, 4]: stock x1, Ferry x0", Changelogs.finalResultDifference(stock, otherResult, key));
        assertEquals("final row +I[a, 4]: stock x1, Ferry x0", Changelogs.finalResultDifference(stock, deleted, key));
    }
}
