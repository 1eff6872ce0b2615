package io.ferrystream.ferry.nexmark.generator;

import org.apache.flink.table.data.RowData;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Nexmark's event model as {@link EventGenerator} makes it (docs/nexmark.md#the-generator). */
class EventGeneratorTest {
    private static final long BASE = GeneratorConfig.DEFAULT_BASE_TIME;

    private static GeneratorConfig config(long events, long rate, long seed, int splits) {
        return GeneratorConfig.defaults(events, rate, seed, BASE, splits);
    }

    /** Every event of split 0 of a one-split stream, in order. */
    private static List<RowData> stream(GeneratorConfig config) {
        EventGenerator g = new EventGenerator(config);
        List<RowData> rows = new ArrayList<>();
        for (long k = 1; k <= config.splitEvents(0); k++) {
            rows.add(g.event(config.splitFirstEventId(0) + k, k));
        }
        return rows;
    }

    @Test
    void everyFiftyIdsHoldOnePersonThreeAuctionsAndFortySixBids() {
        List<RowData> rows = stream(config(50_000, 1_000_000, 7, 1));
        int[] kinds = new int[3];
        for (int i = 0; i < rows.size(); i++) {
            int kind = rows.get(i).getInt(0);
            kinds[kind]++;
            long id = 2 + i; // split 0's first event id is 2
            long offset = id % 50;
            assertEquals(offset == 0 ? 0 : offset <= 3 ? 1 : 2, kind, "event id " + id);
            for (int f = 1; f <= 3; f++) {
                assertEquals(f != kind + 1, rows.get(i).isNullAt(f), "only the event's own kind is set");
            }
        }
        assertEquals(1_000, kinds[0]);
        assertEquals(3_000, kinds[1]);
        assertEquals(46_000, kinds[2]);
    }

    @Test
    void personsAndAuctionsGetConsecutiveIdsFromOneThousand() {
        long nextPerson = GeneratorConfig.FIRST_PERSON_ID;
        long nextAuction = GeneratorConfig.FIRST_AUCTION_ID;
        for (RowData r : stream(config(20_000, 1_000_000, 3, 1))) {
            if (r.getInt(0) == EventGenerator.PERSON) {
                // the stream starts at event id 2, inside the first block of 50: its person is in the next
                if (nextPerson == GeneratorConfig.FIRST_PERSON_ID) {
                    nextPerson++;
                }
                assertEquals(nextPerson++, r.getRow(1, 8).getLong(0));
            } else if (r.getInt(0) == EventGenerator.AUCTION) {
                if (nextAuction == GeneratorConfig.FIRST_AUCTION_ID) {
                    nextAuction++; // event id 2 is the block's second auction
                }
                assertEquals(nextAuction++, r.getRow(2, 10).getLong(0));
            }
        }
    }

    @Test
    void bidsPickHotAuctionsAndBiddersAtNexmarksRatios() {
        List<RowData> rows = stream(config(200_000, 1_000_000, 11, 1));
        long bids = 0;
        long hotAuction = 0;
        long hotBidder = 0;
        long hotChannel = 0;
        long lastAuction = GeneratorConfig.FIRST_AUCTION_ID;
        long lastPerson = GeneratorConfig.FIRST_PERSON_ID;
        for (RowData r : rows) {
            switch (r.getInt(0)) {
                case EventGenerator.PERSON -> lastPerson = r.getRow(1, 8).getLong(0);
                case EventGenerator.AUCTION -> lastAuction = r.getRow(2, 10).getLong(0);
                default -> {
                    RowData bid = r.getRow(3, 7);
                    bids++;
                    long auction = bid.getLong(0);
                    long bidder = bid.getLong(1);
                    assertTrue(auction <= lastAuction + 10 && auction >= lastAuction - 101, "auction " + auction);
                    // bidders carry Nexmark's second offset of 1000
                    assertTrue(bidder - 1000 <= lastPerson + 10 && bidder - 1000 >= lastPerson - 1001, "bidder " + bidder);
                    if ((auction - 1000) % 100 == 0 && (auction - 1000) == (lastAuction - 1000) / 100 * 100) {
                        hotAuction++;
                    }
                    if ((bidder - 2000) % 100 == 1 && (bidder - 2000) == (lastPerson - 1000) / 100 * 100 + 1) {
                        hotBidder++;
                    }
                    String channel = bid.getString(3).toString();
                    if (List.of("Google", "Facebook", "Baidu", "Apple").contains(channel)) {
                        hotChannel++;
                    }
                    long price = bid.getLong(2);
                    assertTrue(price >= 100 && price <= 100_000_000, "price " + price);
                    int extra = bid.getString(6).toBytes().length;
                    assertTrue(extra >= 54 && extra < 82, "bid extra of " + extra + " bytes");
                }
            }
        }
        // hot with probability 1 - 1/ratio, plus the cold picks that land on the hot id
        assertEquals(0.5, hotAuction / (double) bids, 0.02);
        assertEquals(0.75, hotBidder / (double) bids, 0.02);
        assertEquals(0.5, hotChannel / (double) bids, 0.02);
    }

