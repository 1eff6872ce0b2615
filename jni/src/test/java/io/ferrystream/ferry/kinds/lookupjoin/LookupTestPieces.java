package io.ferrystream.ferry.kinds.lookupjoin;

import org.apache.flink.api.common.functions.AbstractRichFunction;
import org.apache.flink.api.common.functions.FlatMapFunction;
import org.apache.flink.api.common.functions.OpenContext;
import org.apache.flink.streaming.api.functions.async.AsyncFunction;
import org.apache.flink.streaming.api.functions.async.ResultFuture;
import org.apache.flink.streaming.util.retryable.RetryPredicates;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.utils.JoinedRowData;
import org.apache.flink.table.functions.LookupFunction;
import org.apache.flink.table.runtime.collector.ListenableCollector;
import org.apache.flink.table.runtime.collector.TableFunctionResultFuture;
import org.apache.flink.table.runtime.generated.FilterCondition;
import org.apache.flink.table.runtime.operators.join.lookup.ResultRetryStrategy;
import org.apache.flink.table.runtime.operators.join.lookup.RetryableLookupFunctionDelegator;
import org.apache.flink.util.Collector;

import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Hand-written stand-ins for the pieces Flink's planner generates for a lookup join (fetcher,
 * collector with the residual condition, pre-filter, calc, async result future), each doing what
 * the generated code does, over a dim table (id INT, name STRING) and probe rows (k INT, s STRING).
 * Public with public no-argument constructors: Flink's generated-class wrappers instantiate them
 * by reflection.
 */
public final class LookupTestPieces {
    private LookupTestPieces() {}

    /** Key 13 fails its lookup; key 99 never completes (async). */
    static final int FAILING_KEY = 13;
    static final int HANGING_KEY = 99;

    static final Map<Integer, List<RowData>> DATA = Map.of(
            1, List.of(dim(1, "Julian")),
            3, List.of(dim(3, "Jark"), dim(3, "Jackson")),
            4, List.of(dim(4, "Fabian")),
            6, List.of(dim(6, "a"), dim(6, "bb"), dim(6, "ccccccc"), dim(6, "bb")),
            7, List.of());

    static RowData dim(int id, String name) {
        return GenericRowData.of(id, StringData.fromString(name));
    }

    /** The connector's lookup function: the rows of the key, in order; fails for {@link #FAILING_KEY}. */
    public static final class DimLookup extends LookupFunction {
        static final AtomicInteger CALLS = new AtomicInteger();

        @Override
        public Collection<RowData> lookup(RowData keyRow) {
            CALLS.incrementAndGet();
            int k = keyRow.getInt(0);
            if (k == FAILING_KEY) {
                throw new RuntimeException("lookup failed for key " + k);
            }
            return DATA.get(k);
        }
    }

    /** Flink's generated sync fetcher: NULL key skipped, else {@code lookup(GenericRowData.of(key))}, rows collected. */
    public static class Fetcher extends AbstractRichFunction implements FlatMapFunction<RowData, RowData> {
        static final AtomicInteger CLOSED = new AtomicInteger();
        private final DimLookup lookup = new DimLookup();

        public Fetcher() {}

        @Override
        public void flatMap(RowData in, Collector<RowData> out) throws Exception {
            if (in.isNullAt(0)) {
                return;
            }
            Collection<RowData> rows = lookup.lookup(GenericRowData.of(in.getInt(0)));
            if (rows != null) {
                for (RowData r : rows) {
                    out.collect(r);
                }
            }
        }

        @Override
        public void close() {
            CLOSED.incrementAndGet();
        }
    }

    /** A fetcher whose open fails, and whose close fails too. */
    public static final class FailingFetcher extends Fetcher {
        public FailingFetcher() {}

        @Override
        public void open(OpenContext openContext) {
            throw new IllegalStateException("fetcher open failed");
        }

        @Override
        public void close() {
            super.close();
            throw new IllegalStateException("fetcher close failed");
        }
    }

    /** The residual condition: the dim name differs from the probe's s (a NULL s passes). */
    static boolean residual(RowData probe, RowData right) {
        return probe.isNullAt(1) || !probe.getString(1).equals(right.getString(1));
    }

    /** Flink's generated collector: residual condition, then the joined row with the probe's RowKind. */
    public static class Residual extends ListenableCollector<RowData> {
        public Residual() {}

        boolean condition() {
            return true;
        }

        @Override
        public void collect(RowData right) {
            getCollectListener().ifPresent(l -> l.onCollect(right));
            RowData probe = (RowData) getInput();
            if (!condition() || residual(probe, right)) {
                outputResult(new JoinedRowData(probe.getRowKind(), probe, right));
            }
        }
    }

    /** The collector of a join without a residual condition. */
    public static final class NoResidual extends Residual {
        public NoResidual() {}

        @Override
        boolean condition() {
            return false;
        }
    }

    /** A join without pre-filter: Flink generates an always-true condition. */
    public static final class NoPreFilter extends AbstractRichFunction implements FilterCondition {
        public NoPreFilter() {}

        @Override
        public boolean apply(Context ctx, RowData in) {
            return true;
        }
    }

