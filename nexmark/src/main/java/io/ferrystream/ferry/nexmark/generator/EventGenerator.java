package io.ferrystream.ferry.nexmark.generator;

import org.apache.flink.core.memory.MemorySegment;
import org.apache.flink.core.memory.MemorySegmentFactory;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.data.TimestampData;
import org.apache.flink.table.data.binary.BinaryStringData;

import java.nio.charset.StandardCharsets;

/**
 * Nexmark's events as rows of its {@code datagen} table: {@code (event_type INT, person ROW<8>,
 * auction ROW<10>, bid ROW<7>)}, the row of the event's own kind set and the others NULL
 * (docs/nexmark.md#the-generator for the model: kinds, ids, hot and cold picks, prices, strings
 * and padding).
 *
 * <p>{@link #event(long, long)} is a pure function of the event id, the split's event number and
 * {@link GeneratorConfig}: the seed fixes every random value, the base time every timestamp. The
 * strings Nexmark draws once per JVM (four hot URLs, 10,000 channel URLs, a 1 MiB pool that
 * padding is cut from) are drawn here once per generator from the seed, so every generator of a
 * stream holds the same. One generator per reader; not thread-safe.
 */
public final class EventGenerator {
    public static final int PERSON = 0;
    public static final int AUCTION = 1;
    public static final int BID = 2;

    private static final int CATEGORIES = 5;
    /** Cold picks may reach this many ids past the last person or auction created. */
    private static final int ID_LEAD = 10;
    /** Hot sellers, bidders and auctions are the first (bidders: second) id of each block of 100. */
    private static final int HOT_BLOCK = 100;
    private static final int CHANNELS = 10_000;
    private static final int POOL_BYTES = 1 << 20;
    private static final int MIN_STRING = 3;

    private static final String[] HOT_CHANNELS = {"Google", "Facebook", "Baidu", "Apple"};
    private static final String[] STATES = {"AZ", "CA", "ID", "OR", "WA", "WY"};
    private static final String[] CITIES =
            {"Phoenix", "Los Angeles", "San Francisco", "Boise", "Portland", "Bend", "Redmond", "Seattle", "Kent", "Cheyenne"};
    private static final String[] FIRST_NAMES =
            {"Peter", "Paul", "Luke", "John", "Saul", "Vicky", "Kate", "Julie", "Sarah", "Deiter", "Walter"};
    private static final String[] LAST_NAMES = {"Shultz", "Abrams", "Spencer", "White", "Bartels", "Walton", "Smith", "Jones", "Noris"};
    private static final int[] NAME_BYTES = new int[FIRST_NAMES.length * LAST_NAMES.length];

    static {
        for (int f = 0; f < FIRST_NAMES.length; f++) {
            for (int l = 0; l < LAST_NAMES.length; l++) {
                NAME_BYTES[f * LAST_NAMES.length + l] = FIRST_NAMES[f].length() + 1 + LAST_NAMES[l].length();
            }
        }
    }

    private final GeneratorConfig config;
    private final EventRandom random = new EventRandom();
    /** Padding is cut from here: Nexmark's pool of letters 'H'..'z' (its signed-remainder quirk kept). */
    private final MemorySegment[] pool;
    private final StringData[] hotChannels = new StringData[HOT_CHANNELS.length];
    private final StringData[] hotUrls = new StringData[HOT_CHANNELS.length];
    private final StringData[] channelNames = new StringData[CHANNELS];
    private final StringData[] channelUrls = new StringData[CHANNELS];
    private final StringData[] states = strings(STATES);
    private final StringData[] cities = strings(CITIES);
    /** Every "first last" name, first name major. */
    private final StringData[] names = new StringData[NAME_BYTES.length];

    public EventGenerator(GeneratorConfig config) {
        this.config = config;
        // The per-stream strings use their own sequences: event ids are positive, these are not.
        random.reset(config.seed(), -1);
        pool = new MemorySegment[] {MemorySegmentFactory.wrap(letterPool(random))};
        random.reset(config.seed(), -2);
        for (int i = 0; i < HOT_CHANNELS.length; i++) {
            hotChannels[i] = StringData.fromString(HOT_CHANNELS[i]);
            hotUrls[i] = StringData.fromString(baseUrl());
        }
        for (int i = 0; i < CHANNELS; i++) {
            String url = baseUrl();
            if (random.nextInt(10) > 0) {
                url = url + "&channel_id=" + Math.abs(Integer.reverse(i));
            }
            channelNames[i] = StringData.fromString("channel-" + i);
            channelUrls[i] = StringData.fromString(url);
        }
        for (int f = 0; f < FIRST_NAMES.length; f++) {
            for (int l = 0; l < LAST_NAMES.length; l++) {
                names[f * LAST_NAMES.length + l] = StringData.fromString(FIRST_NAMES[f] + " " + LAST_NAMES[l]);
            }
        }
    }

    public GeneratorConfig config() {
        return config;
    }

