package io.ferrystream.ferry.nexmark.generator;

/**
 * The random values of one event: a SplitMix64 sequence started from the seed and the event id,
 * so an event's values do not depend on which split or subtask makes it, nor on the events before
 * it. One instance is reset per event (no allocation); not thread-safe.
 */
final class EventRandom {
    private static final long GOLDEN_GAMMA = 0x9e3779b97f4a7c15L;

    private long state;

    /** Starts the sequence of the event {@code eventId} of stream {@code seed}. */
    void reset(long seed, long eventId) {
        state = mix(seed ^ mix(eventId + GOLDEN_GAMMA));
    }

    /** SplitMix64's output function. */
    static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    long nextLong() {
        state += GOLDEN_GAMMA;
        return mix(state);
    }

    /** A signed 32-bit value, every value equally likely. */
    int nextInt() {
        return (int) (nextLong() >>> 32);
    }

    /** Uniform in [0, bound), bound > 0, without modulo bias. */
    int nextInt(int bound) {
        // Lemire's multiply-and-reject over the top 32 bits
        long m = (nextLong() >>> 32) * bound;
        long low = m & 0xffffffffL;
        if (low < bound) {
            long threshold = (0x100000000L - bound) % bound;
            while (low < threshold) {
                m = (nextLong() >>> 32) * bound;
                low = m & 0xffffffffL;
            }
        }
        return (int) (m >>> 32);
    }

    /** Uniform in [0, bound), bound > 0. */
    long nextLong(long bound) {
        if (bound <= Integer.MAX_VALUE) {
            return nextInt((int) bound);
        }
        long limit = Long.MAX_VALUE - Long.MAX_VALUE % bound;
        long r;
        do {
            r = nextLong() >>> 1;
        } while (r >= limit);
        return r % bound;
    }

    /** Uniform in [0, 1), 53 bits. */
    double nextDouble() {
        return (nextLong() >>> 11) * 0x1.0p-53;
    }
}
