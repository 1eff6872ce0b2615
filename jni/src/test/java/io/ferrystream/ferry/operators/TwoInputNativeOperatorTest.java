package io.ferrystream.ferry.operators;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.flink.runtime.checkpoint.OperatorSubtaskState;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.AbstractStreamOperatorTestHarness;
import org.apache.flink.streaming.util.KeyedTwoInputStreamOperatorTestHarness;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.planner.plan.utils.KeySelectorUtil;
import org.apache.flink.table.runtime.keyselector.RowDataKeySelector;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.RowKind;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

/**
 * The two-input form of the native operator in Flink's keyed two-input harness, on the test
 * library's {@code test_fanout} kind (built with the ferrytest tag; this class runs in the Maven
 * execution that loads that library): a stateless operator of any number of inputs with the same
 * fields that emits every row it is given, in the order it is given. Its output is therefore
 * exactly the rows the library saw, in order, with the watermarks between them.
 *
 * <p>A model of the form's documented policy (per-input batches processed alone when full; every
 * pending batch, the first input's first, at the max-delay timer, before a combined watermark, a
 * barrier and the end of input; bundles of both inputs' rows cut also at every per-input
 * watermark) turns each random run into the rows, process calls and watermarks the library must
 * have seen; the operator's output must equal it row for row, and the number of process calls
 * (the {@code ferryNativeBatches} count) must match. Runs snapshot and restore at random points.
 */
@Tag("test-library")
class TwoInputNativeOperatorTest {
    static final int MAX_PARALLELISM = 128;
    static final RowType INPUT = RowType.of(new LogicalType[] {new BigIntType(), new BigIntType()}, new String[] {"k", "v"});
    static final RowDataKeySelector KEYS = KeySelectorUtil.getRowDataSelector(
            TwoInputNativeOperatorTest.class.getClassLoader(), new int[] {0}, InternalTypeInfo.of(INPUT));

    /** Two inputs of type INPUT, keyed by k; the test library's fanout, one copy of every row. */
    static final class FanoutSpec extends NativeSpec {
        private static final long serialVersionUID = 1L;

        FanoutSpec() {
            super("test_fanout", "fanout of two inputs", List.of(input(), input()));
        }

        private static Input input() {
            return Input.of(INPUT, new int[] {0, 1}, new int[] {0}, new int[0]);
        }

        @Override
        protected void writeParams(ObjectNode params) {
            params.put("copies", 1);
        }
    }

    static final class FanoutOperator extends TwoInputNativeOperator<FanoutSpec> {
        private static final long serialVersionUID = 1L;

        FanoutOperator(Batching batching, int firstInput) {
            super(new FanoutSpec(), INPUT, batching, firstInput);
        }
    }

    // ---- the run: random events, the model of the policy ----------------------------------------

    sealed interface Event permits Row, Mark, Time, Checkpoint {}

    record Row(int input, RowData row) implements Event {}

    record Mark(int input, long ts) implements Event {}

    /** The harness's processing time moves to {@code now}. */
    record Time(long now) implements Event {}

    record Checkpoint() implements Event {}

    static List<Event> events(long seed, int n) {
        Random r = new Random(seed);
        List<Event> out = new ArrayList<>();
        long[] wm = {0, 0};
        long now = 0;
        for (int i = 0; i < n; i++) {
            int x = r.nextInt(100);
            int input = r.nextInt(3) == 0 ? 1 : 0; // uneven inputs
            if (x < 85) {
                GenericRowData row = GenericRowData.of((long) r.nextInt(12), r.nextInt(7) == 0 ? null : (long) r.nextInt(100));
                if (r.nextInt(6) == 0) {
                    row.setRowKind(RowKind.DELETE); // retraction of a value that may or may not be there
                }
                out.add(new Row(input, row));
            } else if (x < 93) {
                wm[input] += 1 + r.nextInt(20);
                out.add(new Mark(input, wm[input]));
            } else if (x < 98) {
                now += 1 + r.nextInt(8);
                out.add(new Time(now));
            } else {
                out.add(new Checkpoint());
            }
        }
        return out;
    }

    /** What the library sees, in order: rows, ends of a bundle (a process call), watermarks. */
    static final class Model {
        final Batching batching;
        final int[] order;
        final List<Object> seen = new ArrayList<>();
        final List<List<RowData>> pending = List.of(new ArrayList<>(), new ArrayList<>());
        long[] wm;
        long combined;
        long timerAt;
        long now;

        Model(Batching batching, int firstInput) {
            this.batching = batching;
            this.order = firstInput == 0 ? new int[] {0, 1} : new int[] {1, 0};
            restart();
        }

        /** A restored operator: no watermark seen, no timer. */
        void restart() {
            wm = new long[] {Long.MIN_VALUE, Long.MIN_VALUE};
            combined = Long.MIN_VALUE;
            timerAt = -1;
        }

        void process(int input) {
            List<RowData> p = pending.get(input);
            if (!p.isEmpty()) {
                seen.addAll(p);
                seen.add("|"); // one process call: one bundle of a mini-batch aggregate
                p.clear();
            }
        }

        void processPending() {
            for (int i : order) {
                process(i);
            }
        }