    /** The kind of event {@code eventId}: {@link #PERSON}, {@link #AUCTION} or {@link #BID}. */
    public int kind(long eventId) {
        long rem = eventId % config.totalProportion();
        return rem < config.personProportion() ? PERSON
                : rem < config.personProportion() + config.auctionProportion() ? AUCTION : BID;
    }

    /**
     * The event with id {@code eventId}, the {@code number}-th of its split (from 1), as a row of
     * Nexmark's table.
     */
    public RowData event(long eventId, long number) {
        random.reset(config.seed(), eventId);
        long time = config.timestamp(number);
        GenericRowData row = new GenericRowData(4);
        int kind = kind(eventId);
        row.setField(0, kind);
        switch (kind) {
            case PERSON -> row.setField(1, person(eventId, time));
            case AUCTION -> row.setField(2, auction(eventId, number, time));
            default -> row.setField(3, bid(eventId, time));
        }
        return row;
    }

    private RowData person(long eventId, long time) {
        long id = lastPerson(eventId) + GeneratorConfig.FIRST_PERSON_ID;
        int n = random.nextInt(names.length);
        byte[] email = concat(string(7, ' '), "@".getBytes(StandardCharsets.US_ASCII), string(5, ' '),
                ".com".getBytes(StandardCharsets.US_ASCII));
        byte[] card = creditCard();
        int c = random.nextInt(CITIES.length);
        StringData state = states[random.nextInt(states.length)];
        int size = 8 + NAME_BYTES[n] + email.length + card.length + CITIES[c].length() + 2;
        return GenericRowData.of(id, names[n], BinaryStringData.fromBytes(email), BinaryStringData.fromBytes(card), cities[c], state,
                TimestampData.fromEpochMillis(time), extra(size, config.avgPersonSize()));
    }

    private RowData auction(long eventId, long number, long time) {
        long id = lastAuction(eventId) + GeneratorConfig.FIRST_AUCTION_ID;
        long seller = random.nextInt(config.hotSellersRatio()) > 0
                ? lastPerson(eventId) / HOT_BLOCK * HOT_BLOCK
                : randomPerson(eventId);
        seller += GeneratorConfig.FIRST_PERSON_ID;
        long category = GeneratorConfig.FIRST_CATEGORY_ID + random.nextInt(CATEGORIES);
        long initialBid = price();
        long expires = time + auctionLength(number, time);
        byte[] itemName = string(20, ' ');
        byte[] description = string(100, ' ');
        long reserve = initialBid + price();
        int size = 8 + itemName.length + description.length + 40;
        return GenericRowData.of(id, BinaryStringData.fromBytes(itemName), BinaryStringData.fromBytes(description),
                initialBid, reserve, TimestampData.fromEpochMillis(time), TimestampData.fromEpochMillis(expires), seller,
                category, extra(size, config.avgAuctionSize()));
    }

    private RowData bid(long eventId, long time) {
        long auction = random.nextInt(config.hotAuctionRatio()) > 0
                ? lastAuction(eventId) / HOT_BLOCK * HOT_BLOCK
                : randomAuction(eventId);
        auction += GeneratorConfig.FIRST_AUCTION_ID;
        long bidder = random.nextInt(config.hotBiddersRatio()) > 0
                ? lastPerson(eventId) / HOT_BLOCK * HOT_BLOCK + 1
                : randomPerson(eventId);
        // Nexmark's generator adds the first person id twice to a bidder (docs/nexmark.md#ids).
        bidder += 2 * GeneratorConfig.FIRST_PERSON_ID;
        long price = price();
        StringData channel;
        StringData url;
        if (random.nextInt(2) > 0) {
            int hot = random.nextInt(HOT_CHANNELS.length);
            channel = hotChannels[hot];
            url = hotUrls[hot];
        } else {
            int c = random.nextInt(CHANNELS);
            channel = channelNames[c];
            url = channelUrls[c];
        }
        return GenericRowData.of(auction, bidder, price, channel, url, TimestampData.fromEpochMillis(time),
                extra(32, config.avgBidSize()));
    }

    /** Base-0 id of the last person created at or before event {@code eventId}. */
    long lastPerson(long eventId) {
        long epoch = eventId / config.totalProportion();
        long offset = Math.min(eventId % config.totalProportion(), config.personProportion() - 1);
        return epoch * config.personProportion() + offset;
    }

    /** Base-0 id of the last auction created at or before event {@code eventId}. */
    long lastAuction(long eventId) {
        long epoch = eventId / config.totalProportion();
        long offset = eventId % config.totalProportion();
        if (offset < config.personProportion()) {
            epoch--; // a person: the previous epoch's last auction
            offset = config.auctionProportion() - 1;
        } else if (offset >= config.personProportion() + config.auctionProportion()) {
            offset = config.auctionProportion() - 1; // a bid: this epoch's last auction
        } else {
            offset -= config.personProportion();
        }
        return epoch * config.auctionProportion() + offset;
    }

