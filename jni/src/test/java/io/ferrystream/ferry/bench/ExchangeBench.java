package io.ferrystream.ferry.bench;

import io.ferrystream.ferry.arrow.ArrowRowDataReader;
import io.ferrystream.ferry.arrow.RowDataArrowWriter;
import io.ferrystream.ferry.exchange.FerryFrame;
import io.ferrystream.ferry.exchange.FerryFrameSerializer;
import io.ferrystream.ferry.exchange.FerryKeyGroupPartitioner;
import io.ferrystream.ferry.kinds.groupaggregate.GlobalGroupAggregateSpec;
import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateSpec;
import io.ferrystream.ferry.kinds.groupaggregate.LocalGroupAggregateSpec;
import io.ferrystream.ferry.nativelib.NativeOperator;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VarBinaryVector;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.flink.core.memory.DataInputDeserializer;
import org.apache.flink.core.memory.DataOutputSerializer;
import org.apache.flink.runtime.plugable.SerializationDelegate;
import org.apache.flink.runtime.state.KeyGroupRange;
import org.apache.flink.runtime.state.KeyGroupRangeAssignment;
import org.apache.flink.streaming.runtime.partitioner.KeyGroupStreamPartitioner;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.planner.plan.utils.KeySelectorUtil;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.function.Consumer;

/**
 * What the columnar exchange saves between the two halves of a two-phase aggregate: the same
 * bundles of input rows through Ferry's local aggregate, an exchange of {@value #PARALLELISM}
 * channels and one Ferry global aggregate per channel (owning its key groups), in one thread and
 * without Flink's network stack, once over Flink's row exchange and once over frames. The row
 * side does what a job does per partial row: Go's Arrow output read into {@code BinaryRowData},
 * Flink's {@code KeyGroupStreamPartitioner} over Flink's key selector, Flink's {@code
 * RowDataSerializer} out and back, and the row written to the global's Arrow batch; the frame side
 * does it per frame: the frame copied out of Go's output, {@link FerryKeyGroupPartitioner}, {@link
 * FerryFrameSerializer} out and back, the frame written to the global's batch. Both sides must end
 * with the same checksum of the globals' output rows, or the benchmark fails. Times are per
 * partial row (the exchange's Java work), per input row (the native calls, which include Go's
 * frame encoding and decoding) and for the whole pipeline.
 */
final class ExchangeBench {
    private ExchangeBench() {}

    static final int PARALLELISM = 2;
    static final int MAX_PARALLELISM = 128;
    static final int BUNDLE = 50_000;

    static final RowType INPUT = RowType.of(new LogicalType[] {new BigIntType(), new BigIntType()}, new String[] {"k", "price"});
    static final RowType PARTIAL = RowType.of(new LogicalType[] {new BigIntType(), new BigIntType(false), new BigIntType(),
            new BigIntType(), new BigIntType()}, new String[] {"k", "n", "s", "lo", "hi"});
    static final List<GroupAggregateSpec.Call> CALLS = List.of(
            new GroupAggregateSpec.Call("COUNT", new int[0], false, "n"),
            new GroupAggregateSpec.Call("SUM", new int[] {1}, false, "s"),
            new GroupAggregateSpec.Call("MIN", new int[] {1}, false, "lo"),
            new GroupAggregateSpec.Call("MAX", new int[] {1}, false, "hi"));
    static final LocalGroupAggregateSpec LOCAL = new LocalGroupAggregateSpec("exchange bench local", INPUT, new int[] {0}, CALLS, false);
    static final GlobalGroupAggregateSpec GLOBAL = new GlobalGroupAggregateSpec(
            "exchange bench global", PARTIAL, 1, INPUT, CALLS, false, -1, false, true, 0);

    /** One pass: nanoseconds per stage, the partial rows and frames exchanged, the output checksum. */
    record Pass(long localNs, long exchangeNs, long globalNs, long partials, long frames, long checksum, long outRows) {
        long totalNs() {
            return localNs + exchangeNs + globalNs;
        }
    }

    /** The input: bundles of {@link #BUNDLE} rows over {@code keys} uniform keys. */
    static List<List<RowData>> input(int keys, int rows) {
        Random r = new Random(keys);
        List<List<RowData>> bundles = new ArrayList<>();
        for (int at = 0; at < rows; at += BUNDLE) {
            List<RowData> b = new ArrayList<>(BUNDLE);
            for (int i = 0; i < BUNDLE; i++) {
                b.add(GenericRowData.of((long) r.nextInt(keys), (long) r.nextInt(1_000_000)));
            }
            bundles.add(b);
        }
        return bundles;
    }

