package io.ferrystream.ferry.kinds.lookupjoin;

import io.ferrystream.ferry.operators.Batching;

import org.apache.flink.api.common.functions.AbstractRichFunction;
import org.apache.flink.api.common.functions.FlatMapFunction;
import org.apache.flink.api.common.functions.RuntimeContext;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.streaming.api.datastream.AsyncDataStream;
import org.apache.flink.streaming.api.functions.async.AsyncFunction;
import org.apache.flink.streaming.api.functions.async.ResultFuture;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperatorFactory;
import org.apache.flink.streaming.api.operators.ProcessOperator;
import org.apache.flink.streaming.api.operators.SimpleOperatorFactory;
import org.apache.flink.streaming.api.operators.StreamOperatorFactory;
import org.apache.flink.streaming.api.operators.async.AsyncWaitOperatorFactory;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.OneInputStreamOperatorTestHarness;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.conversion.DataStructureConverter;
import org.apache.flink.table.data.conversion.DataStructureConverters;
import org.apache.flink.table.functions.LookupFunction;
import org.apache.flink.table.runtime.collector.ListenableCollector;
import org.apache.flink.table.runtime.collector.TableFunctionResultFuture;
import org.apache.flink.table.runtime.generated.FilterCondition;
import org.apache.flink.table.runtime.generated.GeneratedCollectorWrapper;
import org.apache.flink.table.runtime.generated.GeneratedFunctionWrapper;
import org.apache.flink.table.runtime.generated.GeneratedResultFutureWrapper;
import org.apache.flink.table.runtime.operators.join.lookup.AsyncLookupJoinRunner;
import org.apache.flink.table.runtime.operators.join.lookup.AsyncLookupJoinWithCalcRunner;
import org.apache.flink.table.runtime.operators.join.lookup.LookupJoinRunner;
import org.apache.flink.table.runtime.operators.join.lookup.LookupJoinWithCalcRunner;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.flink.types.RowKind;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link FerryLookupJoinOperator} against Flink's own lookup join operators in Flink's harness, on
 * the same runner pieces and the same random probe streams (NULL keys, missing keys, several rows
 * per key, watermarks, RowKinds, timestamps): {@code ProcessOperator(LookupJoinRunner[WithCalc])}
 * for the sync and the batched-fetch forms, {@code AsyncWaitOperator(AsyncLookupJoinRunner[WithCalc])}
 * ordered and unordered for the async form; INNER/LEFT, with and without pre-filter, calc and
 * residual condition. Then failures: a failing request, a timeout, a failing open.
 */
class LookupJoinDifferentialTest {
    static final LogicalType[] PROBE = {new IntType(), new VarCharType(VarCharType.MAX_LENGTH)};
    static final LogicalType[] OUT = {new IntType(), new VarCharType(VarCharType.MAX_LENGTH), new IntType(),
        new VarCharType(VarCharType.MAX_LENGTH)};
    static final TypeSerializer<RowData> PROBE_SERIALIZER = new RowDataSerializer(PROBE);
    static final DataType RIGHT = DataTypes.ROW(DataTypes.FIELD("f0", DataTypes.INT()), DataTypes.FIELD("f1", DataTypes.STRING()))
            .bridgedTo(RowData.class);
    static final int CAPACITY = 3;

    enum Mode { SYNC, FETCHING, ASYNC_ORDERED, ASYNC_UNORDERED }

    static Stream<Arguments> cases() {
        List<Arguments> cases = new ArrayList<>();
        for (Mode mode : Mode.values()) {
            for (int bits = 0; bits < 16; bits++) {
                cases.add(Arguments.of(mode, (bits & 1) != 0, (bits & 2) != 0, (bits & 4) != 0, (bits & 8) != 0));
            }
        }
        return cases.stream();
    }