    /** A base-0 person among the last {@code activePeople} created, or one of the next {@value #ID_LEAD}. */
    private long randomPerson(long eventId) {
        long people = lastPerson(eventId) + 1;
        long active = Math.min(people, config.activePeople());
        return people - active + random.nextLong(active + ID_LEAD);
    }

    /** A base-0 auction among the last {@code inFlightAuctions} created, or one of the next {@value #ID_LEAD}. */
    private long randomAuction(long eventId) {
        long last = lastAuction(eventId);
        long first = Math.max(last - config.inFlightAuctions(), 0);
        return first + random.nextLong(last - first + 1 + ID_LEAD);
    }

    /** Nexmark's auction length: on average the event time until {@code inFlightAuctions} more auctions exist. */
    private long auctionLength(long number, long time) {
        long eventsForAuctions = (long) config.inFlightAuctions() * config.totalProportion() / config.auctionProportion();
        long horizon = config.timestamp(number + eventsForAuctions) - time;
        return 1 + random.nextLong(Math.max(horizon * 2, 1));
    }

    /** Log-uniform in [100, 10⁸): cents of 10^(6u) dollars, rounded. */
    private long price() {
        return Math.round(Math.pow(10.0, random.nextDouble() * 6.0) * 100.0);
    }

    /** Four zero-padded groups of four digits, separated by spaces. */
    private byte[] creditCard() {
        byte[] b = new byte[19];
        for (int g = 0; g < 4; g++) {
            int v = random.nextInt(10_000);
            int at = g * 5;
            for (int d = 3; d >= 0; d--) {
                b[at + d] = (byte) ('0' + v % 10);
                v /= 10;
            }
            if (g < 3) {
                b[at + 4] = ' ';
            }
        }
        return b;
    }

    /**
     * Nexmark's random string: 3 to max − 1 characters, each {@code special} with probability
     * 1/13, else a lowercase letter; then trimmed of spaces at both ends.
     */
    private byte[] string(int max, char special) {
        int len = MIN_STRING + random.nextInt(max - MIN_STRING);
        byte[] b = new byte[len];
        for (int i = 0; i < len; i++) {
            b[i] = random.nextInt(13) == 0 ? (byte) special : (byte) ('a' + random.nextInt(26));
        }
        int from = 0;
        int to = len;
        while (from < to && b[from] <= ' ') {
            from++;
        }
        while (to > from && b[to - 1] <= ' ') {
            to--;
        }
        return from == 0 && to == len ? b : java.util.Arrays.copyOfRange(b, from, to);
    }

    /** "https://www.nexmark.com/" and three random path parts ('_' for special) before "/item.htm?query=1". */
    private String baseUrl() {
        return "https://www.nexmark.com/" + ascii(string(5, '_')) + '/' + ascii(string(5, '_')) + '/'
                + ascii(string(5, '_')) + '/' + "item.htm?query=1";
    }

    /**
     * Padding up to the average size: empty when the row is already larger; else a length spread
     * ±20 % around the missing bytes, cut from the pool at a random offset.
     */
    private StringData extra(int size, int average) {
        if (size > average) {
            return BinaryStringData.EMPTY_UTF8;
        }
        int missing = average - size;
        int delta = (int) Math.round(missing * 0.2);
        int length = missing - delta + (delta == 0 ? 0 : random.nextInt(2 * delta));
        if (length >= POOL_BYTES / 2) {
            throw new IllegalArgumentException("nexmark: an average size of " + average + " bytes needs padding"
                    + " longer than half the 1 MiB pool");
        }
        int offset = random.nextInt(POOL_BYTES - length);
        return BinaryStringData.fromAddress(pool, offset, length);
    }

    /**
     * Nexmark's padding pool: letters from a signed 32-bit random six at a time ('a' plus the
     * remainder modulo 26, which is negative for a negative value: 'H' to 'z').
     */
    private static byte[] letterPool(EventRandom r) {
        byte[] b = new byte[POOL_BYTES];
        int value = 0;
        int left = 0;
        for (int i = 0; i < b.length; i++) {
            if (left == 0) {
                value = r.nextInt();
                left = 6;
            }
            b[i] = (byte) ('a' + value % 26);
            value /= 26;
            left--;
        }
        return b;
    }

    private static byte[] concat(byte[]... parts) {
        int n = 0;
        for (byte[] p : parts) {
            n += p.length;
        }
        byte[] out = new byte[n];
        int at = 0;
        for (byte[] p : parts) {
            System.arraycopy(p, 0, out, at, p.length);
            at += p.length;
        }
        return out;
    }

    private static String ascii(byte[] b) {
        return new String(b, StandardCharsets.US_ASCII);
    }

    private static StringData[] strings(String[] values) {
        StringData[] out = new StringData[values.length];
        for (int i = 0; i < values.length; i++) {
            out[i] = StringData.fromString(values[i]);
        }
        return out;
    }
}