    /** One pass of every bundle through local, exchange and globals; frames or rows. */
    static Pass pass(List<List<RowData>> bundles, boolean frames, BufferAllocator allocator) throws Exception {
        long[] ns = new long[3];
        long[] counts = new long[4]; // partial rows, frames, checksum, output rows
        List<NativeOperator> globals = new ArrayList<>();
        List<AutoCloseable> closing = new ArrayList<>();
        try {
            NativeOperator local = frames
                    ? LOCAL.forExchange(PARALLELISM).open(MAX_PARALLELISM, 0, MAX_PARALLELISM - 1, allocator)
                    : LOCAL.open(MAX_PARALLELISM, 0, MAX_PARALLELISM - 1, allocator);
            closing.add(local);
            GlobalGroupAggregateSpec global = frames ? GLOBAL.withFrames(Integer.MAX_VALUE) : GLOBAL;
            List<RowDataArrowWriter> toGlobal = new ArrayList<>();
            List<VectorSchemaRoot> globalOut = new ArrayList<>();
            for (int c = 0; c < PARALLELISM; c++) {
                KeyGroupRange range = KeyGroupRangeAssignment.computeKeyGroupRangeForOperatorIndex(MAX_PARALLELISM, PARALLELISM, c);
                NativeOperator g = global.open(MAX_PARALLELISM, range.getStartKeyGroup(), range.getEndKeyGroup(), allocator);
                globals.add(g);
                closing.add(g);
                RowDataArrowWriter w = RowDataArrowWriter.create(global.batchType(0), allocator, 1024);
                toGlobal.add(w);
                closing.add(w);
                VectorSchemaRoot out = VectorSchemaRoot.create(g.outputSchema(), allocator);
                globalOut.add(out);
                closing.add(out);
            }
            RowDataArrowWriter input = RowDataArrowWriter.create(INPUT, allocator, BUNDLE);
            closing.add(input);
            VectorSchemaRoot localOut = VectorSchemaRoot.create(local.outputSchema(), allocator);
            closing.add(localOut);

            ArrowRowDataReader partialReader = frames ? null : new ArrowRowDataReader(localOut, PARTIAL);
            KeyGroupStreamPartitioner<RowData, RowData> rowRouting = new KeyGroupStreamPartitioner<>(
                    KeySelectorUtil.getRowDataSelector(ExchangeBench.class.getClassLoader(), new int[] {0}, InternalTypeInfo.of(PARTIAL)),
                    MAX_PARALLELISM);
            rowRouting.setup(PARALLELISM);
            FerryKeyGroupPartitioner frameRouting = new FerryKeyGroupPartitioner(MAX_PARALLELISM);
            frameRouting.setup(PARALLELISM);
            RowDataSerializer rowSerializer = new RowDataSerializer(PARTIAL);
            SerializationDelegate<StreamRecord<RowData>> delegate = new SerializationDelegate<>(null);
            StreamRecord<RowData> record = new StreamRecord<>(null);
            DataOutputSerializer[] wire = new DataOutputSerializer[PARALLELISM];
            int[] records = new int[PARALLELISM];
            for (int c = 0; c < PARALLELISM; c++) {
                wire[c] = new DataOutputSerializer(1 << 20);
            }
            GenericRowData frameRow = new GenericRowData(1);
            long[] t = new long[1];

            // the local's output, routed and serialized: the sending half of the exchange
            Consumer<VectorSchemaRoot> send = chunk -> {
                long t0 = System.nanoTime();
                try {
                    if (frames) {
                        VarBinaryVector v = (VarBinaryVector) chunk.getVector(0);
                        for (int i = 0, n = chunk.getRowCount(); i < n; i++) {
                            FerryFrame f = new FerryFrame(v.get(i));
                            int c = frameRouting.selectChannel(frameDelegate(f));
                            FerryFrameSerializer.INSTANCE.serialize(f, wire[c]);
                            records[c]++;
                            counts[0] += f.rows();
                            counts[1]++;
                        }
                    } else {
                        partialReader.load();
                        for (int i = 0, n = partialReader.rowCount(); i < n; i++) {
                            RowData row = partialReader.readBinary(i);
                            delegate.setInstance(record.replace(row));
                            int c = rowRouting.selectChannel(delegate);
                            rowSerializer.serialize(row, wire[c]);
                            records[c]++;
                            counts[0]++;
                        }
                    }
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
                t[0] += System.nanoTime() - t0;
            };
            Consumer<VectorSchemaRoot> collect = out -> {
                ArrowRowDataReader r = new ArrowRowDataReader(out);
                r.load();
                for (int i = 0; i < r.rowCount(); i++) {
                    counts[2] += r.readBinary(i).hashCode() * 31L + r.rowKind(i).toByteValue();
                    counts[3]++;
                }
            };

            for (List<RowData> bundle : bundles) {
                long t0 = System.nanoTime();
                for (RowData row : bundle) {
                    input.write(row);
                }
                input.finish();
                t[0] = 0;
                local.process(0, input.root(), 0, localOut, send);
                input.reset();
                long t1 = System.nanoTime();
                ns[0] += t1 - t0 - t[0];
                ns[1] += t[0];
                for (int c = 0; c < PARALLELISM; c++) {
                    // the receiving half: records off the wire into the global's Arrow batch
                    long r0 = System.nanoTime();
                    DataInputDeserializer in = new DataInputDeserializer(wire[c].getSharedBuffer(), 0, wire[c].length());
                    RowDataArrowWriter w = toGlobal.get(c);
                    for (int i = 0; i < records[c]; i++) {
                        if (frames) {
                            frameRow.setField(0, FerryFrameSerializer.INSTANCE.deserialize(in).bytes());
                            w.write(frameRow);
                        } else {
                            w.write(rowSerializer.deserialize(in));
                        }
                    }
                    w.finish();
                    long r1 = System.nanoTime();
                    ns[1] += r1 - r0;
                    globals.get(c).process(0, w.root(), 0, globalOut.get(c), collect);
                    if (frames) {
                        globals.get(c).flush(0, globalOut.get(c), collect);
                    }
                    w.reset();
                    wire[c].clear();
                    records[c] = 0;
                    ns[2] += System.nanoTime() - r1;
                }
            }
        } finally {
            for (int i = closing.size() - 1; i >= 0; i--) {
                closing.get(i).close();
            }
        }
        return new Pass(ns[0], ns[1], ns[2], counts[0], counts[1], counts[2], counts[3]);
    }

    private static SerializationDelegate<StreamRecord<FerryFrame>> frameDelegate(FerryFrame f) {
        SerializationDelegate<StreamRecord<FerryFrame>> d = new SerializationDelegate<>(null);
        d.setInstance(new StreamRecord<>(f));
        return d;
    }

    /** Runs both sides at each key count and appends the table. */
    static void table(StringBuilder out, int[] keys, int rows, int reps, String commit) throws Exception {
        out.append(String.format(Locale.ROOT,
                "### The exchange between the two halves: Flink's rows against frames (%s input rows in bundles of %s,"
                        + " COUNT/SUM/MIN/MAX over BIGINT, %d channels, max parallelism %d; one thread, no network stack;"
                        + " median of %d passes after warm-up; commit %s)%n%n",
                Bench.count(rows), Bench.count(BUNDLE), PARALLELISM, MAX_PARALLELISM, reps, commit));
        out.append("| keys | partial rows per bundle | frames per bundle | exchange, rows: ns per partial row"
                + " | exchange, frames: ns per partial row | local call, rows / frames: ns per input row"
                + " | global calls, rows / frames: ns per partial row | whole, rows: M rows/s | whole, frames: M rows/s"
                + " | frames / rows | output checksum |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
        try (BufferAllocator allocator = new RootAllocator()) {
            for (int k : keys) {
                List<List<RowData>> bundles = input(k, rows);
                int n = bundles.size() * BUNDLE;
                List<Pass> rowPasses = new ArrayList<>();
                List<Pass> framePasses = new ArrayList<>();
                double prev = 0;
                // warm up until two consecutive passes of each side agree within 5 % (at most 10)
                for (int w = 0; w < 10; w++) {
                    double now = pass(bundles, false, allocator).totalNs() + pass(bundles, true, allocator).totalNs();
                    if (w > 0 && Math.abs(now - prev) / prev < 0.05) {
                        break;
                    }
                    prev = now;
                }
                for (int rep = 0; rep < reps; rep++) {
                    rowPasses.add(pass(bundles, false, allocator));
                    framePasses.add(pass(bundles, true, allocator));
                }
                Pass r0 = rowPasses.get(0);
                for (Pass p : rowPasses) {
                    check(p, r0, "rows");
                }
                for (Pass p : framePasses) {
                    check(p, r0, "frames");
                }
                Pass r = median(rowPasses);
                Pass f = median(framePasses);
                double partials = r.partials();
                Bench.log("exchange %s keys: rows %s, frames %s", Bench.count(k), r, f);
                out.append(String.format(Locale.ROOT, "| %s | %s | %.1f | %.1f | %.1f | %.1f / %.1f | %.1f / %.1f | %.2f | %.2f | %.2f× | %016x |%n",
                        Bench.count(k), Bench.count(r.partials() / bundles.size()), (double) f.frames() / bundles.size(),
                        r.exchangeNs() / partials, f.exchangeNs() / partials,
                        (double) r.localNs() / n, (double) f.localNs() / n,
                        r.globalNs() / partials, f.globalNs() / partials,
                        n * 1e3 / r.totalNs(), n * 1e3 / f.totalNs(), (double) r.totalNs() / f.totalNs(), r.checksum()));
            }
        }
        out.append('\n');
    }

    private static void check(Pass p, Pass want, String side) {
        if (p.checksum() != want.checksum() || p.outRows() != want.outRows() || p.partials() != want.partials()) {
            throw new IllegalStateException(String.format(Locale.ROOT,
                    "exchange bench: a %s pass ended with checksum %016x over %d rows (%d partial rows), the first row pass with"
                            + " %016x over %d (%d)", side, p.checksum(), p.outRows(), p.partials(), want.checksum(), want.outRows(),
                    want.partials()));
        }
    }

    private static Pass median(List<Pass> passes) {
        List<Pass> sorted = new ArrayList<>(passes);
        sorted.sort((a, b) -> Long.compare(a.totalNs(), b.totalNs()));
        return sorted.get(sorted.size() / 2);
    }
}
