package io.ferrystream.ferry.nexmark.generator;

import java.io.Serializable;

/**
 * What a Nexmark event stream is made of: Nexmark's model parameters plus the seed and base time
 * that make every event reproducible (docs/nexmark.md#the-generator).
 *
 * <p>The stream is cut into {@code splits} generators that share one event-time line: each
 * generator's k-th event (k from 1) happens at {@code baseTime + ⌊k · delayUs⌋ / 1000} ms with
 * {@code delayUs = 10⁶ / firstEventRate · splits}, so together they produce {@code firstEventRate}
 * events per second of event time. Split i owns the contiguous block of {@link #splitEvents(int)}
 * event ids starting after {@link #splitFirstEventId(int)}; an event's kind, its own id and its
 * random values are functions of its event id and the seed only.
 *
 * @param events events in the whole stream, over all splits (0: unbounded)
 * @param firstEventRate events per second of event time, over all splits
 * @param personProportion persons among every {@link #totalProportion()} events (Nexmark: 1)
 * @param auctionProportion auctions among them (3)
 * @param bidProportion bids among them (46)
 * @param hotAuctionRatio a bid is on the hot auction with probability 1 − 1/ratio (2)
 * @param hotBiddersRatio a bid is by the hot bidder with probability 1 − 1/ratio (4)
 * @param hotSellersRatio an auction is by the hot seller with probability 1 − 1/ratio (4)
 * @param avgPersonSize the person rows' average size in bytes, which the extra field pads to (200)
 * @param avgAuctionSize likewise for auctions (500)
 * @param avgBidSize likewise for bids (100)
 * @param inFlightAuctions auctions a cold bid may pick from, counting back from the last (100)
 * @param activePeople people a cold seller or bidder may be picked from (1000)
 * @param seed the seed every event's random values derive from
 * @param baseTime event time of event number 0, epoch milliseconds (UTC)
 * @param splits generators, each a source split
 */
public record GeneratorConfig(
        long events,
        long firstEventRate,
        int personProportion,
        int auctionProportion,
        int bidProportion,
        int hotAuctionRatio,
        int hotBiddersRatio,
        int hotSellersRatio,
        int avgPersonSize,
        int avgAuctionSize,
        int avgBidSize,
        int inFlightAuctions,
        int activePeople,
        long seed,
        long baseTime,
        int splits)
        implements Serializable {

    /** Nexmark's first person id; bidders are offset by it twice (docs/nexmark.md#ids). */
    public static final long FIRST_PERSON_ID = 1000;
    /** Nexmark's first auction id. */
    public static final long FIRST_AUCTION_ID = 1000;
    /** Nexmark's first category id; categories are 10 to 14. */
    public static final long FIRST_CATEGORY_ID = 10;

    /** 2026-01-01T00:00:00Z, the default base time. */
    public static final long DEFAULT_BASE_TIME = 1_767_225_600_000L;

    /** Events of an unbounded stream: Nexmark's own bound for "unbounded", far beyond any run. */
    static final long UNBOUNDED_EVENTS = Long.MAX_VALUE / (50L * 500);

    public GeneratorConfig {
        require(events >= 0, "events.num must be 0 (unbounded) or positive, got " + events);
        require(firstEventRate > 0, "first-event.rate must be positive, got " + firstEventRate);
        require(personProportion > 0 && auctionProportion > 0 && bidProportion > 0,
                "person.proportion, auction.proportion and bid.proportion must be positive");
        require(hotAuctionRatio > 0 && hotBiddersRatio > 0 && hotSellersRatio > 0, "hot ratios must be positive");
        require(avgPersonSize > 0 && avgAuctionSize > 0 && avgBidSize > 0, "average sizes must be positive");
        require(inFlightAuctions > 0 && activePeople > 0, "in-flight auctions and active people must be positive");
        require(splits > 0, "splits must be positive, got " + splits);
        require(events == 0 || events >= splits, "events.num (" + events + ") must be at least the number of splits (" + splits + ")");
    }

    private static void require(boolean condition, String message) {
        if (!condition) {
            throw new IllegalArgumentException("nexmark: " + message);
        }
    }

    /** Nexmark's defaults (1 : 3 : 46, hot ratios 2, 4, 4, sizes 200, 500, 100 bytes) for {@code events} events. */
    public static GeneratorConfig defaults(long events, long firstEventRate, long seed, long baseTime, int splits) {
        return new GeneratorConfig(events, firstEventRate, 1, 3, 46, 2, 4, 4, 200, 500, 100, 100, 1000, seed, baseTime, splits);
    }

    public int totalProportion() {
        return personProportion + auctionProportion + bidProportion;
    }

    public boolean bounded() {
        return events > 0;
    }

    /** Events in the whole stream: {@link #events}, or a bound no run reaches when unbounded. */
    long streamEvents() {
        return events > 0 ? events : UNBOUNDED_EVENTS;
    }

    /** Events of split {@code split}: an equal share, the last split taking the remainder. */
    public long splitEvents(int split) {
        long share = streamEvents() / splits;
        return split == splits - 1 ? streamEvents() - share * (splits - 1) : share;
    }

    /** The event id before split {@code split}'s first: its k-th event (k from 1) has id this + k. */
    public long splitFirstEventId(int split) {
        return 1 + split * (streamEvents() / splits);
    }

    /** Microseconds of event time between two events of one split. */
    double delayMicros() {
        return 1_000_000.0 / firstEventRate * splits;
    }

    /** Event time, epoch milliseconds, of a split's event number {@code n} (its n-th event, from 1). */
    public long timestamp(long n) {
        return baseTime + (long) (n * delayMicros()) / 1000L;
    }
}
