package io.ferrystream.ferry.bench;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.bench.OperatorBench.CountingOutput;
import io.ferrystream.ferry.bench.OperatorBench.Pass;
import io.ferrystream.ferry.bench.OperatorBench.Variant;
import io.ferrystream.ferry.kinds.intervaljoin.FerryIntervalJoinOperator;
import io.ferrystream.ferry.operators.HarnessMemory;
import io.ferrystream.ferry.planner.Ferry;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.java.functions.KeySelector;
import org.apache.flink.api.java.typeutils.RowTypeInfo;
import org.apache.flink.runtime.state.KeyedStateBackend;
import org.apache.flink.runtime.state.VoidNamespace;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.graph.StreamNode;
import org.apache.flink.streaming.api.operators.AbstractStreamOperator;
import org.apache.flink.streaming.api.operators.TwoInputStreamOperator;
import org.apache.flink.streaming.api.operators.co.KeyedCoProcessOperator;
import org.apache.flink.streaming.api.watermark.Watermark;
import org.apache.flink.streaming.runtime.io.RecordProcessorUtils;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.streaming.util.KeyedTwoInputStreamOperatorTestHarness;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.writer.BinaryRowWriter;
import org.apache.flink.table.runtime.keyselector.RowDataKeySelector;
import org.apache.flink.table.runtime.operators.join.interval.RowTimeIntervalJoin;
import org.apache.flink.table.runtime.typeutils.RowDataSerializer;
import org.apache.flink.table.types.logical.LogicalTypeRoot;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.Row;
import org.apache.flink.util.InstantiationUtil;
import org.apache.flink.util.function.ThrowingConsumer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * The interval join side by side: Nexmark-shaped auctions and bids joined on {@code a.id =
 * b.auction AND b.dateTime BETWEEN a.dateTime AND a.dateTime + INTERVAL '10' SECOND} (row time),
 * INNER or LEFT, through Flink's own operator ({@code KeyedCoProcessOperatorWithWatermarkDelay}
 * running {@code RowTimeIntervalJoin}, planned with Ferry off) on the heap and on the RocksDB
 * backend, and through {@link FerryIntervalJoinOperator} (planned with Ferry on), each in Flink's
 * keyed two-input test harness, driven like {@link OperatorBench}'s operators (the StreamTask's
 * record processors, a reused StreamRecord, a counting Output).
 *
 * <p>The stream ({@link Events}) is one event-time sequence cut into segments of {@code rows}
 * input rows; every variant gets the same segments in the same order (its state carries over),
 * interleaved variant by variant. Auctions arrive at {@code keys / 10} per second of event time
 * and are cached 10 s, so about {@code keys} auction keys are live; watermarks (both inputs) follow
 * the event time every {@link #WATERMARK_EVERY} rows. Warm-up segments run until the stream has
 * covered 12 s of event time (the state is full) and then until every variant's last two passes
 * are within 10 % of each other (at least {@link #MIN_WARMUP}, at most {@link #MAX_WARMUP} passes); they are checksummed ({@link CountingOutput}):
 * every variant must emit the same rows. Timed segments are only counted (serializing Flink's
 * joined rows for the checksum would cost more than some variants' join); their counts must
 * match too.
 */
final class IntervalJoinBench {
    private IntervalJoinBench() {}

    /** Input rows between two watermarks. */
    static final int WATERMARK_EVERY = 1000;
    /** Seconds an auction waits for bids (the join's upper bound). */
    static final int WINDOW_SECONDS = 10;
    /** Warm-up passes after the state is full: at least, at most. */
    static final int MIN_WARMUP = 2;
    static final int MAX_WARMUP = 4;

    /**
     * What a side-by-side join benchmark plans and feeds: the interval join ({@link #INTERVAL}) or
     * the window join ({@link WindowJoinBench}).
     *
     * @param title the section's title
     * @param query the query of a join type
     * @param windowMs window size of the window TVF both inputs pass through (its window_start,
     *     window_end and window_time columns follow each source row); 0: the source rows as they are
     * @param stock whether an operator is Flink's own for this join
     * @param ferryClass Ferry's operator class
     * @param liveKeysState the keyed state whose keys are the live auctions in Flink's operators
     */
    record Shape(String title, Function<String, String> query, int windowMs, Predicate<Object> stock,
            Class<?> ferryClass, String liveKeysState) {}

    static final Shape INTERVAL = new Shape("Interval join", IntervalJoinBench::query, 0,
            IntervalJoinBench::isFlinkIntervalJoin, FerryIntervalJoinOperator.class, "IntervalJoinLeftCache");

    static String query(String joinType) {
        return "SELECT a.id, a.itemName, a.seller, a.category, CAST(a.`dateTime` AS TIMESTAMP(3)) AS adt,"
                + " b.auction, b.bidder, b.price, b.channel, CAST(b.`dateTime` AS TIMESTAMP(3)) AS bdt"
                + " FROM auction a " + joinType + " JOIN bid b ON a.id = b.auction"
                + " AND b.`dateTime` BETWEEN a.`dateTime` AND a.`dateTime` + INTERVAL '" + WINDOW_SECONDS + "' SECOND";
    }

    /** A planned interval join with its two state key selectors and row types. */
    record Planned(
            TwoInputStreamOperator<RowData, RowData, RowData> operator,
            KeySelector<RowData, RowData> auctionKeys,
            KeySelector<RowData, RowData> bidKeys,
            TypeInformation<RowData> keyType,
            RowType outputType) {}

    static final LogicalTypeRoot[] AUCTION = {LogicalTypeRoot.BIGINT, LogicalTypeRoot.VARCHAR, LogicalTypeRoot.BIGINT,
        LogicalTypeRoot.BIGINT, LogicalTypeRoot.TIMESTAMP_WITHOUT_TIME_ZONE};
    static final LogicalTypeRoot[] BID = {LogicalTypeRoot.BIGINT, LogicalTypeRoot.BIGINT, LogicalTypeRoot.BIGINT,
        LogicalTypeRoot.VARCHAR, LogicalTypeRoot.TIMESTAMP_WITHOUT_TIME_ZONE};

    /**
     * Plans {@link #query} over {@code auction(id, itemName, seller, category, dateTime)} and
     * {@code bid(auction, bidder, price, channel, dateTime)}, both with {@code WATERMARK FOR
     * dateTime AS dateTime}, and returns the join operator of the StreamGraph; its inputs must be
     * the source rows unchanged (the rows {@link Events} writes).
     */
    static Planned plan(String joinType, boolean ferry, int batchSize) throws Exception {
        return plan(INTERVAL, joinType, ferry, batchSize);
    }

    /** {@link #plan(String, boolean, int)} of a shape; windowed inputs end in their three window columns. */
    static Planned plan(Shape shape, String joinType, boolean ferry, int batchSize) throws Exception {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(env);
        tEnv.getConfig().set(FerryOptions.ENABLED, ferry);
        tEnv.getConfig().set(FerryOptions.BATCH_SIZE, batchSize);
        // The harness's processing time stands still: batches end at their size, watermarks and barriers.
        tEnv.getConfig().set(FerryOptions.BATCH_MAX_DELAY, Duration.ofHours(1));
        Ferry.install(tEnv);
        // Only planned, never run: one placeholder row gives each stream its type.
        table(tEnv, env, "auction", new String[] {"id", "itemName", "seller", "category", "dateTime"},
                new TypeInformation<?>[] {Types.LONG, Types.STRING, Types.LONG, Types.LONG, Types.LOCAL_DATE_TIME},
                new String[] {"BIGINT", "STRING", "BIGINT", "BIGINT", "TIMESTAMP(3)"});
        table(tEnv, env, "bid", new String[] {"auction", "bidder", "price", "channel", "dateTime"},
                new TypeInformation<?>[] {Types.LONG, Types.LONG, Types.LONG, Types.STRING, Types.LOCAL_DATE_TIME},
                new String[] {"BIGINT", "BIGINT", "BIGINT", "STRING", "TIMESTAMP(3)"});
        String query = shape.query().apply(joinType);
        tEnv.toDataStream(tEnv.sqlQuery(query)).print();
        StreamNode node = OperatorBench.node(env.getStreamGraph(),
                op -> shape.stock().test(op) || shape.ferryClass().isInstance(op), ferry, shape.ferryClass());
        if (node == null) {
            throw new IllegalStateException("no " + shape.title() + " in the plan of " + query);
        }
        checkInput(OperatorBench.rowType(node.getTypeSerializersIn()[0]), withWindow(AUCTION, shape), "auction");
        checkInput(OperatorBench.rowType(node.getTypeSerializersIn()[1]), withWindow(BID, shape), "bid");
        @SuppressWarnings("unchecked")
        KeySelector<RowData, RowData> left = (KeySelector<RowData, RowData>) node.getStatePartitioners()[0];
        @SuppressWarnings("unchecked")
        KeySelector<RowData, RowData> right = (KeySelector<RowData, RowData>) node.getStatePartitioners()[1];
        @SuppressWarnings("unchecked")
        TwoInputStreamOperator<RowData, RowData, RowData> operator =
                (TwoInputStreamOperator<RowData, RowData, RowData>) OperatorBench.operatorOf(node);
        return new Planned(operator, left, right, ((RowDataKeySelector) left).getProducedType(),
                OperatorBench.rowType(node.getTypeSerializerOut()));
    }

    /** A source row's field types followed by the window columns of a windowed shape. */
    private static LogicalTypeRoot[] withWindow(LogicalTypeRoot[] fields, Shape shape) {
        if (shape.windowMs() == 0) {
            return fields;
        }
        LogicalTypeRoot[] all = Arrays.copyOf(fields, fields.length + 3);
        Arrays.fill(all, fields.length, all.length, LogicalTypeRoot.TIMESTAMP_WITHOUT_TIME_ZONE);
        return all;
    }

    private static void table(StreamTableEnvironment tEnv, StreamExecutionEnvironment env, String name,
            String[] fields, TypeInformation<?>[] types, String[] sqlTypes) {
        DataStream<Row> source = env.fromData(List.of(new Row(fields.length)), new RowTypeInfo(types, fields));
        Schema.Builder schema = Schema.newBuilder();
        for (int i = 0; i < fields.length; i++) {
            schema.column(fields[i], sqlTypes[i]);
        }
        tEnv.createTemporaryView(name, tEnv.fromDataStream(source, schema.watermark("dateTime", "`dateTime`").build()));
    }

    private static void checkInput(RowType type, LogicalTypeRoot[] want, String side) {
        boolean same = type.getFieldCount() == want.length;
        for (int i = 0; same && i < want.length; i++) {
            same = type.getTypeAt(i).getTypeRoot() == want[i];
        }
        if (!same) {
            throw new IllegalStateException("the join's " + side + " input is " + type + ", not the source row");
        }
    }

    static boolean isFlinkIntervalJoin(Object op) {
        return op instanceof KeyedCoProcessOperator
                && ((KeyedCoProcessOperator<?, ?, ?, ?>) op).getUserFunction() instanceof RowTimeIntervalJoin;
    }

    /**
     * One segment of the stream: per step the input (1 auction, 2 bid, 0 a watermark of both
     * inputs), its row, its watermark.
     */
    record Segment(byte[] inputs, RowData[] rows, Watermark[] watermarks, int rowCount) {}

    /**
     * The event-time stream, as BinaryRowData (the form rows reach a keyed operator in from an
     * exchange): per 49 events, on average 3 auctions and 46 bids (Nexmark's proportions without
     * persons), event times in order, {@code keys / 10} auctions per second. A bid goes to an
     * auction drawn uniformly from those of the last 12 s, so about 5 in 6 fall in their auction's
     * window (the rest match nothing); prices and channels as {@link BenchBids}. Seeded,
     * deterministic; each {@link #next} continues where the last ended.
     */
    static final class Events {
        private final SplittableRandom r;
        private final double msPerEvent;
        private final int recent; // auctions of the last 12 s
        private double clock; // event time in ms
        private long nextAuction = BenchBids.FIRST_AUCTION_ID;
        private final int windowMs;

        Events(int keys) {
            this(keys, 0);
        }

        /** @param windowMs with window columns for tumbling windows of this size (0: none) */
        Events(int keys, int windowMs) {
            this.windowMs = windowMs;
            r = new SplittableRandom(BenchBids.SEED * 31 + keys);
            double auctionsPerMs = keys / (WINDOW_SECONDS * 1000.0);
            msPerEvent = 3.0 / (49 * auctionsPerMs);
            recent = keys * 12 / WINDOW_SECONDS;
            clock = 1_700_000_000_000.0;
        }

        Segment next(int rows) {
            int steps = rows + rows / WATERMARK_EVERY;
            byte[] inputs = new byte[steps];
            RowData[] data = new RowData[steps];
            Watermark[] marks = new Watermark[steps];
            int s = 0;
            for (int i = 1; i <= rows; i++) {
                clock += msPerEvent;
                long t = (long) clock;
                long created = nextAuction - BenchBids.FIRST_AUCTION_ID;
                if (created == 0 || r.nextInt(49) < 3) {
                    inputs[s] = 1;
                    data[s++] = auction(nextAuction++, t);
                } else {
                    inputs[s] = 2;
                    data[s++] = bid(nextAuction - 1 - r.nextInt((int) Math.min(created, recent)), t);
                }
                if (i % WATERMARK_EVERY == 0) {
                    marks[s++] = new Watermark(t - 1);
                }
            }
            return new Segment(inputs, data, marks, rows);
        }

        private BinaryRowData auction(long id, long t) {
            BinaryRowData row = new BinaryRowData(AUCTION.length + (windowMs > 0 ? 3 : 0));
            BinaryRowWriter w = new BinaryRowWriter(row);
            w.writeLong(0, id);
            w.writeString(1, StringData.fromString("item-" + Long.toString(r.nextLong() & 0xffffffffL, 36)));
            w.writeLong(2, 1000 + r.nextInt(10_000));
            w.writeLong(3, 10 + r.nextInt(5));
            w.writeTimestamp(4, TimestampData.fromEpochMillis(t), 3);
            window(w, AUCTION.length, t);
            w.complete();
            return row;
        }

        private BinaryRowData bid(long auction, long t) {
            BinaryRowData row = new BinaryRowData(BID.length + (windowMs > 0 ? 3 : 0));
            BinaryRowWriter w = new BinaryRowWriter(row);
            w.writeLong(0, auction);
            w.writeLong(1, 1000 + r.nextInt(100_000));
            w.writeLong(2, BenchBids.price(r));
            w.writeString(3, StringData.fromString(BenchBids.channel(r)));
            w.writeTimestamp(4, TimestampData.fromEpochMillis(t), 3);
            window(w, BID.length, t);
            w.complete();
            return row;
        }

        /** window_start, window_end, window_time of a tumbling window, as the window TVF appends them. */
        private void window(BinaryRowWriter w, int at, long t) {
            if (windowMs > 0) {
                long start = t - Math.floorMod(t, windowMs);
                w.writeTimestamp(at, TimestampData.fromEpochMillis(start), 3);
                w.writeTimestamp(at + 1, TimestampData.fromEpochMillis(start + windowMs), 3);
                w.writeTimestamp(at + 2, TimestampData.fromEpochMillis(start + windowMs - 1), 3);
            }
        }
    }

    /** One join operator in the keyed two-input harness, fed through the StreamTask's record processors. */
    static final class Driver implements AutoCloseable {
        final Variant variant;
        final TwoInputStreamOperator<RowData, RowData, RowData> op;
        final KeyedTwoInputStreamOperatorTestHarness<RowData, RowData, RowData, RowData> harness;
        final ThrowingConsumer<StreamRecord<RowData>, Exception> auctions;
        final ThrowingConsumer<StreamRecord<RowData>, Exception> bids;
        final CountingOutput out = new CountingOutput();
        final RowDataSerializer outSerializer;
        final StreamRecord<RowData> record = new StreamRecord<>(null);
        long checkpoint;

        final Shape shape;

        Driver(Variant variant, Planned p, Shape shape) throws Exception {
            this.variant = variant;
            this.shape = shape;
            op = InstantiationUtil.clone(p.operator());
            boolean ferry = shape.ferryClass().isInstance(op);
            if (ferry != (variant == Variant.FERRY) || (!ferry && !shape.stock().test(op))) {
                throw new IllegalStateException(variant + " would run " + op.getClass().getName());
            }
            harness = new KeyedTwoInputStreamOperatorTestHarness<>(op, p.auctionKeys(), p.bidKeys(), p.keyType(),
                    OperatorBench.MAX_PARALLELISM, 1, 0);
            HarnessMemory.outsideBudget(harness);
            harness.setStateBackend(OperatorBench.backendOf(variant));
            harness.setOutputCreator(serializer -> out);
            outSerializer = new RowDataSerializer(p.outputType());
            harness.setup(outSerializer);
            harness.open();
            OperatorBench.checkBackend(variant, op);
            auctions = RecordProcessorUtils.getRecordProcessor1(op);
            bids = RecordProcessorUtils.getRecordProcessor2(op);
        }

        /** One pass over the segment; with {@code checksum} the output's checksum is kept ({@link CountingOutput}). */
        Pass run(Segment seg, boolean checksum) throws Exception {
            out.serializer = checksum ? outSerializer : null;
            out.checksum = 0;
            long outBefore = out.records;
            byte[] inputs = seg.inputs();
            RowData[] rows = seg.rows();
            Watermark[] marks = seg.watermarks();
            long cpu0 = OperatorBench.threadCpu();
            long t0 = System.nanoTime();
            for (int i = 0; i < inputs.length; i++) {
                switch (inputs[i]) {
                    case 1:
                        auctions.accept(record.replace(rows[i]));
                        break;
                    case 2:
                        bids.accept(record.replace(rows[i]));
                        break;
                    default:
                        op.processWatermark1(marks[i]);
                        op.processWatermark2(marks[i]);
                }
            }
            op.prepareSnapshotPreBarrier(++checkpoint); // Ferry: process the last partial batch
            long t1 = System.nanoTime();
            long cpu1 = OperatorBench.threadCpu();
            return new Pass(variant, seg.rowCount(), t1 - t0, cpu0 < 0 ? -1 : cpu1 - cpu0, out.records - outBefore, out.checksum);
        }

        /** Keys with a cached auction (Flink's interval join: keys in the left cache), else -1. */
        long liveKeys() throws Exception {
            if (variant == Variant.FERRY || shape.windowMs() > 0) {
                return -1; // the window join's states are namespaced by window end
            }
            KeyedStateBackend<?> backend = ((AbstractStreamOperator<?>) op).getKeyedStateBackend();
            try (var keys = backend.getKeys(shape.liveKeysState(), VoidNamespace.INSTANCE)) {
                return keys.count();
            }
        }

        @Override
        public void close() throws Exception {
            harness.close();
        }
    }

    /** Results of one join type and key count: the timed passes and the live keys Flink's heap operator held. */
    record Result(String joinType, int keys, int rows, List<Pass> passes, long liveKeys, int warmups,
            List<String> operators) {
        double[] rates(Variant v) {
            return passes.stream().filter(p -> p.variant() == v).mapToDouble(Pass::rowsPerSecond).toArray();
        }

        double median(Variant v) {
            return Stats.median(rates(v));
        }
    }

    static Result run(Shape shape, String joinType, int keys, int rows, int reps, int batchSize, List<Variant> variants)
            throws Exception {
        Planned stock = plan(shape, joinType, false, batchSize);
        Planned ferry = plan(shape, joinType, true, batchSize);
        Events events = new Events(keys, shape.windowMs());
        String what = joinType + " " + Bench.count(keys) + " keys";
        List<Driver> drivers = new ArrayList<>();
        List<Pass> passes = new ArrayList<>();
        List<String> operators = new ArrayList<>();
        long live = -1;
        int warmups = 0;
        try {
            for (Variant v : variants) {
                Driver d = new Driver(v, v == Variant.FERRY ? ferry : stock, shape);
                drivers.add(d);
                operators.add(v.label + ": " + OperatorBench.describe(d.op));
                Bench.log("%s: %s", v.label, OperatorBench.describe(d.op));
            }
            // Warm-up: checksummed rounds until the state is full (12 s of event time), then until
            // every variant's last two passes agree within 10 %.
            double[] last = new double[drivers.size()];
            long fill = (long) keys * 49 / 3 * 12 / WINDOW_SECONDS;
            long warmRows = 0;
            int full = 0; // warm-up passes after the state was full
            boolean stable = false;
            while (!stable && full < MAX_WARMUP) {
                warmups++;
                Segment seg = events.next(rows);
                full += warmRows >= fill ? 1 : 0;
                warmRows += rows;
                stable = full >= MIN_WARMUP;
                long[] want = null;
                for (int i = 0; i < drivers.size(); i++) {
                    Driver d = drivers.get(i);
                    Pass p = d.run(seg, true);
                    long[] got = {p.outputs(), d.out.checksum};
                    Bench.log("warm-up %d %-24s %s: %s rows/s, %d outputs, checksum %016x, live keys %d", warmups,
                            d.variant.label, what, Bench.rate(p.rowsPerSecond()), got[0], got[1], d.liveKeys());
                    if (want == null) {
                        want = got;
                    } else if (want[0] != got[0] || want[1] != got[1]) {
                        throw new IllegalStateException(String.format(Locale.ROOT,
                                "%s, warm-up %d: %s emitted %d rows, checksum %016x; %s emitted %d rows, checksum %016x",
                                what, warmups, drivers.get(0).variant, want[0], want[1], d.variant, got[0], got[1]));
                    }
                    stable &= Math.abs(p.rowsPerSecond() - last[i]) <= 0.1 * p.rowsPerSecond();
                    last[i] = p.rowsPerSecond();
                }
                if (want[0] == 0 && full > 0) { // a window join emits nothing before its first window ends
                    throw new IllegalStateException(what + ": the join emitted nothing");
                }
            }
            for (int rep = 1; rep <= reps; rep++) {
                Segment seg = events.next(rows);
                long outputs = -1;
                for (Driver d : drivers) {
                    System.gc();
                    Pass p = d.run(seg, false);
                    passes.add(p);
                    Bench.log("rep %d %-24s %s: %s rows/s (cpu share %.2f, %d outputs)", rep, d.variant.label, what,
                            Bench.rate(p.rowsPerSecond()), p.cpuShare(), p.outputs());
                    if (outputs >= 0 && outputs != p.outputs()) {
                        throw new IllegalStateException(String.format(Locale.ROOT, "%s, rep %d: %s emitted %d rows, %s %d",
                                what, rep, drivers.get(0).variant, outputs, d.variant, p.outputs()));
                    }
                    outputs = p.outputs();
                    if (d.variant == Variant.HEAP) {
                        live = d.liveKeys();
                    }
                }
            }
        } finally {
            for (Driver d : drivers) {
                d.close();
            }
        }
        return new Result(joinType, keys, rows, passes, live, warmups, operators);
    }

    /** The section's table: LEFT and INNER at each key count. */
    static void table(StringBuilder out, int[] keys, int rows, int reps, int batch, List<Variant> variants)
            throws Exception {
        table(INTERVAL, out, keys, rows, reps, batch, variants);
    }

    static void table(Shape shape, StringBuilder out, int[] keys, int rows, int reps, int batch, List<Variant> variants)
            throws Exception {
        List<Result> results = new ArrayList<>();
        for (String joinType : List.of("LEFT", "INNER")) {
            for (int k : keys) {
                results.add(run(shape, joinType, k, rows, reps, batch, variants));
            }
        }
        out.append(String.format(Locale.ROOT,
                "### %s side by side (%s input rows per pass, batch %d, watermarks every %d rows,"
                        + " median of %d interleaved passes; min–max)%n%n",
                shape.title(), Bench.count(rows), batch, WATERMARK_EVERY, reps));
        out.append('`').append(shape.query().apply("[LEFT]")).append("`\n\n");
        StringBuilder head = new StringBuilder("| join | keys | live keys | warm-up passes |");
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
        out.append(head).append('\n').append(rule).append('\n');
        for (Result r : results) {
            out.append(String.format(Locale.ROOT, "| %s | %s | %s | %d |", r.joinType(), Bench.count(r.keys()),
                    r.liveKeys() < 0 ? "–" : Long.toString(r.liveKeys()), r.warmups()));
            for (Variant v : variants) {
                out.append(' ').append(Bench.spread(r.median(v), r.rates(v))).append(" |");
            }
            for (Variant v : variants) {
                if (ratios && v != Variant.FERRY) {
                    out.append(String.format(Locale.ROOT, " %.1f× |", r.median(Variant.FERRY) / r.median(v)));
                }
            }
            out.append('\n');
        }
        out.append('\n');
        for (Result r : results) {
            for (String d : r.operators()) {
                out.append("<!-- ").append(r.joinType()).append(' ').append(Bench.count(r.keys())).append(" keys: ")
                        .append(d).append(" -->\n");
            }
        }
        out.append('\n');
    }
}