    @ParameterizedTest(name = "{0} left={1} preFilter={2} calc={3} residual={4}")
    @MethodSource("cases")
    void sameOutputAsFlink(Mode mode, boolean left, boolean preFilter, boolean calc, boolean residual) throws Exception {
        for (int seed = 0; seed < 3; seed++) {
            List<Object> input = probeStream(new Random(seed * 31L + mode.ordinal()), 120, false);
            boolean reuse = seed == 1;
            List<String> flink = run(flinkFactory(mode, left, preFilter, calc, residual, 1000), input, reuse);
            List<String> ferry = run(SimpleOperatorFactory.of(ferryOperator(mode, left, preFilter, calc, residual, 1000, 5)),
                    input, reuse);
            if (mode == Mode.ASYNC_UNORDERED) {
                flink = sortedWithinWatermarks(flink);
                ferry = sortedWithinWatermarks(ferry);
            }
            assertEquals(flink, ferry, "seed " + seed);
            assertTrue(flink.stream().anyMatch(r -> r.startsWith("+I")), flink.toString());
        }
    }

    /** Random probe rows (k INT with NULLs and missing keys, s STRING), timestamps, RowKinds, watermarks. */
    static List<Object> probeStream(Random random, int rows, boolean withFailing) {
        Integer[] keys = {null, 0, 1, 3, 4, 6, 7, 8};
        String[] strings = {null, "x1", "Julian", "Jark", "bb", "y"};
        List<Object> out = new ArrayList<>();
        long ts = 1000;
        for (int i = 0; i < rows; i++) {
            Integer k = keys[random.nextInt(keys.length)];
            if (withFailing && i == rows - 2) {
                k = LookupTestPieces.FAILING_KEY;
            }
            String s = strings[random.nextInt(strings.length)];
            GenericRowData row = GenericRowData.of(k, s == null ? null : StringData.fromString(s));
            row.setRowKind(random.nextInt(10) == 0 ? RowKind.UPDATE_AFTER : RowKind.INSERT);
            ts += random.nextInt(3);
            out.add(random.nextInt(8) == 0 ? new StreamRecord<>(row) : new StreamRecord<>(row, ts));
            if (random.nextInt(25) == 0) {
                out.add(new Watermark(ts - 1));
            }
        }
        return out;
    }

    static GeneratedFunctionWrapper<FilterCondition> preFilter(boolean on) {
        return new GeneratedFunctionWrapper<>(on ? new LookupTestPieces.PreFilter() : new LookupTestPieces.NoPreFilter());
    }

    static LookupJoinRunner syncRunner(boolean left, boolean preFilter, boolean calc, boolean residual,
            FlatMapFunction<RowData, RowData> fetcher) {
        GeneratedFunctionWrapper<FlatMapFunction<RowData, RowData>> fetch = new GeneratedFunctionWrapper<>(fetcher);
        GeneratedCollectorWrapper<ListenableCollector<RowData>> collector = new GeneratedCollectorWrapper<>(
                residual ? new LookupTestPieces.Residual() : new LookupTestPieces.NoResidual());
        return calc
                ? new LookupJoinWithCalcRunner(fetch, new GeneratedFunctionWrapper<>(new LookupTestPieces.Calc()), collector,
                        preFilter(preFilter), left, 2)
                : new LookupJoinRunner(fetch, collector, preFilter(preFilter), left, 2);
    }

    @SuppressWarnings({"unchecked", "rawtypes"})
    static AsyncFunction<RowData, RowData> asyncRunner(boolean left, boolean preFilter, boolean calc, boolean residual) {
        GeneratedFunctionWrapper fetch = new GeneratedFunctionWrapper<>(new LookupTestPieces.AsyncFetcher());
        DataStructureConverter<RowData, Object> converter = (DataStructureConverter) DataStructureConverters.getConverter(RIGHT);
        GeneratedResultFutureWrapper<TableFunctionResultFuture<RowData>> future = new GeneratedResultFutureWrapper<>(
                residual ? new LookupTestPieces.AsyncResidual() : new LookupTestPieces.AsyncNoResidual());
        RowDataSerializer right = new RowDataSerializer(PROBE);
        return calc
                ? new AsyncLookupJoinWithCalcRunner(fetch, converter, new GeneratedFunctionWrapper<>(new LookupTestPieces.Calc()),
                        future, preFilter(preFilter), right, left, CAPACITY)
                : new AsyncLookupJoinRunner(fetch, converter, future, preFilter(preFilter), right, left, CAPACITY);
    }

