package io.ferrystream.ferry.bench;

import io.ferrystream.ferry.arrow.ArrowRowDataReader;
import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.arrow.RowDataArrowWriter;
import io.ferrystream.ferry.kinds.groupaggregate.FerryGroupAggregateOperator;
import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateSpec;
import io.ferrystream.ferry.nativelib.NativeOperator;
import io.ferrystream.ferry.operators.NativeInputRow;

import org.apache.arrow.c.ArrowArray;
import org.apache.arrow.c.Data;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.RowType;

/**
 * Where a Ferry batch's time goes, per stage, without touching the operator: the batch loop of
 * {@link FerryGroupAggregateOperator} (processElement, processInput, emit of its base class) re-run step by step
 * with the same classes (NativeInputRow, RowDataArrowWriter, NativeOperator,
 * ArrowRowDataReader) on the spec Flink's planner gave the operator, a clock read between stages:
 *
 * <ol>
 *   <li>{@code write}: RowData to Arrow ({@code writer.write} per row, {@code finish}, and the
 *       {@code reset} after the call);
 *   <li>{@code native}: {@code NativeOperator.process}: the Java-side Arrow C Data export and
 *       import, the JNI crossing, and in Go the import, kernel and export;
 *   <li>{@code emit}: the operator's emit loop ({@code reader.load}, then per output row
 *       {@code reader.readBinary(i)} and {@code output.collect}) into the counting Output of the
 *       side-by-side bench;
 *   <li>{@code generic}: for comparison, the same loop with Flink's generic conversion, {@code
 *       RowDataSerializer.toBinaryRow(reader.read(i))}, which the operator used before it wrote
 *       BinaryRowData itself (timed on the same batches, alternately before and after {@code
 *       emit}, its rows dropped).
 * </ol>
 *
 * Also timed, in a pass of its own, as context and outside the operator: serializing each emitted
 * row with Flink's RowDataSerializer into a byte buffer, what the network writer does downstream
 * with every row when an exchange follows (Flink's own operator's rows pay it too).
 */
final class StageSplit {
    private StageSplit() {}

    static final String[] STAGES = {"write", "native", "emit", "generic", "serialize"};

    /**
     * Median nanoseconds per input row of each stage (serialize: from its own pass) and of the
     * operator's own path: write + native + emit.
     */
    record Result(int keys, int rows, int batch, double[] nsPerRow, double totalNsPerRow, long outputs, double oneRowCallNs) {}

    /** Calls of one row each in the per-call measurement. */
    private static final java.lang.management.ThreadMXBean CPU = java.lang.management.ManagementFactory.getThreadMXBean();

    static final int ONE_ROW_CALLS = Integer.getInteger("bench.onerow.calls", 100_000);

    /**
     * The fixed cost of a call from Java: {@code rounds} rounds of {@code calls} batches of one
     * row each (live keys; two output rows per call): write, process, load, reset. Returns the
     * last round's nanoseconds per call. Compare with the C ABI at batch 1 (./build.sh perf).
     */
    static double oneRowCalls(RowDataArrowWriter writer, NativeInputRow projected, NativeOperator nativeOp,
            VectorSchemaRoot outRoot, ArrowRowDataReader reader, RowData[] data, int calls, int rounds) {
        double ns = Double.NaN;
        long sink = 0;
        for (int round = 0; round < rounds; round++) {
            long t0 = System.nanoTime();
            for (int i = 0; i < calls; i++) {
                projected.writeTo(writer, data[i % data.length]);
                writer.finish();
                if (nativeOp.process(0, writer.root(), 0, outRoot, c -> { }) > 0) {
                    reader.load();
                    sink += reader.rowCount();
                }
                writer.reset();
            }
            ns = (double) (System.nanoTime() - t0) / calls;
            Bench.log("one-row batches, round %d: %.0f ns per call (%d output rows)", round + 1, ns, sink);
        }
        return ns;
    }

    /**
     * Arrow Java's C Data Interface alone, no Go: {@code calls} times, export a one-row batch of
     * the operator's input schema ({@code Data.exportVectorSchemaRoot}) and import it back into a
     * root ({@code Data.importIntoVectorSchemaRoot}, which also releases the previous import).
     * Returns {export, import} nanoseconds per call of the last round.
     */
    static double[] javaArrowRoundTrip(GroupAggregateSpec spec, RowData row, int calls, int rounds) {
        double[] ns = {Double.NaN, Double.NaN};
        try (BufferAllocator allocator = new RootAllocator(Long.MAX_VALUE);
                RowDataArrowWriter writer = RowDataArrowWriter.create(spec.inputType(), allocator, 1024);
                VectorSchemaRoot back = VectorSchemaRoot.create(ArrowTypes.schemaOf(spec.inputType()), allocator);
                ArrowArray array = ArrowArray.allocateNew(allocator)) {
            writer.write(new NativeInputRow(spec.input(0), false).of(row));
            writer.finish();
            for (int round = 0; round < rounds; round++) {
                long export = 0;
                long imp = 0;
                for (int i = 0; i < calls; i++) {
                    long t0 = System.nanoTime();
                    Data.exportVectorSchemaRoot(allocator, writer.root(), null, array);
                    long t1 = System.nanoTime();
                    Data.importIntoVectorSchemaRoot(allocator, array, back, null, false);
                    long t2 = System.nanoTime();
                    export += t1 - t0;
                    imp += t2 - t1;
                }
                ns = new double[] {(double) export / calls, (double) imp / calls};
                Bench.log("Java-only Arrow round trip, round %d: export %.0f ns, import %.0f ns per call", round + 1, ns[0], ns[1]);
            }
        }
        return ns;
    }

