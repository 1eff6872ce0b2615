package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.kinds.deduplicate.FerryDeduplicateOperator;
import io.ferrystream.ferry.operators.DeduplicateDifferentialTest.Planned;
import io.ferrystream.ferry.operators.DeduplicateDifferentialTest.Step;

import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static io.ferrystream.ferry.operators.DeduplicateDifferentialTest.miniBatch;
import static io.ferrystream.ferry.operators.DeduplicateDifferentialTest.options;
import static io.ferrystream.ferry.operators.DeduplicateDifferentialTest.plan;
import static io.ferrystream.ferry.operators.DeduplicateDifferentialTest.run;
import static io.ferrystream.ferry.operators.DeduplicateDifferentialTest.steps;
import static io.ferrystream.ferry.operators.DeduplicateDifferentialTest.timersFire;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Switching Ferry on and off for a deduplication across savepoints (docs/state.md, "The
 * deduplication"): the same random stream through Flink's operator and Ferry's taking turns, each
 * segment restored from the canonical savepoint the one before took ({@code FlinkDeduplicateState}
 * imports Flink's state and writes it back), emits exactly what Flink's operator emits restored
 * from its own savepoints: row for row, with the stored rows' kinds (the heap backend's equaliser
 * sees them), idle-state TTL's last writes and mini-batch bundles, on the heap and on RocksDB.
 * Every form, the insert-only row-time first row too: its waiting rows, emitted flags and
 * event-time timers (on RocksDB, whose timers of one watermark fire in an order of their own, the
 * rows between two watermarks as a multiset, as {@link DeduplicateDifferentialTest} compares them).
 */
class DeduplicateSwitchTest {

    static void check(String order, boolean upsert, Map<String, String> options, long seeds) throws Exception {
        Planned stock = plan(order, false, upsert, false, 1, options);
        Planned ferry = plan(order, false, upsert, true, 7, options);
        assertInstanceOf(FerryDeduplicateOperator.class, ferry.operator());
        for (long seed = 0; seed < seeds; seed++) {
            List<Step> steps = steps(seed * 17 + 3, 600, stock.type(), false);
            long snapshots = steps.stream().filter(s -> s.kind() == 's').count();
            assertTrue(snapshots >= 2, "the stream switches at least twice");
            List<String> want = comparable(stock, run(List.of(stock), steps, true).out());
            String what = order + (upsert ? ", upsert" : "") + ", " + options + ", seed " + seed;
            assertEquals(want, comparable(stock, run(List.of(ferry, stock), steps, true).out()), what + ": Ferry first");
            assertEquals(want, comparable(stock, run(List.of(stock, ferry), steps, true).out()), what + ": Flink first");
        }
    }

    /** The output as compared: on RocksDB with timers, the rows between watermarks sorted. */
    static List<String> comparable(Planned stock, List<String> out) {
        return stock.rocksdb() && timersFire(stock) ? WindowJoinDifferentialTest.segmentsSorted(out) : out;
    }

    @Test
    void everyFormCarriesFlinksState() throws Exception {
        for (String backend : new String[] {"hashmap", "rocksdb"}) {
            for (String order : new String[] {"rt DESC", "pt DESC", "pt"}) {
                for (boolean upsert : new boolean[] {false, true}) {
                    check(order, upsert, options("state.backend.type", backend), 2);
                }
                check(order, false, options("state.backend.type", backend, DeduplicateDifferentialTest.TTL, "50 ms"), 2);
            }
            check("rt", false, miniBatch(5, "state.backend.type", backend), 2);
            check("rt DESC", false, miniBatch(5, "state.backend.type", backend, DeduplicateDifferentialTest.COMPACT, "true",
                    DeduplicateDifferentialTest.TTL, "50 ms"), 2);
            check("pt", false, miniBatch(5, "state.backend.type", backend), 2);
            check("pt DESC", false, miniBatch(5, "state.backend.type", backend), 2);
        }
    }

    /**
     * The insert-only row-time first row ({@code RowTimeDeduplicateKeepFirstRowFunction}): waiting
     * rows and their timers, emitted flags (with TTL their last writes), late rows dropped.
     */
    @Test
    void insertOnlyFirstRowCarriesFlinksState() throws Exception {
        for (String backend : new String[] {"hashmap", "rocksdb"}) {
            check("rt", false, options("state.backend.type", backend), 4);
            check("rt", false, options("state.backend.type", backend, DeduplicateDifferentialTest.TTL, "50 ms"), 3);
        }
    }

    /**
     * The insert-only row-time first row at two savepoints: keys whose rows wait for their timers
     * (one replaced after the switch by an earlier row, its timer moved; timers of equal time
     * across keys), keys emitted (a later row dropped; with TTL the flag expired by the next
     * segment, so the row goes out again), through Flink, Ferry, Flink and Ferry, Flink, Ferry:
     * exactly Flink's output restored from its own savepoints, which holds those rows.
     */
    @Test
    void waitingRowsAndEmittedKeysCrossBothWays() throws Exception {
        for (String backend : new String[] {"hashmap", "rocksdb"}) {
            for (boolean ttl : new boolean[] {false, true}) {
                Map<String, String> options = ttl
                        ? options("state.backend.type", backend, DeduplicateDifferentialTest.TTL, "50 ms")
                        : options("state.backend.type", backend);
                Planned stock = plan("rt", false, false, false, 1, options);
                Planned ferry = plan("rt", false, false, true, 1, options);
                RowDataSerializer serializer = new RowDataSerializer(stock.type());
                List<Step> steps = new ArrayList<>();
                Object[][] script = {
                    {1L, 1000L}, {2L, 5000L}, {3L, 3000L}, {'w', 2000L}, {'s', 0L}, // 1 out, 2 and 3 wait
                    {'t', 100L}, // with TTL, 1's flag expires
                    {1L, 1200L}, {2L, 4000L}, {3L, 3000L}, {4L, 4000L}, {'s', 0L}, // 2 moves to 4000, ties with 4
                    {5L, 4000L}, {6L, 9000L}, {'w', 4000L}, {'s', 0L}, // 3, then 2, 4, 5; 6 waits (and 1 with TTL)
                    {6L, 8000L}, {'w', Long.MAX_VALUE}};
                for (Object[] r : script) {
                    long t = (Long) r[1];
                    if (r[0] instanceof Character c) {
                        steps.add(new Step(c, null, t));
                        continue;
                    }
                    long k = (Long) r[0] * 1_000_003L;
                    GenericRowData row = GenericRowData.of(k, StringData.fromString("r" + steps.size()), 0, 0.0,
                            TimestampData.fromEpochMillis(t), t, TimestampData.fromEpochMillis(t), null);
                    steps.add(new Step('r', serializer.toBinaryRow(row).copy(), 0));
                }
                List<String> want = run(List.of(stock), steps, true).out();
                String text = want.toString();
                assertTrue(text.contains("+I[1000003, r0, ") && text.contains("+I[2000006, r7, ") && text.contains("+I[6000018, r15, ")
                        && !text.contains(", r8, ") && !text.contains(", r1, "), text);
                assertEquals(ttl, text.contains("+I[1000003, r6, "), "with TTL only, key 1 goes out again: " + text);
                String what = backend + (ttl ? ", TTL" : "");
                assertEquals(comparable(stock, want), comparable(stock, run(List.of(ferry, stock), steps, true).out()),
                        what + ": Ferry first");
                assertEquals(comparable(stock, want), comparable(stock, run(List.of(stock, ferry), steps, true).out()),
                        what + ": Flink first");
            }
        }
    }
}