    static StreamOperatorFactory<RowData> flinkFactory(
            Mode mode, boolean left, boolean preFilter, boolean calc, boolean residual, long timeoutMs) {
        switch (mode) {
            case SYNC:
            case FETCHING:
                return SimpleOperatorFactory.of(new ProcessOperator<>(
                        syncRunner(left, preFilter, calc, residual, new LookupTestPieces.Fetcher())));
            default:
                return new AsyncWaitOperatorFactory<>(asyncRunner(left, preFilter, calc, residual), timeoutMs, CAPACITY,
                        mode == Mode.ASYNC_ORDERED ? AsyncDataStream.OutputMode.ORDERED : AsyncDataStream.OutputMode.UNORDERED);
        }
    }

    static FerryLookupJoinOperator ferryOperator(
            Mode mode, boolean left, boolean preFilter, boolean calc, boolean residual, long timeoutMs, int batchSize) {
        LookupJoinBatch batch;
        switch (mode) {
            case SYNC:
                batch = new SyncLookupBatch(syncRunner(left, preFilter, calc, residual, new LookupTestPieces.Fetcher()));
                break;
            case FETCHING:
                batch = new FetchingLookupBatch(syncRunner(left, preFilter, calc, residual, new LookupTestPieces.Fetcher()),
                        new LookupKeys(new int[] {0}, new int[] {0}, new LogicalType[] {new IntType()}, new Object[] {null}),
                        new PerKeyFetcher());
                break;
            default:
                batch = new AsyncLookupBatch(asyncRunner(left, preFilter, calc, residual), timeoutMs, CAPACITY,
                        mode == Mode.ASYNC_ORDERED ? AsyncDataStream.OutputMode.ORDERED : AsyncDataStream.OutputMode.UNORDERED);
        }
        return new FerryLookupJoinOperator(batch, Batching.of(batchSize, 1000), "test lookup join");
    }

    /** A batch fetcher over the retrying lookup function, once per key row. */
    static final class RetryingPerKeyFetcher implements BatchFetcher {
        private transient LookupFunction lookup;

        @Override
        public void open(RuntimeContext context) throws Exception {
            lookup = LookupTestPieces.retrying();
            lookup.open(null);
        }

        @Override
        public List<List<RowData>> fetch(List<RowData> keyRows) throws Exception {
            List<List<RowData>> out = new ArrayList<>();
            for (RowData key : keyRows) {
                var rows = lookup.lookup(key);
                out.add(rows == null ? null : new ArrayList<>(rows));
            }
            return out;
        }
    }

    /**
     * The LOOKUP hint's lookup_miss retry lives in Flink's lookup function
     * (RetryableLookupFunctionDelegator): the same rows through Ferry's sync and batched-fetch forms.
     */
    @Test
    void lookupMissRetry() throws Exception {
        List<Object> input = probeStream(new Random(11), 80, false);
        List<String> flink = run(SimpleOperatorFactory.of(new ProcessOperator<>(
                syncRunner(true, false, false, false, new LookupTestPieces.RetryingFetcher()))), input, false);
        List<String> sync = run(SimpleOperatorFactory.of(new FerryLookupJoinOperator(new SyncLookupBatch(
                syncRunner(true, false, false, false, new LookupTestPieces.RetryingFetcher())), Batching.of(6, 1000), "t")),
                input, false);
        List<String> fetching = run(SimpleOperatorFactory.of(new FerryLookupJoinOperator(new FetchingLookupBatch(
                syncRunner(true, false, false, false, new LookupTestPieces.RetryingFetcher()),
                new LookupKeys(new int[] {0}, new int[] {0}, new LogicalType[] {new IntType()}, new Object[] {null}),
                new RetryingPerKeyFetcher()), Batching.of(6, 1000), "t")), input, false);
        assertEquals(flink, sync);
        assertEquals(flink, fetching);
        // the first probe of key 3 gets its rows after two empty answers and two retries
        assertTrue(flink.stream().anyMatch(r -> r.contains(",3,Jark)")), flink.toString());
    }