    /** Only the one-row-batch calls (after the prefill): for profiling the per-call cost. */
    static double oneRowOnly(int keys, int calls, int rounds) throws Exception {
        OperatorBench.Planned planned = OperatorBench.plan(true, 1024);
        GroupAggregateSpec spec = ((FerryGroupAggregateOperator) planned.operator()).spec();
        RowData[] prefill = BenchBids.prefill(keys);
        RowData[] data = BenchBids.generate(keys, Math.min(calls, 1_000_000));
        try (BufferAllocator allocator = new RootAllocator(Long.MAX_VALUE);
                NativeOperator nativeOp = NativeOperator.open(
                        spec.toJson(OperatorBench.MAX_PARALLELISM, 0, OperatorBench.MAX_PARALLELISM - 1),
                        ArrowTypes.schemaOf(spec.inputType()), allocator);
                RowDataArrowWriter writer = RowDataArrowWriter.create(spec.inputType(), allocator, 1024);
                VectorSchemaRoot outRoot = VectorSchemaRoot.create(nativeOp.outputSchema(), allocator)) {
            ArrowRowDataReader reader = new ArrowRowDataReader(outRoot);
            NativeInputRow projected = new NativeInputRow(spec.input(0), false);
            for (int from = 0; from < prefill.length; from += 1024) {
                for (int i = from; i < Math.min(prefill.length, from + 1024); i++) {
                    projected.writeTo(writer, prefill[i]);
                }
                writer.finish();
                nativeOp.process(0, writer.root(), 0, outRoot, c -> { });
                writer.reset();
            }
            return oneRowCalls(writer, projected, nativeOp, outRoot, reader, data, calls, rounds);
        }
    }

