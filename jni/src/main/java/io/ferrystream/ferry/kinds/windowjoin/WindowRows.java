package io.ferrystream.ferry.kinds.windowjoin;

import org.apache.flink.table.data.RowData;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * The rows of one input of a native window join, kept in the JVM while their windows are open
 * (docs/operators/window-join.md#where-rows-live). Rows are grouped by window end in buckets; a
 * row's handle is its bucket's id (bits 32..62) and its index in the bucket (bits 0..31), so
 * handles are never negative. Rows restored from a snapshot keep the negative handles the library
 * gave them. A bucket goes as a whole once the watermark reaches its windows' timer time, when
 * the library has fired every window it holds; the restored rows go once the watermark reaches
 * the last of their timer times. Not thread-safe.
 */
final class WindowRows {
    /** The rows of one window end, in arrival order. */
    private static final class Bucket {
        final int id;
        final long windowEnd;
        /** The timer time of the window end; Long.MAX_VALUE: never fires. */
        final long trigger;

        RowData[] rows = new RowData[16];
        int size;

        Bucket(int id, long windowEnd, long trigger) {
            this.id = id;
            this.windowEnd = windowEnd;
            this.trigger = trigger;
        }
    }

    private final HashMap<Long, Bucket> byEnd = new HashMap<>();
    private final HashMap<Integer, Bucket> byId = new HashMap<>();
    private final HashMap<Long, RowData> restored = new HashMap<>();
    /** The latest timer time of the restored rows. */
    private long restoredTrigger = Long.MIN_VALUE;

    private Bucket lastAdded;
    private Bucket lastRead;
    private int nextId;

    /** Keeps {@code row} of the window ending at {@code windowEnd}, whose timer time is {@code trigger}; returns its handle. */
    long add(RowData row, long windowEnd, long trigger) {
        Bucket b = lastAdded;
        if (b == null || b.windowEnd != windowEnd) {
            b = byEnd.get(windowEnd);
            if (b == null) {
                b = new Bucket(nextId, windowEnd, trigger);
                nextId = (nextId + 1) & Integer.MAX_VALUE; // 2^31 window ends later, the first id's bucket is long gone
                byEnd.put(windowEnd, b);
                byId.put(b.id, b);
            }
            lastAdded = b;
        }
        if (b.size == b.rows.length) {
            b.rows = java.util.Arrays.copyOf(b.rows, b.size * 2);
        }
        b.rows[b.size] = row;
        return (long) b.id << 32 | b.size++;
    }

    /** The row of {@code handle}, or null when this input holds none. */
    RowData get(long handle) {
        if (handle < 0) {
            return restored.get(handle);
        }
        int id = (int) (handle >>> 32);
        Bucket b = lastRead;
        if (b == null || b.id != id) {
            b = byId.get(id);
            if (b == null) {
                return null;
            }
            lastRead = b;
        }
        int i = (int) handle;
        return i < b.size ? b.rows[i] : null;
    }

    /** Keeps a restored row under the library's (negative) handle, until {@code trigger}. */
    void restore(long handle, RowData row, long trigger) {
        restored.put(handle, row);
        restoredTrigger = Math.max(restoredTrigger, trigger);
    }

    /** Drops every row whose window's timer time is at most {@code watermark}. */
    void release(long watermark) {
        Iterator<Map.Entry<Long, Bucket>> it = byEnd.entrySet().iterator();
        while (it.hasNext()) {
            Bucket b = it.next().getValue();
            if (b.trigger <= watermark) {
                it.remove();
                byId.remove(b.id);
                if (lastAdded == b) {
                    lastAdded = null;
                }
                if (lastRead == b) {
                    lastRead = null;
                }
            }
        }
        if (!restored.isEmpty() && restoredTrigger <= watermark) {
            restored.clear();
        }
    }

    /** Receives each kept row with its handle. */
    interface RowConsumer {
        void accept(long handle, RowData row);
    }

    /** Hands every kept row to {@code c}. */
    void forEach(RowConsumer c) {
        List<Bucket> buckets = new ArrayList<>(byEnd.values());
        for (Bucket b : buckets) {
            for (int i = 0; i < b.size; i++) {
                c.accept((long) b.id << 32 | i, b.rows[i]);
            }
        }
        for (Map.Entry<Long, RowData> e : restored.entrySet()) {
            c.accept(e.getKey(), e.getValue());
        }
    }

    /** The number of rows kept. */
    long size() {
        long n = restored.size();
        for (Bucket b : byEnd.values()) {
            n += b.size;
        }
        return n;
    }
}