    /** A batch fetcher that calls the connector's LookupFunction once per key row, as Flink's fetcher does. */
    static final class PerKeyFetcher implements BatchFetcher {
        private final LookupTestPieces.DimLookup lookup = new LookupTestPieces.DimLookup();

        @Override
        public List<List<RowData>> fetch(List<RowData> keyRows) {
            List<List<RowData>> out = new ArrayList<>();
            for (RowData key : keyRows) {
                var rows = lookup.lookup(key);
                out.add(rows == null ? null : new ArrayList<>(rows));
            }
            return out;
        }
    }

    @SuppressWarnings("unchecked")
    static OneInputStreamOperatorTestHarness<RowData, RowData> harness(StreamOperatorFactory<RowData> factory, boolean reuse)
            throws Exception {
        OneInputStreamOperatorTestHarness<RowData, RowData> h = factory instanceof SimpleOperatorFactory
                ? new OneInputStreamOperatorTestHarness<>(
                        (OneInputStreamOperator<RowData, RowData>) ((SimpleOperatorFactory<RowData>) factory).getOperator(),
                        PROBE_SERIALIZER)
                : new OneInputStreamOperatorTestHarness<>((OneInputStreamOperatorFactory<RowData, RowData>) factory, PROBE_SERIALIZER);
        if (reuse) {
            h.getExecutionConfig().enableObjectReuse();
        }
        h.getEnvironment().setExpectedExternalFailureCause(Throwable.class);
        h.setup(new RowDataSerializer(OUT));
        return h;
    }

    @SuppressWarnings("unchecked")
    static List<String> run(StreamOperatorFactory<RowData> factory, List<Object> input, boolean reuse) throws Exception {
        OneInputStreamOperatorTestHarness<RowData, RowData> h = harness(factory, reuse);
        h.open();
        feed(h, input);
        h.endInput();
        List<String> out = describe(h.getOutput());
        h.close();
        assertFalse(h.getEnvironment().getActualExternalFailureCause().isPresent());
        return out;
    }

    @SuppressWarnings("unchecked")
    static void feed(OneInputStreamOperatorTestHarness<RowData, RowData> h, List<Object> input) throws Exception {
        for (Object e : input) {
            if (e instanceof Watermark) {
                h.processWatermark((Watermark) e);
            } else {
                // a fresh row each time: the harness hands the operator the object itself
                StreamRecord<RowData> r = (StreamRecord<RowData>) e;
                RowData copy = PROBE_SERIALIZER.copy(r.getValue());
                h.processElement(r.hasTimestamp() ? new StreamRecord<>(copy, r.getTimestamp()) : new StreamRecord<>(copy));
            }
        }
    }

    @SuppressWarnings("unchecked")
    static List<String> describe(Iterable<Object> output) {
        List<String> out = new ArrayList<>();
        RowData.FieldGetter[] getters = new RowData.FieldGetter[OUT.length];
        for (int i = 0; i < OUT.length; i++) {
            getters[i] = RowData.createFieldGetter(OUT[i], i);
        }
        for (Object o : output) {
            if (o instanceof Watermark) {
                out.add("W" + ((Watermark) o).getTimestamp());
                continue;
            }
            StreamRecord<RowData> r = (StreamRecord<RowData>) o;
            StringBuilder b = new StringBuilder(r.getValue().getRowKind().shortString()).append('(');
            for (int i = 0; i < getters.length; i++) {
                b.append(i == 0 ? "" : ",").append(getters[i].getFieldOrNull(r.getValue()));
            }
            out.add(b.append(")@").append(r.hasTimestamp() ? r.getTimestamp() : "-").toString());
        }
        return out;
    }

