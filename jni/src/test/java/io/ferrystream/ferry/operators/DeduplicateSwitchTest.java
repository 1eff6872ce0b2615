package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.kinds.deduplicate.FerryDeduplicateOperator;
import io.ferrystream.ferry.operators.DeduplicateDifferentialTest.Planned;
import io.ferrystream.ferry.operators.DeduplicateDifferentialTest.Step;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static io.ferrystream.ferry.operators.DeduplicateDifferentialTest.miniBatch;
import static io.ferrystream.ferry.operators.DeduplicateDifferentialTest.options;
import static io.ferrystream.ferry.operators.DeduplicateDifferentialTest.plan;
import static io.ferrystream.ferry.operators.DeduplicateDifferentialTest.run;
import static io.ferrystream.ferry.operators.DeduplicateDifferentialTest.steps;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Switching Ferry on and off for a deduplication across savepoints (docs/state.md, "The
 * deduplication"): the same random stream through Flink's operator and Ferry's taking turns, each
 * segment restored from the canonical savepoint the one before took ({@code FlinkDeduplicateState}
 * imports Flink's {@code deduplicate-state} and writes it back), emits exactly what Flink's
 * operator emits restored from its own savepoints: row for row, with the stored rows' kinds (the
 * heap backend's equaliser sees them), idle-state TTL's last writes and mini-batch bundles, on the
 * heap and on RocksDB. Every form but the insert-only row-time first row, which is refused
 * ({@link DeduplicateDifferentialTest#flinksStateIsRefused}).
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
            List<String> want = run(List.of(stock), steps, true).out();
            String what = order + (upsert ? ", upsert" : "") + ", " + options + ", seed " + seed;
            assertEquals(want, run(List.of(ferry, stock), steps, true).out(), what + ": Ferry first");
            assertEquals(want, run(List.of(stock, ferry), steps, true).out(), what + ": Flink first");
        }
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
}
