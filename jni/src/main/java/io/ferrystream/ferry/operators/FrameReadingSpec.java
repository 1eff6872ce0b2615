package io.ferrystream.ferry.operators;

/**
 * The spec of a kind whose operator can read Ferry's columnar exchange (the global and the
 * incremental aggregate): its input then is frames of the rows the spec describes, and the
 * library cuts Flink's count bundles itself (docs/abi.md#frames).
 */
public interface FrameReadingSpec {
    /**
     * This spec reading frames, cutting bundles of {@code bundleSize} rows, as Flink's count
     * trigger would ({@link NativeSpec#readsFrames}).
     */
    NativeSpec withFrames(long bundleSize);

    /** {@code bundleSize}, refused unless a bundle holds at least one row. */
    static long checkBundleSize(long bundleSize) {
        if (bundleSize < 1) {
            throw new IllegalArgumentException("a bundle holds at least one row, not " + bundleSize);
        }
        return bundleSize;
    }
}