    /** The unordered output mode's freedom: any order between two watermarks. */
    static List<String> sortedWithinWatermarks(List<String> rows) {
        List<String> out = new ArrayList<>();
        List<String> segment = new ArrayList<>();
        for (String r : rows) {
            if (r.startsWith("W")) {
                Collections.sort(segment);
                out.addAll(segment);
                segment.clear();
                out.add(r);
            } else {
                segment.add(r);
            }
        }
        Collections.sort(segment);
        out.addAll(segment);
        return out;
    }

    /**
     * A failing lookup: the same exception as Flink's (async: AsyncWaitOperator's wrapper); async
     * and batched fetch emit nothing of the failed batch (late completions included), sync emits
     * what Flink's runner emitted before the failing row.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Mode.class)
    void failingRequest(Mode mode) throws Exception {
        List<Object> input = probeStream(new Random(5), 20, true);
        // Flink's
        OneInputStreamOperatorTestHarness<RowData, RowData> flink = harness(flinkFactory(mode, true, false, false, false, 0), false);
        flink.open();
        Throwable flinkError = null;
        try {
            feed(flink, input);
            flink.endInput();
            flinkError = flink.getEnvironment().getActualExternalFailureCause().orElse(null);
        } catch (Exception e) {
            flinkError = e;
        }
        // Ferry's: batches of 5, the failing row (18th) in the last batch
        OneInputStreamOperatorTestHarness<RowData, RowData> ferry =
                harness(SimpleOperatorFactory.of(ferryOperator(mode, true, false, false, false, 0, 5)), false);
        ferry.open();
        Throwable ferryError = null;
        int before = -1;
        try {
            for (Object e : input) {
                before = ferry.getOutput().size();
                feed(ferry, List.of(e));
            }
            before = ferry.getOutput().size();
            ferry.endInput();
        } catch (Exception e) {
            ferryError = e;
        }
        assertTrue(flinkError != null && ferryError != null, flinkError + " / " + ferryError);
        assertEquals(flinkError.getClass(), ferryError.getClass());
        assertEquals(flinkError.getMessage(), ferryError.getMessage());
        assertEquals(String.valueOf(flinkError.getCause()), String.valueOf(ferryError.getCause()));
        if (mode == Mode.SYNC) {
            // Flink's runner per row: the batch's rows before the failing one are out, as in Flink
            assertEquals(describe(flink.getOutput()), describe(ferry.getOutput()));
            before = ferry.getOutput().size();
        } else {
            assertEquals(before, ferry.getOutput().size(), "rows of the failed batch were emitted");
        }
        Thread.sleep(30);
        assertEquals(before, ferry.getOutput().size(), "a late result was emitted");
        if (mode == Mode.ASYNC_ORDERED || mode == Mode.ASYNC_UNORDERED) {
            assertTrue(ferryError.getMessage().startsWith("Could not complete the stream element: Record @"), ferryError.getMessage());
        }
        closeQuietly(flink);
        closeQuietly(ferry);
    }

    /** A request that never completes: Flink's timeout callback at the deadline, Flink's exception. */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = Mode.class, names = {"ASYNC_ORDERED", "ASYNC_UNORDERED"})
    void timeout(Mode mode) throws Exception {
        List<Object> input = new ArrayList<>(probeStream(new Random(9), 6, false));
        input.add(new StreamRecord<>(GenericRowData.of(LookupTestPieces.HANGING_KEY, StringData.fromString("h")), 77L));
        long timeoutMs = 150;
        OneInputStreamOperatorTestHarness<RowData, RowData> flink = harness(flinkFactory(mode, true, false, false, false, timeoutMs), false);
        flink.open();
        feed(flink, input);
        Thread.sleep(100); // the other requests complete: only the hanging one times out
        flink.setProcessingTime(timeoutMs + 1);
        Throwable flinkError = flink.getEnvironment().getActualExternalFailureCause().orElseThrow();

        OneInputStreamOperatorTestHarness<RowData, RowData> ferry =
                harness(SimpleOperatorFactory.of(ferryOperator(mode, true, false, false, false, timeoutMs, 100)), false);
        ferry.open();
        feed(ferry, input);
        long start = System.nanoTime();
        Exception ferryError = assertThrows(Exception.class, ferry::endInput);
        long waitedMs = (System.nanoTime() - start) / 1_000_000;
        assertTrue(waitedMs >= timeoutMs - 5, "timed out after " + waitedMs + " ms");
        assertEquals(flinkError.getMessage(), ferryError.getMessage());
        assertInstanceOf(TimeoutException.class, ferryError.getCause());
        assertEquals(flinkError.getCause().getMessage(), ferryError.getCause().getMessage());
        assertEquals(0, ferry.getOutput().size());
        closeQuietly(flink);
        closeQuietly(ferry);
    }

    /** A function whose open fails is closed at once, its close's exception suppressed into the first; not closed twice. */
    @Test
    void closeAfterFailedOpen() throws Exception {
        OneInputStreamOperatorTestHarness<RowData, RowData> flink = harness(SimpleOperatorFactory.of(new ProcessOperator<>(
                syncRunner(true, false, false, false, new LookupTestPieces.FailingFetcher()))), false);
        Exception flinkError = assertThrows(Exception.class, flink::open);
        int closedBefore = LookupTestPieces.Fetcher.CLOSED.get();
        OneInputStreamOperatorTestHarness<RowData, RowData> ferry = harness(SimpleOperatorFactory.of(new FerryLookupJoinOperator(
                new SyncLookupBatch(syncRunner(true, false, false, false, new LookupTestPieces.FailingFetcher())),
                Batching.of(4, 1000), "t")), false);
        Exception ferryError = assertThrows(Exception.class, ferry::open);
        assertEquals(flinkError.getMessage(), ferryError.getMessage());
        assertEquals(1, LookupTestPieces.Fetcher.CLOSED.get() - closedBefore, "closed once after the failed open");
        assertEquals(1, ferryError.getSuppressed().length);
        assertEquals("fetcher close failed", ferryError.getSuppressed()[0].getMessage());
        closeQuietly(ferry);
        assertEquals(1, LookupTestPieces.Fetcher.CLOSED.get() - closedBefore, "closed twice");
    }

    /** The requests of a batch overlap, at most the capacity at a time. */
    @Test
    void asyncRequestsOverlapUpToCapacity() throws Exception {
        List<Object> input = new ArrayList<>();
        for (int i = 0; i < 60; i++) {
            input.add(new StreamRecord<>(GenericRowData.of(i % 2 == 0 ? 3 : 6, StringData.fromString("p" + i)), i));
        }
        LookupTestPieces.AsyncFetcher.MAX_IN_FLIGHT.set(0);
        List<String> ferry = run(SimpleOperatorFactory.of(ferryOperator(Mode.ASYNC_ORDERED, false, false, false, false, 0, 60)),
                input, false);
        int max = LookupTestPieces.AsyncFetcher.MAX_IN_FLIGHT.get();
        assertTrue(max >= 2 && max <= CAPACITY, "most lookups in flight at once: " + max);
        assertEquals(run(flinkFactory(Mode.ASYNC_ORDERED, false, false, false, false, 0), input, false), ferry);
    }

    /**
     * An async function that completes every request at once except row 0's, which it completes
     * from another thread once no further request has come for 200 ms (10 s at most), noting the
     * rows invoked by then.
     */
    static final class HoldFirst extends AbstractRichFunction implements AsyncFunction<RowData, RowData> {
        static final List<Integer> INVOKED = Collections.synchronizedList(new ArrayList<>());
        static volatile List<Integer> invokedWhileFirstPending;

        @Override
        public void asyncInvoke(RowData in, ResultFuture<RowData> future) {
            int i = in.getInt(0);
            INVOKED.add(i);
            List<RowData> rows = List.of(GenericRowData.of(i, in.getString(1), i * 10, StringData.fromString("r" + i)));
            if (i != 0) {
                future.complete(rows);
                return;
            }
            Thread releaser = new Thread(() -> {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                int seen = -1;
                while (System.nanoTime() < deadline && INVOKED.size() != seen) {
                    seen = INVOKED.size();
                    try {
                        Thread.sleep(200);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
                synchronized (INVOKED) {
                    invokedWhileFirstPending = new ArrayList<>(INVOKED);
                }
                future.complete(rows);
            }, "hold-first releaser");
            releaser.setDaemon(true);
            releaser.start();
        }
    }

    /**
     * Which requests overlap, as Flink's AsyncWaitOperator has them: the ordered queue keeps a
     * completed request until the ones before it completed, so while the first request hangs only
     * {@code capacity} rows are invoked; the unordered queue lets the completed ones go. (That
     * order is the order in which lookups and their retries reach the connector.)
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(value = Mode.class, names = {"ASYNC_ORDERED", "ASYNC_UNORDERED"})
    void asyncQueueAsFlinks(Mode mode) throws Exception {
        AsyncDataStream.OutputMode outputMode =
                mode == Mode.ASYNC_ORDERED ? AsyncDataStream.OutputMode.ORDERED : AsyncDataStream.OutputMode.UNORDERED;
        List<Object> input = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            input.add(new StreamRecord<>(GenericRowData.of(i, StringData.fromString("p" + i)), i));
        }
        HoldFirst.INVOKED.clear();
        List<String> flink = run(new AsyncWaitOperatorFactory<>(new HoldFirst(), 0, CAPACITY, outputMode), input, false);
        List<Integer> flinkInvoked = HoldFirst.invokedWhileFirstPending;
        HoldFirst.INVOKED.clear();
        List<String> ferry = run(SimpleOperatorFactory.of(new FerryLookupJoinOperator(
                new AsyncLookupBatch(new HoldFirst(), 0, CAPACITY, outputMode), Batching.of(100, 1000), "t")), input, false);
        List<Integer> ferryInvoked = HoldFirst.invokedWhileFirstPending;
        assertEquals(mode == Mode.ASYNC_ORDERED ? List.of(0, 1, 2) : List.of(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11), flinkInvoked);
        assertEquals(flinkInvoked, ferryInvoked);
        assertEquals(12, flink.size());
        if (mode == Mode.ASYNC_UNORDERED) {
            flink = sortedWithinWatermarks(flink);
            ferry = sortedWithinWatermarks(ferry);
        }
        assertEquals(flink, ferry);
    }

    /** Nothing is held across a checkpoint barrier: the pending batch runs before it. */
    @Test
    void barrierFlushes() throws Exception {
        OneInputStreamOperatorTestHarness<RowData, RowData> ferry =
                harness(SimpleOperatorFactory.of(ferryOperator(Mode.ASYNC_ORDERED, true, false, false, false, 0, 100)), false);
        ferry.open();
        feed(ferry, probeStream(new Random(3), 10, false).stream().filter(e -> !(e instanceof Watermark)).toList());
        assertEquals(0, ferry.getOutput().size());
        ferry.prepareSnapshotPreBarrier(1);
        assertTrue(ferry.getOutput().size() >= 10);
        ferry.close();
    }

    private static void closeQuietly(OneInputStreamOperatorTestHarness<?, ?> h) {
        try {
            h.close();
        } catch (Exception ignored) {
            // the operator failed already
        }
    }
}
