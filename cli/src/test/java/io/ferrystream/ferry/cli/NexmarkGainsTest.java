package io.ferrystream.ferry.cli;

import io.ferrystream.ferry.planner.NativeKinds;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Nexmark gains derived from a run's raw output: a fixture in the runner's format, whose
 * geometric means are known, and the resource round trip.
 */
class NexmarkGainsTest {
    @TempDir Path dir;

    private static final String RUNS_HEADER = "query,side,round,events,seconds,events_per_s,task_cpu_s,events_per_task_core_s,"
            + "process_cpu_s,events_per_process_core_s,checkpoints,mean_sync_ms,mean_async_ms,peak_state_bytes,checksum,"
            + "final_rows,changelog_rows,stateful_operators,native_planned,native_ran,operators,wall_clock";

    /** A runs.csv line with the fields the derivation reads; the rest as the runner writes them. */
    private static String run(String query, String side, int round, String operators) {
        return query + "," + side + "," + round + ",1000,1.0,1000.0,1.0,1000.0,1.0,1000.0,0,0.0,0.0,0,00,1,1,2,2,2,\""
                + operators + "\",\"\"";
    }

    private void fixture() throws IOException {
        Files.writeString(dir.resolve("summary.md"), "## Nexmark q0–q22: stock Flink and Ferry\n\nCommit `abc1234`, started"
                + " 2026-12-01T10:00:00Z, 5 minutes; 2 CPUs, JDK 17\n", StandardCharsets.UTF_8);
        String twoPhase = "LocalGroupAggregate ×2 (native), GlobalGroupAggregate ×2 (native), Join";
        Files.writeString(dir.resolve("runs.csv"), String.join("\n", RUNS_HEADER,
                run("qA", "ferry", 0, "LocalGroupAggregate (native), GlobalGroupAggregate (native)"),
                run("qA", "heap", 1, "LocalGroupAggregate, GlobalGroupAggregate"),
                run("qA", "ferry", 1, "LocalGroupAggregate (native), GlobalGroupAggregate (native)"),
                run("qA", "ferry", 2, "LocalGroupAggregate (native), GlobalGroupAggregate (native)"),
                // native in one timed round only: not counted
                run("qB", "ferry", 1, "WindowJoin (native), GlobalWindowAggregate ×2"),
                run("qB", "ferry", 2, "WindowJoin, GlobalWindowAggregate ×2"),
                run("qC", "ferry", 1, twoPhase),
                run("qC", "ferry", 2, twoPhase),
                // native in the warm-up only: not counted
                run("qD", "ferry", 0, "LookupJoin (native)"),
                run("qD", "ferry", 1, "LookupJoin"),
                run("qE", "ferry", 1, "none")) + "\n", StandardCharsets.UTF_8);
        Files.writeString(dir.resolve("summary.csv"), String.join("\n",
                "query,native,ran_native,heap_events_per_s,heap_events_per_core_s,rocksdb_events_per_s,rocksdb_events_per_core_s,"
                        + "ferry_events_per_s,ferry_events_per_core_s,ferry_over_heap,ferry_over_rocksdb,ferry_over_heap_per_core,"
                        + "ferry_over_rocksdb_per_core",
                "qA,\"2 of 2\",true,1,1,1,1,1,1,1.5,1.5,2.0000,3.0000",
                "qB,\"0 of 3\",false,1,1,1,1,1,1,1.5,1.5,5.0000,5.0000",
                "qC,\"4 of 5\",true,1,1,1,1,1,1,1.5,1.5,8.0000,3.0000",
                "qD,\"0 of 1\",false,1,1,1,1,1,1,1.5,1.5,7.0000,7.0000",
                "qE,\"0 of 0\",false,1,1,1,1,1,1,1.5,1.5,9.0000,9.0000") + "\n", StandardCharsets.UTF_8);
    }

    @Test
    void derivedFromARunsRawOutput() throws IOException {
        fixture();
        NexmarkGains g = NexmarkGains.derive(dir, "a test fixture");
        assertEquals("abc1234", g.commit);
        assertEquals("2026-12-01T10:00:00Z", g.started);
        assertEquals(NativeKinds.names(), List.copyOf(g.byKind.keySet()), "every registered kind, in order");
        // qA 2 and 3, qC 8 and 3: geometric means 4 and 3
        for (String kind : List.of("local_group_aggregate", "global_group_aggregate")) {
            NexmarkGains.Gain gain = g.byKind.get(kind);
            assertEquals(List.of("qA", "qC"), gain.queries(), kind);
            assertEquals(4.0, gain.overHeap(), 1e-9, kind);
            assertEquals(3.0, gain.overRocksdb(), 1e-9, kind);
            assertEquals("4.00× heap, 3.00× RocksDB (qA, qC)", g.describe(kind));
        }
        for (String kind : List.of("window_join", "lookup_join", "group_aggregate", "interval_join")) {
            assertEquals(List.of(), g.byKind.get(kind).queries(), kind);
            assertEquals("not measured", g.describe(kind), kind);
        }
        assertEquals("not measured", g.describe("no_such_kind"));

        NexmarkGains back = NexmarkGains.parse(g.csv());
        for (NexmarkGains.Gain gain : g.byKind.values()) {
            NexmarkGains.Gain read = back.byKind.get(gain.kind());
            assertEquals(gain.queries(), read.queries(), gain.kind());
            assertEquals(gain.overHeap(), read.overHeap(), 1e-4, gain.kind());
            assertEquals(gain.overRocksdb(), read.overRocksdb(), 1e-4, gain.kind());
            assertEquals(g.describe(gain.kind()), back.describe(gain.kind()));
        }
        assertEquals(List.of(g.commit, g.started, g.source), List.of(back.commit, back.started, back.source));
        assertTrue(g.csv().contains("\nlocal_group_aggregate,qA qC,4.0000,3.0000\n"), g.csv());
    }

    @Test
    void aRunWithoutItsSummaryHeaderIsRefused() throws IOException {
        fixture();
        Files.writeString(dir.resolve("summary.md"), "no header\n", StandardCharsets.UTF_8);
        IOException e = assertThrows(IOException.class, () -> NexmarkGains.derive(dir, "x"));
        assertTrue(e.getMessage().contains("Commit"), e.getMessage());
    }

    /** The resource the command ships reads back, names its run, and has a figure only with the queries it covers. */
    @Test
    void theShippedResourceReads() throws IOException {
        NexmarkGains g = NexmarkGains.shipped();
        assertTrue(g.commit.matches("[0-9a-f]{7,40}(-dirty)?"), g.commit);
        assertTrue(!g.source.isBlank());
        for (NexmarkGains.Gain gain : g.byKind.values()) {
            assertEquals(gain.queries().isEmpty(), Double.isNaN(gain.overHeap()), gain.toString());
            assertTrue(gain.queries().isEmpty() || gain.overHeap() > 0 && gain.overRocksdb() > 0, gain.toString());
        }
    }
}