        void on(Event e) {
            if (e instanceof Row row) {
                pending.get(row.input()).add(row.row());
                int count = pending.get(row.input()).size();
                if (batching.bundled()) {
                    if (pending.get(0).size() + pending.get(1).size() >= batching.size()) {
                        processPending();
                    }
                } else if (count >= batching.size() || batching.maxDelayMs() == 0) {
                    process(row.input());
                } else if (timerAt < 0) {
                    timerAt = now + batching.maxDelayMs();
                }
            } else if (e instanceof Mark mark) {
                if (batching.bundled()) {
                    processPending();
                }
                wm[mark.input()] = Math.max(wm[mark.input()], mark.ts());
                long c = Math.min(wm[0], wm[1]);
                if (c > combined) {
                    combined = c;
                    processPending();
                    seen.add(new Watermark(c));
                }
            } else if (e instanceof Time time) {
                now = time.now();
                if (timerAt >= 0 && timerAt <= now) {
                    timerAt = -1;
                    processPending();
                }
            } else {
                processPending();
            }
        }
    }

    // ---- the two harnesses ----------------------------------------------------------------------

    static KeyedTwoInputStreamOperatorTestHarness<RowData, RowData, RowData, RowData> twoInput(
            FanoutOperator operator, OperatorSubtaskState state, long now) throws Exception {
        var h = new KeyedTwoInputStreamOperatorTestHarness<>(
                operator, KEYS, KEYS, KEYS.getProducedType(), MAX_PARALLELISM, 1, 0);
        h.setup(new RowDataSerializer(INPUT));
        if (state != null) {
            h.initializeState(state);
        }
        h.open();
        h.setProcessingTime(now);
        return h;
    }

    /** What the two-input operator emitted, and how many process calls it made. */
    record Run(List<String> output, long calls) {}

    /** Drives the two-input operator through the events, checkpointing and restoring where they say. */
    static Run runTwoInput(Batching batching, int firstInput, List<Event> events) throws Exception {
        List<String> out = new ArrayList<>();
        FanoutOperator op = new FanoutOperator(batching, firstInput);
        var h = twoInput(op, null, 0);
        long calls = 0;
        long cp = 0;
        long now = 0;
        for (Event e : events) {
            if (e instanceof Row row) {
                if (row.input() == 0) {
                    h.processElement1(new StreamRecord<>(row.row()));
                } else {
                    h.processElement2(new StreamRecord<>(row.row()));
                }
            } else if (e instanceof Mark mark) {
                if (mark.input() == 0) {
                    h.processWatermark1(new Watermark(mark.ts()));
                } else {
                    h.processWatermark2(new Watermark(mark.ts()));
                }
            } else if (e instanceof Time time) {
                now = time.now();
                h.setProcessingTime(now);
            } else {
                h.prepareSnapshotPreBarrier(++cp);
                OperatorSubtaskState state = h.snapshot(cp, cp);
                out.addAll(drain(h));
                calls += op.nativeBatches();
                h.close();
                op = new FanoutOperator(batching, firstInput);
                h = twoInput(op, state, now);
            }
        }
        h.close(); // finish: the pending batches, then the library's flush
        out.addAll(drain(h));
        return new Run(out, calls + op.nativeBatches());
    }

    /** What the model says the library saw, as the fanout emits it. */
    static List<String> expected(List<Object> seen) {
        List<String> out = new ArrayList<>();
        for (Object o : seen) {
            if (o instanceof RowData row) {
                out.add(RescaleSupport.render(row, INPUT));
            } else if (o instanceof Watermark mark) {
                out.add("watermark " + mark.getTimestamp());
            }
        }
        return out;
    }

    static List<String> drain(AbstractStreamOperatorTestHarness<RowData> h) {
        List<String> out = new ArrayList<>();
        for (Object o : h.getOutput()) {
            if (o instanceof StreamRecord<?> record) {
                out.add(RescaleSupport.render((RowData) record.getValue(), INPUT));
            } else if (o instanceof Watermark mark) {
                out.add("watermark " + mark.getTimestamp());
            }
        }
        h.getOutput().clear();
        return out;
    }

    @ParameterizedTest(name = "{0}, first input {1}")
    @CsvSource({
        "batches of 4 max-delay 5, 0",
        "batches of 4 max-delay 5, 1",
        "batches of 1, 0",
        "batches of 64 max-delay 0, 1",
        "bundles of 5, 0",
        "bundles of 5, 1",
        "bundles of 1000, 1",
    })
    void theLibrarySeesTheDocumentedOrder(String policy, int firstInput) throws Exception {
        String[] w = policy.split(" ");
        int size = Integer.parseInt(w[2]);
        boolean bundled = w[0].equals("bundles");
        Batching batching = bundled ? Batching.bundles(size) : Batching.of(size, w.length > 4 ? Long.parseLong(w[4]) : 0);
        long openedBefore = AbstractNativeOperator.openedCount("test_fanout");
        for (long seed = 1; seed <= 4; seed++) {
            List<Event> events = events(seed * 31 + size, 1500);
            Model model = new Model(batching, firstInput);
            for (Event e : events) {
                model.on(e);
                if (e instanceof Checkpoint) {
                    model.restart();
                }
            }
            model.processPending(); // the end of input
            List<String> want = expected(model.seen);
            Run got = runTwoInput(batching, firstInput, events);
            assertTrue(want.size() > 1000, "an output worth comparing: " + want.size());
            assertTrue(want.stream().anyMatch(s -> s.startsWith("watermark")), "watermarks reached the output");
            for (int i = 0; i < Math.min(want.size(), got.output().size()); i++) {
                assertEquals(want.get(i), got.output().get(i), "seed " + seed + ": first difference at output " + i);
            }
            assertEquals(want.size(), got.output().size(), "seed " + seed + ": output length");
            assertEquals(model.seen.stream().filter("|"::equals).count(), got.calls(), "seed " + seed + ": process calls");
        }
        assertTrue(AbstractNativeOperator.openedCount("test_fanout") > openedBefore);
    }
}