    @Test
    void pricesAreLogUniformOverThreeBands() {
        long[] band = new long[3];
        for (RowData r : stream(config(100_000, 1_000_000, 5, 1))) {
            if (r.getInt(0) == EventGenerator.BID) {
                long p = r.getRow(3, 7).getLong(2);
                band[p < 10_000 ? 0 : p < 1_000_000 ? 1 : 2]++;
            }
        }
        long n = band[0] + band[1] + band[2];
        for (long b : band) {
            assertEquals(1 / 3.0, b / (double) n, 0.02); // q15-q17's three price bands
        }
    }

    @Test
    void timestampsFollowTheRateOnOneTimelineForAllSplits() {
        GeneratorConfig c = config(1_000_000, 10_000, 1, 4);
        // four generators at 10,000 events/s together: each one's events are 400 µs apart
        assertEquals(BASE, c.timestamp(2));
        assertEquals(BASE + 1, c.timestamp(3));
        assertEquals(BASE + 400, c.timestamp(1000));
        assertEquals(250_000, c.splitEvents(3));
        assertEquals(1 + 3 * 250_000, c.splitFirstEventId(3));
        EventGenerator g = new EventGenerator(c);
        RowData e = g.event(c.splitFirstEventId(2) + 1000, 1000);
        int kind = e.getInt(0);
        assertEquals(BASE + 400, e.getRow(kind + 1, kind == 0 ? 8 : kind == 1 ? 10 : 7)
                .getTimestamp(kind == 0 ? 6 : 5, 3).getMillisecond());
    }

    @Test
    void anEventIsAFunctionOfItsIdAndSeed() {
        GeneratorConfig c = config(10_000, 1_000_000, 42, 1);
        EventGenerator forward = new EventGenerator(c);
        EventGenerator backward = new EventGenerator(c);
        List<String> a = new ArrayList<>();
        List<String> b = new ArrayList<>();
        for (long k = 1; k <= 2_000; k++) {
            a.add(forward.event(1 + k, k).toString());
        }
        for (long k = 2_000; k >= 1; k--) {
            b.add(0, backward.event(1 + k, k).toString());
        }
        assertEquals(a, b);
        EventGenerator other = new EventGenerator(config(10_000, 1_000_000, 43, 1));
        assertNotEquals(a.get(100), other.event(102, 101).toString(), "another seed, other values");
    }

    @Test
    void auctionsExpireWithinTwiceTheHorizon() {
        GeneratorConfig c = config(100_000, 1_000, 9, 1);
        // 1,666 events ahead at 1,000 events/s: about 1.67 s; lengths are uniform in [1, 2 h]
        long max = 0;
        for (RowData r : stream(c)) {
            if (r.getInt(0) == EventGenerator.AUCTION) {
                RowData a = r.getRow(2, 10);
                long length = a.getTimestamp(6, 3).getMillisecond() - a.getTimestamp(5, 3).getMillisecond();
                assertTrue(length >= 1 && length <= 2 * 1_666 + 1, "auction length " + length);
                max = Math.max(max, length);
            }
        }
        assertTrue(max > 3_000, "lengths reach toward twice the horizon, longest " + max);
    }
}
