package io.ferrystream.ferry.operators;

import java.io.Serializable;

/**
 * When a native operator hands its buffered rows to Go. Two policies:
 *
 * <ul>
 *   <li>{@link #of(int, long) Batches} ({@code ferry.batch.size}, {@code ferry.batch.max-delay}):
 *       a transport detail that never changes results. An input's batch is processed when it
 *       holds {@code size} rows, and every pending batch when the oldest pending row has waited
 *       {@code maxDelayMs} of processing time ({@code 0}: each row at once).
 *   <li>{@link #bundles(long) Bundles}: a batch is exactly one bundle of Flink's mini-batch
 *       operator, whose results depend on where a bundle ends: {@code size} rows (of all inputs
 *       together, as Flink's count bundle triggers count them), never cut by time.
 * </ul>
 *
 * Under both, every pending row is processed before a watermark is forwarded, before a
 * checkpoint barrier and at the end of input ({@link AbstractNativeOperator}). {@code size}: rows
 * per batch (per bundle when {@code bundled}); {@code maxDelayMs}: longest wait of a row in a
 * partial batch, in ms (0: none; always 0 for bundles).
 */
public record Batching(int size, long maxDelayMs, boolean bundled) implements Serializable {
    /** Validates the fields: size at least 1, a non-negative delay, none for bundles. */
    public Batching {
        if (size < 1 || maxDelayMs < 0 || (bundled && maxDelayMs != 0)) {
            throw new IllegalArgumentException("invalid batching: size " + size + ", max delay " + maxDelayMs
                    + " ms, bundled " + bundled);
        }
    }

    /**
     * Batches of {@code size} rows ({@code ferry.batch.size}), processed at the latest
     * {@code maxDelayMs} after their first row ({@code ferry.batch.max-delay}; 0 processes each
     * row at once).
     */
    public static Batching of(int size, long maxDelayMs) {
        if (size < 1) {
            throw new IllegalArgumentException("ferry.batch.size must be at least 1, got " + size);
        }
        return new Batching(size, Math.max(0, maxDelayMs), false);
    }

    /**
     * One batch per bundle of Flink's mini-batch operator ({@code table.exec.mini-batch.size}
     * rows, cut early by watermarks, barriers and the end of input).
     */
    public static Batching bundles(long bundleSize) {
        if (bundleSize < 1) {
            throw new IllegalArgumentException("a bundle has at least one row, got " + bundleSize);
        }
        return new Batching((int) Math.min(Integer.MAX_VALUE, bundleSize), 0, true);
    }

    @Override
    public String toString() {
        return bundled ? "bundles of " + size + " rows" : "batches of " + size + " rows, max delay " + maxDelayMs + " ms";
    }
}
