package io.ferrystream.ferry.bench;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.bench.OperatorBench.CountingOutput;
import io.ferrystream.ferry.bench.OperatorBench.FieldReader;
import io.ferrystream.ferry.bench.OperatorBench.Pass;
import io.ferrystream.ferry.bench.OperatorBench.Variant;
import io.ferrystream.ferry.kinds.deduplicate.DeduplicateSpec;
import io.ferrystream.ferry.kinds.topn.TopNSpec;
import io.ferrystream.ferry.operators.AbstractNativeOperator;
import io.ferrystream.ferry.operators.HarnessMemory;
import io.ferrystream.ferry.planner.Ferry;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.typeutils.RowTypeInfo;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.streaming.api.operators.KeyedProcessOperator;
import org.apache.flink.streaming.api.operators.OneInputStreamOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.io.RecordProcessorUtils;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedOneInputStreamOperatorTestHarness;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.writer.BinaryRowWriter;
import org.apache.flink.table.runtime.keyselector.RowDataKeySelector;
import org.apache.flink.table.runtime.operators.deduplicate.ProcTimeDeduplicateKeepFirstRowFunction;
import org.apache.flink.table.runtime.operators.deduplicate.RowTimeDeduplicateFunction;
import org.apache.flink.table.runtime.operators.rank.AppendOnlyTopNFunction;
import org.apache.flink.table.runtime.operators.rank.FastTop1Function;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.LogicalTypeRoot;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.Row;
import org.apache.flink.util.InstantiationUtil;
import org.apache.flink.util.function.ThrowingConsumer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * The ranks side by side: the deduplication ({@code bench-jvm dedup}) and the Top-N ({@code
 * bench-jvm top-n}). Flink's own operator ({@code KeyedProcessOperator} running the function of
 * the shape, planned with Ferry off) on the heap and on the RocksDB backend ({@link
 * OperatorBench#backendOf}), and Ferry's native operator of the kind (planned with Ferry on), each
 * in Flink's keyed one-input test harness, driven like {@link OperatorBench}'s operators (the
 * StreamTask's record processor, a reused StreamRecord, a counting Output that reads every field of
 * every output row). Planned as the differential tests plan their queries, over Nexmark-shaped
 * bids; the shapes ({@link Shape}):
 *
 * <ul>
 *   <li>q18's: the last row per key on row time ({@code ORDER BY dateTime DESC}), into a retract
 *       changelog, so every row of a live key emits -U of the key's previous row and +U of itself;
 *       row times rise by 1 ms a row, watermarks follow every {@link #WATERMARK_EVERY} rows;
 *   <li>the first row per key on processing time ({@code ORDER BY pt}), insert-only: once a key has
 *       its row, every later row of it is dropped. No watermarks;
 *   <li>q19's: the ten highest prices per key with their rank ({@code AppendOnlyTopNFunction}): a
 *       row that enters moves the rows below it down a rank (-U and +U per rank);
 *   <li>the highest price per key ({@code FastTop1Function}): a higher price replaces the key's row
 *       (-U, +U).
 * </ul>
 *
 * <p>The stream ({@link Events}): a prefill of one row per key (scrambled key order), then
 * segments of {@code rows} rows whose keys are drawn uniformly from the {@code keys} keys, so every
 * row after the prefill hits a live key. Every variant gets the same segments in the same order
 * (its state carries over), interleaved variant by variant, each its own copy of the rows (Flink's
 * functions set the kind of the row they are given, and its heap backend keeps that object as the
 * key's state, as it keeps the freshly deserialized rows of a job). After the prefill, warm-up
 * segments run until every variant's last two passes agree within 10 % (at least {@link
 * #MIN_WARMUP}, at most {@link #MAX_WARMUP}); then {@code reps} timed segments. Every pass, prefill,
 * warm-up and timed, is checksummed ({@link FieldReader}: every field of every output row read
 * through its getters, the row kind included): every variant must emit the same number of rows with
 * the same checksum in the same pass, and the number expected of the shape (the prefill one +I per
 * key; then two rows per input row for the last row, none for the first row), or the run fails.
 */
final class RankBench {
    private RankBench() {}

    /** Input rows between two watermarks (row-time shapes). */
    static final int WATERMARK_EVERY = 1000;
    /** Warm-up passes after the prefill: at least, at most. */
    static final int MIN_WARMUP = 2;
    static final int MAX_WARMUP = 4;

    /** What the rank keeps and orders by. */
    enum Shape {
        LAST_ROW_TIME("dedup", "last row, row time (q18)", "`dateTime` DESC", 1, true, 2, RowTimeDeduplicateFunction.class),
        FIRST_PROC_TIME("dedup", "first row, processing time", "pt", 1, false, 0, ProcTimeDeduplicateKeepFirstRowFunction.class),
        TOP10_PRICE("top-n", "top 10 by price, with the rank (q19)", "price DESC", 10, false, -1, AppendOnlyTopNFunction.class),
        TOP1_PRICE("top-n", "top 1 by price", "price DESC", 1, false, -1, FastTop1Function.class);

        /** The bench-jvm section that runs the shape. */
        final String section;
        final String title;
        final String order;
        /** The rank end: 1 selects no rank number (a deduplication, a top 1), more selects it. */
        final int rankEnd;
        final boolean rowtime;
        /** Output rows per input row once every key holds its row; -1: it varies. */
        final int outputsPerRow;
        /** The function Flink's own operator must run. */
        final Class<?> flinkFunction;

        Shape(String section, String title, String order, int rankEnd, boolean rowtime, int outputsPerRow,
                Class<?> flinkFunction) {
            this.section = section;
            this.title = title;
            this.order = order;
            this.rankEnd = rankEnd;
            this.rowtime = rowtime;
            this.outputsPerRow = outputsPerRow;
            this.flinkFunction = flinkFunction;
        }

        /** The library's kind that runs the shape natively. */
        String ferryKind() {
            return section.equals("dedup") ? DeduplicateSpec.KIND : TopNSpec.KIND;
        }

        boolean rankNumber() {
            return rankEnd > 1;
        }

        /** Whether the rank reads the processing time (its input then carries pt). */
        boolean readsPt() {
            return order.equals("pt");
        }

        String query() {
            return "SELECT auction, bidder, price, channel, CAST(`dateTime` AS TIMESTAMP(3)) AS dt" + (rankNumber() ? ", rn" : "")
                    + " FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY " + order + ") AS rn FROM bid)"
                    + (rankEnd == 1 ? " WHERE rn = 1" : " WHERE rn <= " + rankEnd);
        }
    }

    /** A planned rank with its state key selector and row types. */
    record Planned(
            OneInputStreamOperator<RowData, RowData> operator,
            KeySelector<RowData, RowData> keySelector,
            TypeInformation<RowData> keyType,
            RowType inputType,
            RowType outputType) {}

    /** The rank's input: the bid's columns, then the processing time when it orders by it. */
    static final LogicalTypeRoot[] BID = {LogicalTypeRoot.BIGINT, LogicalTypeRoot.BIGINT, LogicalTypeRoot.BIGINT,
        LogicalTypeRoot.VARCHAR, LogicalTypeRoot.TIMESTAMP_WITHOUT_TIME_ZONE};

    /**
     * Plans {@link Shape#query} over {@code bid(auction, bidder, price, channel, dateTime, pt AS
     * PROCTIME())} with {@code WATERMARK FOR dateTime AS dateTime}, mini-batch off, into a retract
     * changelog (so {@code generate_update_before} is on), with Ferry off or on, and returns the
     * rank of the StreamGraph; its input must be the bid's columns (and pt, unmaterialized: NULL),
     * the rows {@link Events} writes, its output the same (and the rank number if selected).
     */
    static Planned plan(Shape shape, boolean ferry, int batchSize) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        tEnv.getConfig().set(FerryOptions.BATCH_SIZE, batchSize);
        // The harness's processing time stands still: batches end at their size, watermarks and barriers.
        tEnv.getConfig().set(FerryOptions.BATCH_MAX_DELAY, Duration.ofHours(1));
        tEnv.getConfig().set("table.exec.mini-batch.enabled", "false");
        Ferry.install(tEnv);
        // Only planned, never run: one placeholder row gives the stream its type.
        String[] fields = {"auction", "bidder", "price", "channel", "dateTime"};
        DataStream<Row> source = env.fromData(List.of(new Row(fields.length)), new RowTypeInfo(
                new TypeInformation<?>[] {Types.LONG, Types.LONG, Types.LONG, Types.STRING, Types.LOCAL_DATE_TIME}, fields));
        Schema schema = Schema.newBuilder()
                .column("auction", "BIGINT").column("bidder", "BIGINT").column("price", "BIGINT")
                .column("channel", "STRING").column("dateTime", "TIMESTAMP(3)")
                .columnByExpression("pt", "PROCTIME()")
                .watermark("dateTime", "`dateTime`")
                .build();
        tEnv.createTemporaryView("bid", tEnv.fromDataStream(source, schema));
        tEnv.toChangelogStream(tEnv.sqlQuery(shape.query())).print();
        StreamNode node = OperatorBench.node(env.getStreamGraph(),
                op -> isFlinkOperator(op, shape) || isFerryOperator(op, shape), ferry, AbstractNativeOperator.class);
        if (node == null) {
            throw new IllegalStateException("no " + shape.flinkFunction.getSimpleName() + " rank in the plan of "
                    + shape.query());
        }
        RowType in = OperatorBench.rowType(node.getTypeSerializersIn()[0]);
        RowType out = OperatorBench.rowType(node.getTypeSerializerOut());
        int arity = BID.length + (shape.readsPt() ? 1 : 0);
        boolean same = in.getFieldCount() == arity && out.getFieldCount() == arity + (shape.rankNumber() ? 1 : 0);
        for (int i = 0; same && i < out.getFieldCount(); i++) {
            same = out.getTypeAt(i).getTypeRoot() == (i < BID.length ? BID[i]
                    : i < arity ? LogicalTypeRoot.TIMESTAMP_WITH_LOCAL_TIME_ZONE : LogicalTypeRoot.BIGINT)
                    && (i >= arity || in.getTypeAt(i).equals(out.getTypeAt(i)));
        }
        if (!same) {
            throw new IllegalStateException("the rank reads " + in + " and emits " + out + ", not the bid's columns"
                    + (shape.readsPt() ? " and pt" : "") + (shape.rankNumber() ? " (and the rank number)" : ""));
        }
        @SuppressWarnings("unchecked")
        KeySelector<RowData, RowData> selector = (KeySelector<RowData, RowData>) node.getStatePartitioners()[0];
        @SuppressWarnings("unchecked")
        OneInputStreamOperator<RowData, RowData> operator = (OneInputStreamOperator<RowData, RowData>) OperatorBench.operatorOf(node);
        return new Planned(operator, selector, ((RowDataKeySelector) selector).getProducedType(), in, out);
    }

    /** Flink's own operator of the shape: a KeyedProcessOperator running its function. */
    static boolean isFlinkOperator(Object op, Shape shape) {
        return op instanceof KeyedProcessOperator
                && shape.flinkFunction.isInstance(((KeyedProcessOperator<?, ?, ?>) op).getUserFunction());
    }

    /** Ferry's operator of the shape: a native operator of its kind. */
    static boolean isFerryOperator(Object op, Shape shape) {
        return op instanceof AbstractNativeOperator
                && ((AbstractNativeOperator<?>) op).spec().kind().equals(shape.ferryKind());
    }

    /**
     * One segment of the stream: per step a row, or (its row null) a watermark; {@code rowCount}
     * rows.
     */
    record Segment(RowData[] rows, Watermark[] watermarks, int rowCount) {
        /** A copy of every row, for one variant's pass (its operator may keep and change the rows). */
        RowData[] copy() {
            RowData[] c = new RowData[rows.length];
            for (int i = 0; i < rows.length; i++) {
                c[i] = rows[i] == null ? null : ((BinaryRowData) rows[i]).copy();
            }
            return c;
        }
    }

    /**
     * The bids, as BinaryRowData (the form rows reach a keyed operator in from an exchange): keys
     * (auctions) {@link BenchBids#FIRST_AUCTION_ID} on, bidders, prices and channels as {@link
     * IntervalJoinBench}'s bids, the row time 1 ms later each row, pt NULL (Flink does not
     * materialize a processing-time attribute before a deduplication). Seeded, deterministic; each
     * segment continues where the last ended.
     */
    static final class Events {
        private final SplittableRandom r;
        private final int keys;
        private final boolean watermarks;
        private final int arity;
        private long clock = 1_700_000_000_000L; // event time in ms

        Events(int keys, Shape shape, int arity) {
            this.keys = keys;
            this.watermarks = shape.rowtime;
            this.arity = arity;
            r = new SplittableRandom(BenchBids.SEED * 37 + keys);
        }

        /** One row per key, in {@link BenchBids#prefill}'s scrambled order. */
        Segment prefill() {
            long p = 2654435761L % keys;
            if (p == 0) {
                p = 1;
            }
            while (gcd(p, keys) != 1) {
                p++;
            }
            long step = p;
            return segment(keys, i -> BenchBids.FIRST_AUCTION_ID + (i * step) % keys);
        }

        /** {@code rows} rows over keys drawn uniformly. */
        Segment next(int rows) {
            return segment(rows, i -> BenchBids.FIRST_AUCTION_ID + r.nextInt(keys));
        }

        private Segment segment(int rows, java.util.function.LongUnaryOperator key) {
            int steps = rows + (watermarks ? rows / WATERMARK_EVERY : 0);
            RowData[] data = new RowData[steps];
            Watermark[] marks = new Watermark[steps];
            int s = 0;
            for (int i = 1; i <= rows; i++) {
                long t = ++clock;
                data[s++] = bid(key.applyAsLong(i - 1), t);
                if (watermarks && i % WATERMARK_EVERY == 0) {
                    marks[s++] = new Watermark(t - 1);
                }
            }
            return new Segment(data, marks, rows);
        }

        private BinaryRowData bid(long auction, long t) {
            BinaryRowData row = new BinaryRowData(arity);
            BinaryRowWriter w = new BinaryRowWriter(row);
            w.writeLong(0, auction);
            w.writeLong(1, 1000 + r.nextInt(100_000));
            w.writeLong(2, BenchBids.price(r));
            w.writeString(3, StringData.fromString(BenchBids.channel(r)));
            w.writeTimestamp(4, TimestampData.fromEpochMillis(t), 3);
            if (arity > BID.length) {
                w.setNullAt(5); // pt
            }
            w.complete();
            return row;
        }

        private static long gcd(long a, long b) {
            while (b != 0) {
                long t = a % b;
                a = b;
                b = t;
            }
            return a;
        }
    }

    /** One rank operator in the keyed one-input harness, fed through the StreamTask's record processor. */
    static final class Driver implements AutoCloseable {
        final Variant variant;
        final OneInputStreamOperator<RowData, RowData> op;
        final KeyedOneInputStreamOperatorTestHarness<RowData, RowData, RowData> harness;
        final ThrowingConsumer<StreamRecord<RowData>, Exception> processor;
        final CountingOutput out = new CountingOutput();
        final StreamRecord<RowData> record = new StreamRecord<>(null);
        long checkpoint;

        Driver(Variant variant, Planned p, Shape shape) throws Exception {
            this.variant = variant;
            op = InstantiationUtil.clone(p.operator());
            boolean ferry = isFerryOperator(op, shape);
            if (ferry != (variant == Variant.FERRY) || (!ferry && !isFlinkOperator(op, shape))) {
                throw new IllegalStateException(variant + " would run " + op.getClass().getName());
            }
            harness = new KeyedOneInputStreamOperatorTestHarness<>(op, p.keySelector(), p.keyType(),
                    OperatorBench.MAX_PARALLELISM, 1, 0);
            HarnessMemory.outsideBudget(harness);
            harness.setStateBackend(OperatorBench.backendOf(variant));
            harness.setOutputCreator(serializer -> out);
            out.reader = new FieldReader(p.outputType());
            harness.setup(new RowDataSerializer(p.outputType()));
            harness.open();
            OperatorBench.checkBackend(variant, op);
            processor = RecordProcessorUtils.getRecordProcessor(op);
        }

        /**
         * One pass over the variant's own copy of the segment (copied before timing); its checksum
         * is of this pass's output rows, every field read ({@link FieldReader}).
         */
        Pass run(Segment seg) throws Exception {
            RowData[] rows = seg.copy();
            Watermark[] marks = seg.watermarks();
            long outBefore = out.records;
            out.checksum = 0;
            long cpu0 = OperatorBench.threadCpu();
            long t0 = System.nanoTime();
            for (int i = 0; i < rows.length; i++) {
                if (rows[i] != null) {
                    processor.accept(record.replace(rows[i]));
                } else {
                    op.processWatermark(marks[i]);
                }
            }
            op.prepareSnapshotPreBarrier(++checkpoint); // Ferry: process the last partial batch
            long t1 = System.nanoTime();
            long cpu1 = OperatorBench.threadCpu();
            return new Pass(variant, seg.rowCount(), t1 - t0, cpu0 < 0 ? -1 : cpu1 - cpu0, out.records - outBefore,
                    out.checksum);
        }

        @Override
        public void close() throws Exception {
            harness.close();
        }
    }

    /** Results of one shape and key count: the timed passes, the warm-up passes run, the checksums. */
    record Result(Shape shape, int keys, int rows, List<Pass> passes, int warmups, long prefillChecksum,
            List<String> operators) {
        double[] rates(Variant v) {
            return passes.stream().filter(p -> p.variant() == v).mapToDouble(Pass::rowsPerSecond).toArray();
        }

        double median(Variant v) {
            return Stats.median(rates(v));
        }

        long lastChecksum() {
            return passes.get(passes.size() - 1).checksum();
        }
    }

    /**
     * Fails unless {@code p} emitted {@code want} rows (unless negative: the shape's output varies)
     * and what the first variant's same pass ({@code first[0]}, set by the first) did.
     */
    private static void check(Pass[] first, Pass p, long want, String what) {
        if (want >= 0 && p.outputs() != want) {
            throw new IllegalStateException(String.format(Locale.ROOT, "%s: %s emitted %d rows, want %d", what,
                    p.variant(), p.outputs(), want));
        }
        if (first[0] == null) {
            first[0] = p;
        } else if (first[0].outputs() != p.outputs() || first[0].checksum() != p.checksum()) {
            throw new IllegalStateException(String.format(Locale.ROOT, "%s: %s emitted %d rows, checksum %016x; %s"
                            + " emitted %d rows, checksum %016x", what, p.variant(), p.outputs(), p.checksum(),
                    first[0].variant(), first[0].outputs(), first[0].checksum()));
        }
    }

    static Result run(Shape shape, int keys, int rows, int reps, int batchSize, List<Variant> variants)
            throws Exception {
        Planned stock = plan(shape, false, batchSize);
        Planned ferry = plan(shape, true, batchSize);
        if (!stock.inputType().equals(ferry.inputType())) {
            throw new IllegalStateException("Flink's rank reads " + stock.inputType() + ", Ferry's "
                    + ferry.inputType());
        }
        Events events = new Events(keys, shape, stock.inputType().getFieldCount());
        String what = shape.title + ", " + Bench.count(keys) + " keys";
        List<Driver> drivers = new ArrayList<>();
        List<Pass> passes = new ArrayList<>();
        List<String> operators = new ArrayList<>();
        int warmups = 0;
        long prefillChecksum;
        try {
            for (Variant v : variants) {
                Driver d = new Driver(v, v == Variant.FERRY ? ferry : stock, shape);
                drivers.add(d);
                operators.add(v.label + ": " + OperatorBench.describe(d.op));
                Bench.log("%s: %s", v.label, OperatorBench.describe(d.op));
            }
            // The prefill: one row per key, each the key's first (+I).
            Segment prefill = events.prefill();
            Pass[] firstPrefill = new Pass[1];
            for (Driver d : drivers) {
                Pass p = d.run(prefill);
                Bench.log("prefill %-24s %s: %s rows/s, %d outputs, checksum %016x", d.variant.label, what,
                        Bench.rate(p.rowsPerSecond()), p.outputs(), p.checksum());
                check(firstPrefill, p, keys, what + ", prefill");
            }
            prefillChecksum = firstPrefill[0].checksum();
            // Warm-up: until every variant's last two passes agree within 10 %.
            double[] last = new double[drivers.size()];
            boolean stable = false;
            while (!stable && warmups < MAX_WARMUP) {
                warmups++;
                Segment seg = events.next(rows);
                stable = warmups >= MIN_WARMUP;
                Pass[] first = new Pass[1];
                for (int i = 0; i < drivers.size(); i++) {
                    Driver d = drivers.get(i);
                    System.gc();
                    Pass p = d.run(seg);
                    Bench.log("warm-up %d %-24s %s: %s rows/s (cpu share %.2f, %d outputs, checksum %016x)", warmups,
                            d.variant.label, what, Bench.rate(p.rowsPerSecond()), p.cpuShare(), p.outputs(), p.checksum());
                    check(first, p, shape.outputsPerRow < 0 ? -1 : (long) shape.outputsPerRow * rows, what + ", warm-up " + warmups);
                    stable &= Math.abs(p.rowsPerSecond() - last[i]) <= 0.1 * p.rowsPerSecond();
                    last[i] = p.rowsPerSecond();
                }
            }
            for (int rep = 1; rep <= reps; rep++) {
                Segment seg = events.next(rows);
                Pass[] first = new Pass[1];
                for (Driver d : drivers) {
                    System.gc();
                    Pass p = d.run(seg);
                    passes.add(p);
                    Bench.log("rep %d %-24s %s: %s rows/s (cpu share %.2f, %d outputs, checksum %016x)", rep,
                            d.variant.label, what, Bench.rate(p.rowsPerSecond()), p.cpuShare(), p.outputs(), p.checksum());
                    check(first, p, shape.outputsPerRow < 0 ? -1 : (long) shape.outputsPerRow * rows, what + ", timed pass " + rep);
                }
            }
        } finally {
            for (Driver d : drivers) {
                d.close();
            }
        }
        return new Result(shape, keys, rows, passes, warmups, prefillChecksum, operators);
    }

    /** The table of {@code section} ({@code dedup} or {@code top-n}): each of its shapes at each key count. */
    static void table(String section, StringBuilder out, int[] keys, int rows, int reps, int batch, List<Variant> variants)
            throws Exception {
        List<Shape> shapes = new ArrayList<>();
        for (Shape shape : Shape.values()) {
            if (shape.section.equals(section)) {
                shapes.add(shape);
            }
        }
        List<Result> results = new ArrayList<>();
        for (Shape shape : shapes) {
            for (int k : keys) {
                results.add(run(shape, k, rows, reps, batch, variants));
            }
        }
        out.append(String.format(Locale.ROOT,
                "### %s side by side (%s input rows per pass after a prefill of one row per key, batch %d,"
                        + " median of %d interleaved passes after warm-up; min–max)%n%n",
                section.equals("dedup") ? "Deduplication" : "Top-N", Bench.count(rows), batch, reps));
        for (Shape shape : shapes) {
            // double backticks: the query quotes `dateTime`
            out.append("- ").append(shape.title).append(": `` ").append(shape.query()).append(" ``")
                    .append(shape.rowtime ? ", watermarks every " + WATERMARK_EVERY + " rows" : "").append('\n');
        }
        out.append("\nEvery pass of every variant (prefill, warm-up and timed) checksummed from every field of its output"
                + " rows: equal pass for pass, or the run fails. Rows/s counts input rows.\n\n");
        StringBuilder head = new StringBuilder("| " + (section.equals("dedup") ? "deduplication" : "Top-N")
                + " | keys | warm-up passes | output rows per input row |");
        StringBuilder rule = new StringBuilder("|---|---:|---:|---:|");
        for (Variant v : variants) {
            head.append(' ').append(v.label).append(": rows/s |");
            rule.append("---:|");
        }
        boolean ratios = variants.contains(Variant.FERRY) && variants.size() > 1;
        for (Variant v : variants) {
            if (ratios && v != Variant.FERRY) {
                head.append(" Ferry / ").append(v == Variant.HEAP ? "heap" : "RocksDB (in memory / on disk)").append(" |");
                rule.append("---:|");
            }
        }
        head.append(" checksums: prefill / last pass |");
        rule.append("---|");
        out.append(head).append('\n').append(rule).append('\n');
        for (Result r : results) {
            long outputs = r.passes().stream().mapToLong(Pass::outputs).sum();
            out.append(String.format(Locale.ROOT, "| %s | %s | %d | %.2f |", r.shape().title, Bench.count(r.keys()),
                    r.warmups(), (double) outputs / r.passes().stream().mapToLong(Pass::rows).sum()));
            for (Variant v : variants) {
                out.append(' ').append(Bench.spread(r.median(v), r.rates(v))).append(" |");
            }
            for (Variant v : variants) {
                if (ratios && v != Variant.FERRY) {
                    out.append(String.format(Locale.ROOT, " %.1f× |", r.median(Variant.FERRY) / r.median(v)));
                }
            }
            out.append(String.format(Locale.ROOT, " %016x / %016x |%n", r.prefillChecksum(), r.lastChecksum()));
        }
        out.append('\n');
        for (Result r : results) {
            for (String d : r.operators()) {
                out.append("<!-- ").append(r.shape().title).append(", ").append(Bench.count(r.keys())).append(" keys: ")
                        .append(d).append(" -->\n");
            }
        }
        out.append('\n');
    }
}