    static Result run(int keys, int rows, int reps, int batchSize) throws Exception {
        OperatorBench.Planned planned = OperatorBench.plan(true, batchSize);
        if (!(planned.operator() instanceof FerryGroupAggregateOperator)) {
            throw new IllegalStateException("not a Ferry operator: " + planned.operator());
        }
        GroupAggregateSpec spec = ((FerryGroupAggregateOperator) planned.operator()).spec();
        RowData[] prefill = BenchBids.prefill(keys);
        RowData[] data = BenchBids.generate(keys, rows);
        RowType outType = planned.outputType();
        RowDataSerializer generic = new RowDataSerializer(outType);
        RowDataSerializer serializer = new RowDataSerializer(outType);
        DataOutputSerializer buffer = new DataOutputSerializer(1 << 20);
        OperatorBench.CountingOutput output = new OperatorBench.CountingOutput();
        StreamRecord<RowData> outRecord = new StreamRecord<>(null);
        double[][] perRep = new double[reps][STAGES.length + 1];
        double[][] cpuPerRep = new double[reps][2];
        long outputs = 0;
        double serializeNs = Double.NaN;
        double oneRowCallNs = Double.NaN;
        try (BufferAllocator allocator = new RootAllocator(Long.MAX_VALUE);
                NativeOperator nativeOp = NativeOperator.open(
                        spec.toJson(OperatorBench.MAX_PARALLELISM, 0, OperatorBench.MAX_PARALLELISM - 1),
                        ArrowTypes.schemaOf(spec.inputType()), allocator);
                RowDataArrowWriter writer = RowDataArrowWriter.create(spec.inputType(), allocator, batchSize);
                VectorSchemaRoot outRoot = VectorSchemaRoot.create(nativeOp.outputSchema(), allocator)) {
            ArrowRowDataReader reader = new ArrowRowDataReader(outRoot);
            NativeInputRow projected = new NativeInputRow(spec.input(0), false);
            long sink = 0;
            // Two untimed passes (the prefill, then the data), reps timed passes, and one more
            // pass that also serializes the output (kept apart: it evicts the kernel's cache lines).
            for (int pass = -2; pass <= reps; pass++) {
                RowData[] rows1 = pass == -2 ? prefill : data;
                boolean serialize = pass == reps;
                long[] t = new long[STAGES.length];
                long cpuWrite = 0; // thread CPU time of the write and emit stages (ns), steadier than
                long cpuEmit = 0; // the wall clock on a loaded machine
                long outBefore = output.records;
                long start = System.nanoTime();
                for (int from = 0; from < rows1.length; from += batchSize) {
                    int to = Math.min(rows1.length, from + batchSize);
                    long ca = CPU.getCurrentThreadCpuTime();
                    long a = System.nanoTime();
                    for (int i = from; i < to; i++) {
                        projected.writeTo(writer, rows1[i]);
                    }
                    writer.finish();
                    long b = System.nanoTime();
                    cpuWrite += CPU.getCurrentThreadCpuTime() - ca;
                    boolean produced = nativeOp.process(0, writer.root(), 0, outRoot, c -> { }) > 0;
                    long c = System.nanoTime();
                    writer.reset();
                    long d = System.nanoTime();
                    if (!produced) {
                        t[0] += b - a + d - c;
                        t[1] += c - b;
                        continue;
                    }
                    boolean genericFirst = (from / batchSize & 1) == 1;
                    long g0 = 0;
                    long g1 = 0;
                    if (genericFirst) {
                        g0 = System.nanoTime();
                        sink += genericRows(reader, generic);
                        g1 = System.nanoTime();
                    }
                    long ce = CPU.getCurrentThreadCpuTime();
                    long e = System.nanoTime();
                    reader.load();
                    int n = reader.rowCount();
                    for (int i = 0; i < n; i++) {
                        output.collect(outRecord.replace(reader.readBinary(i)));
                    }
                    long f = System.nanoTime();
                    cpuEmit += CPU.getCurrentThreadCpuTime() - ce;
                    if (!genericFirst) {
                        g0 = System.nanoTime();
                        sink += genericRows(reader, generic);
                        g1 = System.nanoTime();
                    }
                    long h0 = System.nanoTime();
                    if (serialize) {
                        buffer.clear();
                        for (int i = 0; i < n; i++) {
                            serializer.serialize(reader.readBinary(i), buffer);
                        }
                    }
                    long h1 = System.nanoTime();
                    t[0] += b - a + d - c;
                    t[1] += c - b;
                    t[2] += f - e;
                    t[3] += g1 - g0;
                    t[4] += h1 - h0;
                }
                long end = System.nanoTime();
                if (serialize) {
                    serializeNs = (double) t[4] / rows1.length;
                    Bench.log("split keys %-8s serializing the output: %.0f ns/row", Bench.count(keys), serializeNs);
                } else if (pass >= 0) {
                    for (int s = 0; s < STAGES.length; s++) {
                        perRep[pass][s] = (double) t[s] / rows1.length;
                    }
                    perRep[pass][STAGES.length] = (double) (t[0] + t[1] + t[2]) / rows1.length;
                    outputs = output.records - outBefore;
                    cpuPerRep[pass][0] = (double) cpuWrite / rows1.length;
                    cpuPerRep[pass][1] = (double) cpuEmit / rows1.length;
                    Bench.log("split keys %-8s rep %d: write %.0f, native %.0f, emit %.0f, generic %.0f ns/row;"
                                    + " loop %.0f ns/row; thread CPU: write %.0f, emit %.0f ns/row",
                            Bench.count(keys), pass + 1, perRep[pass][0], perRep[pass][1], perRep[pass][2],
                            perRep[pass][3], (double) (end - start) / rows1.length, cpuPerRep[pass][0],
                            cpuPerRep[pass][1]);
                }
            }
            oneRowCallNs = oneRowCalls(writer, projected, nativeOp, outRoot, reader, data,
                    ONE_ROW_CALLS, Integer.getInteger("bench.onerow.rounds", 2));
            Bench.log("split keys %-8s one-row batches: %.0f ns per call", Bench.count(keys), oneRowCallNs);
            if (sink == 42) {
                Bench.log("(sink %d)", sink); // keeps the generic conversions alive
            }
        }
        double[] med = new double[STAGES.length];
        for (int s = 0; s < STAGES.length; s++) {
            double[] v = new double[reps];
            for (int r = 0; r < reps; r++) {
                v[r] = perRep[r][s];
            }
            med[s] = Stats.median(v);
        }
        med[4] = serializeNs;
        double[] tot = new double[reps];
        double[] cpuWrite = new double[reps];
        double[] cpuEmit = new double[reps];
        for (int r = 0; r < reps; r++) {
            tot[r] = perRep[r][STAGES.length];
            cpuWrite[r] = cpuPerRep[r][0];
            cpuEmit[r] = cpuPerRep[r][1];
        }
        Bench.log("split keys %-8s median thread CPU: RowData->Arrow %.1f, emit %.1f ns per input row",
                Bench.count(keys), Stats.median(cpuWrite), Stats.median(cpuEmit));
        return new Result(keys, rows, batchSize, med, Stats.median(tot), outputs, oneRowCallNs);
    }

    /** The operator's former emit loop, rows converted by Flink's generic toBinaryRow and dropped. */
    private static long genericRows(ArrowRowDataReader reader, RowDataSerializer generic) {
        reader.load();
        long sink = 0;
        for (int i = 0, n = reader.rowCount(); i < n; i++) {
            sink += generic.toBinaryRow(reader.read(i)).getSizeInBytes();
        }
        return sink;
    }
}
