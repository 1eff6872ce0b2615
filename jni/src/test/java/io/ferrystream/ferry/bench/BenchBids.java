package io.ferrystream.ferry.bench;

import org.apache.flink.table.data.DecimalData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.binary.BinaryRowData;
import org.apache.flink.table.data.writer.BinaryRowWriter;

import java.util.SplittableRandom;

/**
 * Nexmark-shaped bids {@code (auction BIGINT, value)} as {@link BinaryRowData}, the form in which
 * rows reach a group aggregate in Flink (deserialized from its hash exchange); the value is the
 * price as BIGINT or as DECIMAL(18, 2) (unscaled = the same cents), or the channel as STRING
 * ({@link OperatorBench.Values}). Same shape as the Go perf harness (tests/perf/gen.go), not the
 * same numbers: half of the bids go to 16 hot auctions spread over the key space, the rest
 * uniformly over {@code keys} auctions from id 1000 on; prices follow Nexmark's
 * {@code round(10^(6u) * 100)}, channels its BidGenerator (half on four hot channels, the rest
 * {@code channel-N}, N below 10,000). Seeded, deterministic; the BIGINT and DECIMAL bids are the
 * same bids.
 */
final class BenchBids {
    private BenchBids() {}

    static final long FIRST_AUCTION_ID = 1000;
    static final int HOT_RATIO = 2; // P(hot) = 1 - 1/HOT_RATIO
    static final int HOT_KEYS = 16;
    static final long SEED = 42;
    static final String[] HOT_CHANNELS = {"Google", "Facebook", "Baidu", "Apple"};
    static final int HOT_CHANNELS_RATIO = 2;
    static final int CHANNELS = 10_000;

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

    /** A channel: drawn after the price, so the auctions and prices do not depend on it. */
    static String channel(SplittableRandom r) {
        return r.nextInt(HOT_CHANNELS_RATIO) > 0
                ? HOT_CHANNELS[r.nextInt(HOT_CHANNELS.length)]
                : "channel-" + r.nextInt(CHANNELS);
    }

    /** {@code n} bids {@code (auction BIGINT, price BIGINT)} over {@code keys} auctions. */
    static RowData[] generate(int keys, int n) {
        return generate(OperatorBench.Values.BIGINT, keys, n);
    }

    /** {@code n} bids {@code (auction BIGINT, value)} over {@code keys} auctions. */
    static RowData[] generate(OperatorBench.Values values, int keys, int n) {
        SplittableRandom r = new SplittableRandom(SEED * 1_000_003L + keys);
        long[] hot = hotSet(keys);
        RowData[] rows = new RowData[n];
        for (int i = 0; i < n; i++) {
            long auction = r.nextInt(HOT_RATIO) > 0
                    ? hot[r.nextInt(hot.length)]
                    : FIRST_AUCTION_ID + r.nextInt(keys);
            rows[i] = row(values, auction, r);
        }
        return rows;
    }

    /**
     * One bid per auction of the key space, in a scrambled order ({@code i * p mod keys}, p
     * coprime to keys): fed before timing, so every timed row updates a live key.
     */
    static RowData[] prefill(int keys) {
        return prefill(OperatorBench.Values.BIGINT, keys);
    }

    /** {@link #prefill(int)} with values of {@code values}. */
    static RowData[] prefill(OperatorBench.Values values, int keys) {
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
            rows[i] = row(values, FIRST_AUCTION_ID + (i * p) % keys, r);
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

    /** A bid of {@code auction} whose value is drawn from {@code r} (a price, then a channel). */
    static BinaryRowData row(OperatorBench.Values values, long auction, SplittableRandom r) {
        long price = price(r);
        switch (values) {
            case DECIMAL: {
                BinaryRowData row = new BinaryRowData(2);
                BinaryRowWriter w = new BinaryRowWriter(row);
                w.writeLong(0, auction);
                w.writeDecimal(1, DecimalData.fromUnscaledLong(price, 18, 2), 18);
                w.complete();
                return row;
            }
            case STRING: {
                BinaryRowData row = new BinaryRowData(2);
                BinaryRowWriter w = new BinaryRowWriter(row);
                w.writeLong(0, auction);
                w.writeString(1, StringData.fromString(channel(r)));
                w.complete();
                return row;
            }
            default:
                return row(auction, price);
        }
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
