package io.ferrystream.ferry.bench;

import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.arrow.RowDataArrowWriter;
import io.ferrystream.ferry.kinds.groupaggregate.FerryGroupAggregateOperator;
import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateSpec;
import io.ferrystream.ferry.nativelib.NativeOperator;
import io.ferrystream.ferry.operators.NativeInputRow;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;
import org.apache.flink.table.data.RowData;

/**
 * The cost of one {@link NativeOperator#process} call from Java ({@code bench-jvm call-cost}):
 * the GROUP BY spec the planner builds for the bench query, {@code keys} live keys, input batches
 * written beforehand (a ring of roots, so only the call is timed: export, JNI, Go, output load),
 * of one row (the fixed cost per call) and of 1024 rows (the cost per row). Two operators side by
 * side, interleaved pass by pass (order alternating): batches moved by Arrow Java's C Data
 * exporter and importer ({@link NativeOperator#ARROW_JAVA_CDATA_PROPERTY}) and by Ferry's own
 * reusable export and chunk loading. Warm-up passes until the JIT settles, then the median of
 * {@code reps} passes.
 */
final class CallCost {
    private CallCost() {}

    static final int WARMUP_PASSES = 5;
    static final int RING = 64;

    /** Median and range of µs per call, per batch size and variant ({@code [batch][variant]}). */
    record Result(int[] batches, String[] variants, double[][][] usPerCall) {}

    static Result run(int keys, int reps) throws Exception {
        OperatorBench.Planned planned = OperatorBench.plan(true, 1024);
        GroupAggregateSpec spec = ((FerryGroupAggregateOperator) planned.operator()).spec();
        String json = spec.toJson(OperatorBench.MAX_PARALLELISM, 0, OperatorBench.MAX_PARALLELISM - 1);
        int[] batches = {1, 1024};
        String[] variants = {"Arrow Java C Data", "Ferry's export and chunk load"};
        double[][][] us = new double[batches.length][variants.length][];
        RowData[] prefill = BenchBids.prefill(keys);
        NativeInputRow projected = new NativeInputRow(spec.input(0), false);
        try (BufferAllocator allocator = new RootAllocator(Long.MAX_VALUE)) {
            List<AutoCloseable> open = new ArrayList<>();
            try {
                NativeOperator[] ops = new NativeOperator[variants.length];
                VectorSchemaRoot[] outs = new VectorSchemaRoot[variants.length];
                for (int v = 0; v < variants.length; v++) {
                    System.setProperty(NativeOperator.ARROW_JAVA_CDATA_PROPERTY, Boolean.toString(v == 0));
                    ops[v] = NativeOperator.open(json, ArrowTypes.schemaOf(spec.inputType()), allocator);
                    open.add(ops[v]);
                    outs[v] = VectorSchemaRoot.create(ops[v].outputSchema(), allocator);
                    open.add(outs[v]);
                    try (RowDataArrowWriter w = RowDataArrowWriter.create(spec.inputType(), allocator, 1024)) {
                        for (int from = 0; from < prefill.length; from += 1024) { // every key live
                            for (int i = from; i < Math.min(prefill.length, from + 1024); i++) {
                                w.write(projected.of(prefill[i]));
                            }
                            w.finish();
                            ops[v].process(0, w.root(), 0, outs[v], c -> { });
                            w.reset();
                        }
                    }
                }
                System.clearProperty(NativeOperator.ARROW_JAVA_CDATA_PROPERTY);
                for (int b = 0; b < batches.length; b++) {
                    RowData[] data = BenchBids.generate(keys, batches[b] * RING);
                    VectorSchemaRoot[] ring = new VectorSchemaRoot[RING];
                    for (int r = 0; r < RING; r++) {
                        RowDataArrowWriter w = RowDataArrowWriter.create(spec.inputType(), allocator, batches[b]);
                        open.add(w);
                        for (int i = r * batches[b]; i < (r + 1) * batches[b]; i++) {
                            w.write(projected.of(data[i]));
                        }
                        w.finish();
                        ring[r] = w.root();
                    }
                    int calls = batches[b] == 1 ? 50_000 : 400;
                    double[][] passes = new double[variants.length][reps];
                    for (int p = -WARMUP_PASSES; p < reps; p++) {
                        for (int k = 0; k < variants.length; k++) {
                            int v = (p & 1) == 0 ? k : variants.length - 1 - k;
                            double t = calls(ops[v], ring, outs[v], calls) / 1e3;
                            if (p >= 0) {
                                passes[v][p] = t;
                                Bench.log("call-cost batch %4d %-30s pass %d: %.2f µs per call", batches[b],
                                        variants[v], p + 1, t);
                            }
                        }
                    }
                    for (int v = 0; v < variants.length; v++) {
                        us[b][v] = new double[] {Stats.median(passes[v]), Stats.min(passes[v]), Stats.max(passes[v])};
                    }
                }
            } finally {
                for (int i = open.size() - 1; i >= 0; i--) {
                    open.get(i).close();
                }
            }
        }
        return new Result(batches, variants, us);
    }

    /** {@code calls} calls over the ring of batches; nanoseconds per call. */
    private static double calls(NativeOperator op, VectorSchemaRoot[] ring, VectorSchemaRoot out, int calls) {
        long t0 = System.nanoTime();
        long rows = 0;
        for (int i = 0; i < calls; i++) {
            if (op.process(0, ring[i % ring.length], 0, out, c -> { }) > 0) {
                rows += out.getRowCount();
            }
        }
        long ns = System.nanoTime() - t0;
        if (rows == 0) {
            throw new IllegalStateException("no output");
        }
        return (double) ns / calls;
    }

    static void table(StringBuilder out, int keys, int reps) throws Exception {
        Result r = run(keys, reps);
        out.append(String.format(Locale.ROOT,
                "### One call from Java (NativeOperator.process, GROUP BY spec of the bench query, %s live keys;"
                        + " median of %d interleaved passes after %d warm-up passes; min–max)%n%n",
                Bench.count(keys), reps, WARMUP_PASSES));
        out.append("| batch rows |");
        StringBuilder rule = new StringBuilder("|---:|");
        for (String v : r.variants()) {
            out.append(' ').append(v).append(": µs per call | ns per row |");
            rule.append("---:|---:|");
        }
        out.append('\n').append(rule).append('\n');
        for (int b = 0; b < r.batches().length; b++) {
            int rows = r.batches()[b];
            out.append("| ").append(rows).append(" |");
            for (int v = 0; v < r.variants().length; v++) {
                double[] m = r.usPerCall()[b][v];
                out.append(String.format(Locale.ROOT, " %.2f (%.2f–%.2f) | %.0f |", m[0], m[1], m[2], m[0] * 1e3 / rows));
            }
            out.append('\n');
        }
        out.append('\n');
    }
}
