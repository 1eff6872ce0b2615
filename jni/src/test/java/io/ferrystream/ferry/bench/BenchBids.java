package io.ferrystream.ferry.bench;

import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.writer.BinaryRowWriter;

import java.util.SplittableRandom;

/**
 * Nexmark-shaped bids {@code (auction BIGINT, price BIGINT)} as {@link BinaryRowData}, the form
 * in which rows reach a group aggregate in Flink (deserialized from its hash exchange). Same
 * shape as the Go perf harness (tests/perf/gen.go), not the same numbers: half of the bids go to
 * 16 hot auctions spread over the key space, the rest uniformly over {@code keys} auctions from
 * id 1000 on; prices follow Nexmark's {@code round(10^(6u) * 100)}. Seeded, deterministic.
 */
final class BenchBids {
    private BenchBids() {}

    static final long FIRST_AUCTION_ID = 1000;
    static final int HOT_RATIO = 2; // P(hot) = 1 - 1/HOT_RATIO
    static final int HOT_KEYS = 16;
    static final long SEED = 42;

    static long[] hotSet(int keys) {
        int h = Math.max(1, Math.min(HOT_KEYS, keys));
        long[] hot = new long[h];
        for (int j = 0; j < h; j++) {
            hot[j] = FIRST_AUCTION_ID + (long) j * (keys / h);
        }
        return hot;
    }

    static long price(SplittableRandom r) {
        return Math.round(Math.pow(10, r.nextDouble() * 6) * 100);
    }

    /** {@code n} bids over {@code keys} auctions. */
    static RowData[] generate(int keys, int n) {
        SplittableRandom r = new SplittableRandom(SEED * 1_000_003L + keys);
        long[] hot = hotSet(keys);
        RowData[] rows = new RowData[n];
        for (int i = 0; i < n; i++) {
            long auction = r.nextInt(HOT_RATIO) > 0
                    ? hot[r.nextInt(hot.length)]
                    : FIRST_AUCTION_ID + r.nextInt(keys);
            rows[i] = row(auction, price(r));
        }
        return rows;
    }

    /**
     * One bid per auction of the key space, in a scrambled order ({@code i * p mod keys}, p
     * coprime to keys): fed before timing, so every timed row updates a live key.
     */
    static RowData[] prefill(int keys) {
        SplittableRandom r = new SplittableRandom(SEED + keys);
        long p = 2654435761L % keys;
        if (p == 0) {
            p = 1;
        }
        while (gcd(p, keys) != 1) {
            p++;
        }
        RowData[] rows = new RowData[keys];
        for (int i = 0; i < keys; i++) {
            rows[i] = row(FIRST_AUCTION_ID + (i * p) % keys, price(r));
        }
        return rows;
    }

    private static long gcd(long a, long b) {
        while (b != 0) {
            long t = a % b;
            a = b;
            b = t;
        }
        return a;
    }

    static BinaryRowData row(long auction, long price) {
        BinaryRowData row = new BinaryRowData(2);
        BinaryRowWriter w = new BinaryRowWriter(row);
        w.writeLong(0, auction);
        w.writeLong(1, price);
        w.complete();
        return row;
    }
}
