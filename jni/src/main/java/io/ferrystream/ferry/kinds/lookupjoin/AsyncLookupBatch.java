package io.ferrystream.ferry.kinds.lookupjoin;

import org.apache.flink.api.common.functions.Function;
import org.apache.flink.streaming.api.datastream.AsyncDataStream;
import org.apache.flink.streaming.api.functions.async.AsyncFunction;
import org.apache.flink.streaming.api.functions.async.CollectionSupplier;
import org.apache.flink.streaming.api.functions.async.ResultFuture;
import org.apache.flink.streaming.runtime.streamrecord.StreamRecord;
import org.apache.flink.table.data.RowData;

import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A batch through Flink's own async function ({@code AsyncLookupJoinRunner} or {@code
 * AsyncLookupJoinWithCalcRunner}, the connector's async function, cache and retries inside it),
 * with the semantics of Flink's {@code AsyncWaitOperator} for one batch:
 *
 * <ul>
 *   <li>{@code asyncInvoke} per probe row in arrival order, at most {@code capacity} requests
 *       in the operator's queue at a time (the next row waits until one leaves it): as in Flink's
 *       {@code OrderedStreamElementQueue}, the ordered mode holds a completed request in the queue
 *       until every earlier one completed too, so a row is invoked only once the row {@code
 *       capacity} places before it and all rows before that one completed; the unordered mode's
 *       queue holds only the uncompleted requests (Flink's {@code UnorderedStreamElementQueue}
 *       hands a completed one on at once). Which requests overlap decides the order in which
 *       lookups (and the retries inside Flink's function) reach the connector;
 *   <li>each request's deadline is {@code timeoutMs} after its invocation (non-positive: none);
 *       at the deadline the function's {@code timeout(input, resultFuture)} is called, as Flink's
 *       operator does (the default fails with {@code TimeoutException("Async function call has
 *       timed out.")});
 *   <li>completions may come from any thread; the task thread waits for them (and deadlines) with
 *       a timed wait on a condition, not through mailbox timers;
 *   <li>results are emitted once every request of the batch completed, in probe order, in both
 *       output modes (probe order is one the unordered mode allows);
 *   <li>the first request completed exceptionally fails the batch with Flink's exception ({@code
 *       "Could not complete the stream element: <record>."}, the cause as Flink gives it); the
 *       outstanding requests are abandoned and nothing of the batch is emitted, later completions
 *       included.
 * </ul>
 */
public final class AsyncLookupBatch implements LookupJoinBatch {
    private static final long serialVersionUID = 1L;

    private final AsyncFunction<RowData, RowData> function;
    private final long timeoutMs;
    private final int capacity;
    private final AsyncDataStream.OutputMode outputMode;

    /**
     * @param function Flink's async function (the lookup join's runner)
     * @param timeoutMs each request's deadline after its invocation; non-positive: none
     * @param capacity the most requests uncompleted at a time, at least 1
     * @param outputMode Flink's output mode (both emit in probe order here)
     */
    public AsyncLookupBatch(
            AsyncFunction<RowData, RowData> function, long timeoutMs, int capacity, AsyncDataStream.OutputMode outputMode) {
        if (capacity < 1) {
            throw new IllegalArgumentException("The number of concurrent async operation should be greater than 0.");
        }
        this.function = Objects.requireNonNull(function, "function");
        this.timeoutMs = timeoutMs;
        this.capacity = capacity;
        this.outputMode = Objects.requireNonNull(outputMode, "outputMode");
    }

    public AsyncFunction<RowData, RowData> asyncFunction() {
        return function;
    }

    public long timeoutMs() {
        return timeoutMs;
    }

    public int capacity() {
        return capacity;
    }

    public AsyncDataStream.OutputMode outputMode() {
        return outputMode;
    }

    @Override
    public Function function() {
        return function;
    }

    @Override
    public String mode() {
        return "async " + outputMode.name().toLowerCase(Locale.ROOT) + ", capacity " + capacity
                + (timeoutMs > 0 ? ", timeout " + timeoutMs + " ms" : ", no timeout");
    }

    @Override
    public void run(List<StreamRecord<RowData>> probes, ProbeContext context, ProbeOutput out) throws Exception {
        Batch batch = new Batch(probes);
        try {
            for (int i = 0; i < probes.size(); i++) {
                batch.awaitBelow(capacity);
                batch.invoke(i);
            }
            batch.awaitBelow(1);
        } finally {
            batch.abandon();
        }
        for (int i = 0; i < probes.size(); i++) {
            out.setProbe(probes.get(i));
            for (RowData row : batch.result(i)) {
                out.collect(row);
            }
        }
    }

    /** One batch's requests; a request's handler only ever touches its own batch. */
    private final class Batch {
        private final List<StreamRecord<RowData>> probes;
        private final Request[] requests;
        private final ReentrantLock lock = new ReentrantLock();
        private final Condition changed = lock.newCondition();
        /** Requests invoked; guarded by lock. */
        private int invoked;
        /** Requests invoked and not completed; guarded by lock. */
        private int uncompleted;
        /** The first request not completed (or {@link #invoked}): the head of the ordered queue; guarded by lock. */
        private int head;
        private Throwable error;
        private int errorIndex = -1;
        private boolean abandoned;

        Batch(List<StreamRecord<RowData>> probes) {
            this.probes = probes;
            this.requests = new Request[probes.size()];
        }

        void invoke(int i) throws Exception {
            Request r = new Request(this, i, timeoutMs > 0, System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Math.max(0, timeoutMs)));
            lock.lock();
            try {
                requests[i] = r;
                invoked = i + 1;
                uncompleted++;
            } finally {
                lock.unlock();
            }
            function.asyncInvoke(probes.get(i).getValue(), r);
        }

        /**
         * Requests in the operator's queue (guarded by lock): ordered, those from the first
         * uncompleted one on (completed ones behind it wait there for their turn, as in Flink's
         * {@code OrderedStreamElementQueue}); unordered, the uncompleted ones.
         */
        private int queued() {
            return outputMode == AsyncDataStream.OutputMode.ORDERED ? invoked - head : uncompleted;
        }

        /** A request completed or failed (guarded by lock): advances the head of the ordered queue past completed requests. */
        private void finish(Request r) {
            r.finished = true;
            uncompleted--;
            while (head < invoked && requests[head].finished) {
                head++;
            }
            changed.signalAll();
        }

        /**
         * Waits (task thread) until fewer than {@code limit} requests are in the queue ({@link
         * #queued()}), calling the function's timeout for each request whose deadline passes;
         * throws on the first failed request.
         */
        void awaitBelow(int limit) throws Exception {
            while (true) {
                Request due = null;
                lock.lock();
                try {
                    failIfFailed();
                    if (queued() < limit) {
                        return;
                    }
                    long now = System.nanoTime();
                    long wait = Long.MAX_VALUE;
                    for (Request r : requests) {
                        if (r == null || r.done.get() || !r.hasDeadline || r.timedOut) {
                            continue;
                        }
                        long left = r.deadline - now;
                        if (left <= 0) {
                            due = r;
                            break;
                        }
                        wait = Math.min(wait, left);
                    }
                    if (due == null) {
                        if (wait == Long.MAX_VALUE) {
                            changed.await();
                        } else {
                            changed.awaitNanos(wait);
                        }
                        continue;
                    }
                    due.timedOut = true;
                } finally {
                    lock.unlock();
                }
                // as AsyncWaitOperator's timer: the function decides (Flink's default fails)
                function.timeout(probes.get(due.index).getValue(), due);
            }
        }

        private void failIfFailed() throws Exception {
            if (error != null) {
                throw new Exception("Could not complete the stream element: " + probes.get(errorIndex) + '.', error);
            }
        }

        void completed(Request r, Collection<RowData> rows, CollectionSupplier<RowData> supplier) {
            lock.lock();
            try {
                if (abandoned) {
                    return;
                }
                r.rows = rows;
                r.supplier = supplier;
                finish(r);
            } finally {
                lock.unlock();
            }
        }

        void failed(Request r, Throwable t) {
            lock.lock();
            try {
                if (abandoned) {
                    return;
                }
                if (error == null) {
                    error = t;
                    errorIndex = r.index;
                }
                finish(r);
            } finally {
                lock.unlock();
            }
        }

        /** From now on completions are dropped: after the batch ended or failed. */
        void abandon() {
            lock.lock();
            try {
                abandoned = true;
            } finally {
                lock.unlock();
            }
        }

        /** Request i's rows (task thread, after every request completed): a supplier runs here, as Flink runs it in the mailbox. */
        Collection<RowData> result(int i) throws Exception {
            Request r = requests[i];
            Collection<RowData> rows = r.supplier != null ? r.supplier.get() : r.rows;
            return rows == null ? Collections.emptyList() : rows;
        }
    }

    /** The result future of one probe row: completes once, from any thread (Flink's ResultHandler). */
    private static final class Request implements ResultFuture<RowData> {
        private final Batch batch;
        final int index;
        final boolean hasDeadline;
        /** System.nanoTime() of the deadline, if it has one. */
        final long deadline;
        final AtomicBoolean done = new AtomicBoolean();
        /** The function's timeout was called; guarded by the batch's lock. */
        boolean timedOut;
        /** Completed or failed, as the batch saw it; guarded by the batch's lock. */
        boolean finished;
        Collection<RowData> rows;
        CollectionSupplier<RowData> supplier;

        Request(Batch batch, int index, boolean hasDeadline, long deadline) {
            this.batch = batch;
            this.index = index;
            this.hasDeadline = hasDeadline;
            this.deadline = deadline;
        }

        @Override
        public void complete(Collection<RowData> result) {
            if (done.compareAndSet(false, true)) {
                batch.completed(this, result, null);
            }
        }

        @Override
        public void complete(CollectionSupplier<RowData> supplier) {
            if (done.compareAndSet(false, true)) {
                batch.completed(this, null, supplier);
            }
        }

        @Override
        public void completeExceptionally(Throwable error) {
            if (done.compareAndSet(false, true)) {
                batch.failed(this, error);
            }
        }
    }
}
