package io.ferrystream.ferry.nativelib;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.ferrystream.ferry.arrow.ArrowRowDataReader;
import io.ferrystream.ferry.arrow.RowDataArrowWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.flink.types.RowKind;
import org.junit.jupiter.api.Test;

/**
 * Go's signal handling inside the JVM (docs/architecture.md#signals) under stress, kept short: JVM
 * threads each driving their own operator while other threads force Java GCs, raise
 * NullPointerExceptions through implicit null checks (SIGSEGV handled by the JVM while Go owns the
 * handler) and overflow stacks that carry Go's altstack. The JVM must survive, results must stay
 * right, and every counter must move.
 */
class SignalStressTest {
    private static final long DURATION_NANOS = 10_000_000_000L;

    static final class Holder {
        int[] values;
    }

    private static volatile Holder nullHolder; // stays null: every read of .values faults

    private static int touch(Holder h) {
        return h.values.length; // implicit null check once compiled
    }

    private static int recurse(int depth) {
        return depth == Integer.MAX_VALUE ? depth : recurse(depth + 1) + 1;
    }

    @Test
    void operatorsSurviveGcNpesAndStackOverflows() throws Exception {
        NativeLibrary.load();
        int callers = 3;
        AtomicLong[] batches = new AtomicLong[callers];
        AtomicLong gcs = new AtomicLong();
        AtomicLong npes = new AtomicLong();
        AtomicLong soes = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long end = System.nanoTime() + DURATION_NANOS;
        List<Thread> threads = new ArrayList<>();
        try (BufferAllocator root = new RootAllocator()) {
            for (int t = 0; t < callers; t++) {
                AtomicLong counter = batches[t] = new AtomicLong();
                long base = t * 1_000_000L;
                BufferAllocator a = root.newChildAllocator("caller-" + t, 0, Long.MAX_VALUE);
                threads.add(new Thread(() -> {
                    try (a;
                            NativeOperator op = Bids.open(a);
                            RowDataArrowWriter w = RowDataArrowWriter.create(Bids.INPUT, a, 2048);
                            VectorSchemaRoot out = VectorSchemaRoot.create(op.outputSchema(), a)) {
                        ArrowRowDataReader r = new ArrowRowDataReader(out);
                        for (long n = 0; System.nanoTime() < end; n++) {
                            for (int i = 0; i < 2048; i++) {
                                w.write(Bids.row(RowKind.INSERT, base + i % 512, 1));
                            }
                            w.finish();
                            if (op.process(0, w.root(), n, out, c -> { }) == 0) {
                                throw new AssertionError("no output");
                            }
                            w.reset();
                            r.load();
                            // each key saw 4 rows per batch: the last output row's count is exact
                            long cnt = r.read(r.rowCount() - 1).getLong(1);
                            if (cnt != 4 * (n + 1)) {
                                throw new AssertionError("count " + cnt + " after batch " + n);
                            }
                            out.clear();
                            counter.incrementAndGet();
                        }
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                }, "ferry-caller-" + t));
            }
            threads.add(new Thread(() -> {
                while (System.nanoTime() < end) {
                    byte[][] garbage = new byte[256][];
                    for (int i = 0; i < garbage.length; i++) {
                        garbage[i] = new byte[4096];
                    }
                    System.gc();
                    gcs.incrementAndGet();
                    sleep(5);
                }
            }, "gc-pressure"));
            threads.add(new Thread(() -> {
                while (System.nanoTime() < end) {
                    for (int i = 0; i < 10_000; i++) {
                        try {
                            touch(nullHolder);
                        } catch (NullPointerException e) {
                            npes.incrementAndGet();
                        }
                    }
                    sleep(1);
                }
            }, "npe"));
            threads.add(new Thread(() -> {
                while (System.nanoTime() < end) {
                    FerryNative.outstandingBytes(); // a Go call first: this thread now has Go's altstack
                    try {
                        recurse(0);
                    } catch (StackOverflowError e) {
                        soes.incrementAndGet();
                    }
                    sleep(50);
                }
            }, "stack-overflow"));
            threads.forEach(Thread::start);
            for (Thread t : threads) {
                t.join();
            }
        }
        assertNull(failure.get(), () -> "caller failed: " + failure.get());
        for (int t = 0; t < callers; t++) {
            assertTrue(batches[t].get() > 0, "caller " + t + " made no progress");
        }
        assertTrue(gcs.get() > 0 && npes.get() > 0 && soes.get() > 0, "gcs " + gcs + ", npes " + npes + ", soes " + soes);
        System.out.printf("stress: batches %s (2048 rows each), %d System.gc(), %d NPEs, %d StackOverflowErrors%n",
                java.util.Arrays.toString(batches), gcs.get(), npes.get(), soes.get());
        assertEquals(0, NativeLibrary.outstandingBytes());
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
