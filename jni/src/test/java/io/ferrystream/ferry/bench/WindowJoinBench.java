package io.ferrystream.ferry.bench;

import io.ferrystream.ferry.kinds.windowjoin.FerryWindowJoinOperator;

import org.apache.flink.table.runtime.operators.join.window.WindowJoinOperator;

/**
 * The window join side by side, with {@link IntervalJoinBench}'s driver and stream: Nexmark-shaped
 * auctions and bids, each through a 10 s tumbling window, joined on {@code a.window_start =
 * b.window_start AND a.window_end = b.window_end AND a.id = b.auction} (q8's shape over auctions
 * and bids), INNER or LEFT, through Flink's {@code WindowJoinOperator} on the heap and on the
 * RocksDB backend and through {@link FerryWindowJoinOperator}. The operators receive the rows the
 * window TVF emits (the source row, then window_start, window_end, window_time); watermarks follow
 * the event time every {@link IntervalJoinBench#WATERMARK_EVERY} rows, so every window fires
 * about 10 s of event time after it opens.
 */
final class WindowJoinBench {
    private WindowJoinBench() {}

    static final int WINDOW_MS = IntervalJoinBench.WINDOW_SECONDS * 1000;

    static String query(String joinType) {
        String window = "INTERVAL '" + IntervalJoinBench.WINDOW_SECONDS + "' SECOND";
        // every column of both sides, so the join reads the TVF's rows unpruned
        return "SELECT a.id, a.itemName, a.seller, a.category, CAST(a.`dateTime` AS TIMESTAMP(3)) AS adt,"
                + " a.window_start, a.window_end, CAST(a.window_time AS TIMESTAMP(3)) AS awt,"
                + " b.auction, b.bidder, b.price, b.channel, CAST(b.`dateTime` AS TIMESTAMP(3)) AS bdt,"
                + " CAST(b.window_time AS TIMESTAMP(3)) AS bwt"
                + " FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(`dateTime`), " + window + ")) a " + joinType
                + " JOIN TABLE(TUMBLE(TABLE bid, DESCRIPTOR(`dateTime`), " + window + ")) b"
                + " ON a.window_start = b.window_start AND a.window_end = b.window_end AND a.id = b.auction";
    }

    static final IntervalJoinBench.Shape SHAPE = new IntervalJoinBench.Shape("Window join", WindowJoinBench::query,
            WINDOW_MS, op -> op instanceof WindowJoinOperator, FerryWindowJoinOperator.class, null);
}