    /** Flink's generated pre-filter: probe rows whose s starts with "x" are not looked up. */
    public static final class PreFilter extends AbstractRichFunction implements FilterCondition {
        public PreFilter() {}

        @Override
        public boolean apply(Context ctx, RowData in) {
            return in.isNullAt(1) || !in.getString(1).toString().startsWith("x");
        }
    }

    /** Flink's generated calc on the temporal table: keeps names of at least 5 characters, upper-cased. */
    public static final class Calc extends AbstractRichFunction implements FlatMapFunction<RowData, RowData> {
        public Calc() {}

        @Override
        public void flatMap(RowData r, Collector<RowData> out) {
            String name = r.getString(1).toString();
            if (name.length() >= 5) {
                out.collect(GenericRowData.of(r.getInt(0), StringData.fromString(name.toUpperCase())));
            }
        }
    }

    /**
     * Flink's generated async fetcher: a NULL key completes empty at once; otherwise the lookup
     * completes on one of six threads after 0-2 ms (so completions come out of order);
     * {@link #FAILING_KEY} completes exceptionally, {@link #HANGING_KEY} never.
     */
    public static final class AsyncFetcher extends AbstractRichFunction implements AsyncFunction<RowData, Object> {
        /** Lookups invoked and not yet completed, of every instance; and the most at once. */
        static final AtomicInteger IN_FLIGHT = new AtomicInteger();
        static final AtomicInteger MAX_IN_FLIGHT = new AtomicInteger();

        private transient ExecutorService executor;

        public AsyncFetcher() {}
        private transient Random random;

        @Override
        public void open(OpenContext openContext) {
            executor = Executors.newFixedThreadPool(6);
            random = new Random(7);
        }

        @Override
        @SuppressWarnings({"unchecked", "rawtypes"})
        public void asyncInvoke(RowData in, ResultFuture<Object> future) {
            if (in.isNullAt(0)) {
                future.complete(Collections.emptyList());
                return;
            }
            int k = in.getInt(0);
            if (k == HANGING_KEY) {
                return;
            }
            long sleepMicros = random.nextInt(2000);
            MAX_IN_FLIGHT.accumulateAndGet(IN_FLIGHT.incrementAndGet(), Math::max);
            executor.execute(() -> {
                try {
                    TimeUnit.MICROSECONDS.sleep(sleepMicros);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return;
                } finally {
                    IN_FLIGHT.decrementAndGet();
                }
                if (k == FAILING_KEY) {
                    future.completeExceptionally(new RuntimeException("lookup failed for key " + k));
                } else {
                    List<RowData> rows = DATA.get(k);
                    future.complete((Collection) (rows == null ? Collections.emptyList() : new ArrayList<>(rows)));
                }
            });
        }

        @Override
        public void close() {
            if (executor != null) {
                executor.shutdownNow();
            }
        }
    }

    /** Flink's generated async result future: filters by the residual condition. */
    public static class AsyncResidual extends TableFunctionResultFuture<RowData> {
        public AsyncResidual() {}

        boolean condition() {
            return true;
        }

        @Override
        @SuppressWarnings({"unchecked", "rawtypes"})
        public void complete(Collection<RowData> rows) {
            List<RowData> kept = new ArrayList<>();
            for (RowData r : rows) {
                if (!condition() || residual((RowData) getInput(), r)) {
                    kept.add(r);
                }
            }
            ((ResultFuture) getResultFuture()).complete(kept);
        }
    }

    /** The async result future of a join without a residual condition. */
    public static final class AsyncNoResidual extends AsyncResidual {
        public AsyncNoResidual() {}

        @Override
        boolean condition() {
            return false;
        }
    }

    /** A connector answering nothing for the first two calls per key (Flink's 'start-lookup-threshold'). */
    public static final class ThresholdLookup extends LookupFunction {
        private final Map<Integer, Integer> calls = new HashMap<>();

        @Override
        public Collection<RowData> lookup(RowData keyRow) {
            int k = keyRow.getInt(0);
            int n = calls.merge(k, 1, Integer::sum);
            return n <= 2 ? null : DATA.get(k);
        }
    }

    /** The lookup function Flink builds for the LOOKUP hint's lookup_miss retry (max-attempts 2, 1 ms). */
    static LookupFunction retrying() {
        return new RetryableLookupFunctionDelegator(new ThresholdLookup(),
                ResultRetryStrategy.fixedDelayRetry(2, 1, RetryPredicates.EMPTY_RESULT_PREDICATE));
    }

    /** Flink's generated fetcher over {@link #retrying()}. */
    public static final class RetryingFetcher extends AbstractRichFunction implements FlatMapFunction<RowData, RowData> {
        private final LookupFunction lookup = retrying();

        public RetryingFetcher() {}

        @Override
        public void open(OpenContext openContext) throws Exception {
            lookup.open(null);
        }

        @Override
        public void flatMap(RowData in, Collector<RowData> out) throws Exception {
            if (in.isNullAt(0)) {
                return;
            }
            Collection<RowData> rows = lookup.lookup(GenericRowData.of(in.getInt(0)));
            if (rows != null) {
                for (RowData r : rows) {
                    out.collect(r);
                }
            }
        }
    }
}
