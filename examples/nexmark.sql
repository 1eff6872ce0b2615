-- Nexmark's queries q0-q22 (the shapes of the Nexmark benchmark's Flink SQL queries) over
-- datagen-backed person, auction and bid tables, for `ferry qualify`: it plans each query and
-- reports which stateful operators would run natively and why the others stay Flink's.
--   ./ferry qualify examples/nexmark.sql
--   ./ferry qualify examples/ --html build/qualify.html
-- The tables generate random rows, so the script also runs (`./ferry sql examples/nexmark.sql`),
-- but two runs read different rows: compare it with `ferry qualify`, not `--mode compare`.
-- Where Flink cannot plan Nexmark's own text (q6 runs an OVER window on an update stream) or it
-- needs something outside Flink (q13's file-backed lookup table, q14's UDF), the query keeps the
-- shape with built-in parts; those places say so.

CREATE TABLE person (
  id BIGINT,
  name STRING,
  emailAddress STRING,
  creditCard STRING,
  city STRING,
  state STRING,
  `dateTime` TIMESTAMP(3),
  extra STRING,
  WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND
) WITH (
  'connector' = 'datagen', 'number-of-rows' = '1000',
  'fields.id.min' = '1000', 'fields.id.max' = '1999', 'fields.state.length' = '2',
  'fields.name.length' = '12', 'fields.emailAddress.length' = '20', 'fields.creditCard.length' = '19',
  'fields.city.length' = '10', 'fields.extra.length' = '20', 'fields.dateTime.max-past' = '60000'
);

CREATE TABLE auction (
  id BIGINT,
  itemName STRING,
  description STRING,
  initialBid BIGINT,
  reserve BIGINT,
  `dateTime` TIMESTAMP(3),
  expires TIMESTAMP(3),
  seller BIGINT,
  category BIGINT,
  extra STRING,
  WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND
) WITH (
  'connector' = 'datagen', 'number-of-rows' = '3000',
  'fields.id.min' = '1000', 'fields.id.max' = '3999', 'fields.seller.min' = '1000', 'fields.seller.max' = '1999',
  'fields.category.min' = '10', 'fields.category.max' = '14', 'fields.initialBid.min' = '1',
  'fields.initialBid.max' = '1000', 'fields.reserve.min' = '1000', 'fields.reserve.max' = '2000',
  'fields.itemName.length' = '12', 'fields.description.length' = '40', 'fields.extra.length' = '20',
  'fields.dateTime.max-past' = '60000', 'fields.expires.max-past' = '0'
);

CREATE TABLE bid (
  auction BIGINT,
  bidder BIGINT,
  price BIGINT,
  channel STRING,
  url STRING,
  `dateTime` TIMESTAMP(3),
  extra STRING,
  WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND
) WITH (
  'connector' = 'datagen', 'number-of-rows' = '20000',
  'fields.auction.min' = '1000', 'fields.auction.max' = '3999', 'fields.bidder.min' = '1000',
  'fields.bidder.max' = '1999', 'fields.price.min' = '100', 'fields.price.max' = '10000000',
  'fields.channel.length' = '6', 'fields.url.length' = '40', 'fields.extra.length' = '20',
  'fields.dateTime.max-past' = '60000'
);

-- q10's sink: Nexmark writes to a partitioned file system; a blackhole keeps the shape.
CREATE TABLE bid_log (
  auction BIGINT, bidder BIGINT, price BIGINT, `dateTime` TIMESTAMP(3), extra STRING, dt STRING, hm STRING
) WITH ('connector' = 'blackhole');

-- q12's processing-time attribute.
CREATE TEMPORARY VIEW bid_p AS SELECT *, PROCTIME() AS p_time FROM bid;

-- q13's side input: Nexmark joins a file-backed table FOR SYSTEM_TIME AS OF a processing time;
-- a VALUES view joined on the same key keeps the stream-enrichment shape with built-in parts.
CREATE TEMPORARY VIEW side_input AS
SELECT * FROM (VALUES (0, 'zero'), (1, 'one'), (2, 'two'), (3, 'three')) AS t (k, v);

-- q0: pass through
SELECT auction, bidder, price, `dateTime`, extra FROM bid;

-- q1: currency conversion
SELECT auction, bidder, 0.908 * price AS price, `dateTime`, extra FROM bid;

-- q2: selection
SELECT auction, price FROM bid WHERE MOD(auction, 123) = 0;

-- q3: local item suggestion
SELECT P.name, P.city, P.state, A.id
FROM auction AS A JOIN person AS P ON A.seller = P.id
WHERE A.category = 10 AND (P.state = 'OR' OR P.state = 'ID' OR P.state = 'CA');

-- q4: average price for a category
SELECT Q.category, AVG(Q.final)
FROM (
  SELECT MAX(B.price) AS final, A.category
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.`dateTime` BETWEEN A.`dateTime` AND A.expires
  GROUP BY A.id, A.category
) Q
GROUP BY Q.category;

-- q5: hot items
SELECT AuctionBids.auction, AuctionBids.num
FROM (
  SELECT auction, COUNT(*) AS num, window_start AS starttime, window_end AS endtime
  FROM TABLE(HOP(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
  GROUP BY auction, window_start, window_end
) AS AuctionBids
JOIN (
  SELECT MAX(CountBids.num) AS maxn, CountBids.starttime, CountBids.endtime
  FROM (
    SELECT COUNT(*) AS num, window_start AS starttime, window_end AS endtime
    FROM TABLE(HOP(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '2' SECOND, INTERVAL '10' SECOND))
    GROUP BY auction, window_start, window_end
  ) AS CountBids
  GROUP BY CountBids.starttime, CountBids.endtime
) AS MaxBids
ON AuctionBids.starttime = MaxBids.starttime AND AuctionBids.endtime = MaxBids.endtime
   AND AuctionBids.num >= MaxBids.maxn;

-- q6: average selling price by seller
-- (the winning bid of each auction, then an average per seller; Nexmark's OVER window over the
-- last 10 auctions cannot read an update stream in Flink)
SELECT seller, AVG(price) AS avg_price
FROM (
  SELECT A.id, A.seller, B.price,
         ROW_NUMBER() OVER (PARTITION BY A.id, A.seller ORDER BY B.price DESC) AS rownum
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.`dateTime` BETWEEN A.`dateTime` AND A.expires
)
WHERE rownum <= 1
GROUP BY seller;

-- q7: highest bid
SELECT B.auction, B.price, B.bidder, B.`dateTime`, B.extra
FROM bid B
JOIN (
  SELECT MAX(price) AS maxprice, window_end AS `dateTime`
  FROM TABLE(TUMBLE(TABLE bid, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
  GROUP BY window_start, window_end
) B1
ON B.price = B1.maxprice
WHERE B.`dateTime` BETWEEN B1.`dateTime` - INTERVAL '10' SECOND AND B1.`dateTime`;

-- q8: monitor new users
SELECT P.id, P.name, P.starttime
FROM (
  SELECT id, name, window_start AS starttime, window_end AS endtime
  FROM TABLE(TUMBLE(TABLE person, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
  GROUP BY id, name, window_start, window_end
) P
JOIN (
  SELECT seller, window_start AS starttime, window_end AS endtime
  FROM TABLE(TUMBLE(TABLE auction, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
  GROUP BY seller, window_start, window_end
) A
ON P.id = A.seller AND P.starttime = A.starttime AND P.endtime = A.endtime;

-- q9: winning bids
SELECT id, itemName, description, initialBid, reserve, `dateTime`, expires, seller, category, extra,
       auction, bidder, price, bid_dateTime, bid_extra
FROM (
  SELECT A.*, B.auction, B.bidder, B.price, B.`dateTime` AS bid_dateTime, B.extra AS bid_extra,
         ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC, B.`dateTime` ASC) AS rownum
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.`dateTime` BETWEEN A.`dateTime` AND A.expires
)
WHERE rownum <= 1;

-- q10: log to file system
INSERT INTO bid_log
SELECT auction, bidder, price, `dateTime`, extra, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd'), DATE_FORMAT(`dateTime`, 'HH:mm')
FROM bid;

-- q11: user sessions
SELECT B.bidder, COUNT(*) AS bid_count,
       SESSION_START(B.`dateTime`, INTERVAL '10' SECOND) AS starttime,
       SESSION_END(B.`dateTime`, INTERVAL '10' SECOND) AS endtime
FROM bid B
GROUP BY B.bidder, SESSION(B.`dateTime`, INTERVAL '10' SECOND);

-- q12: processing-time windows
SELECT bidder, COUNT(*) AS bid_count, window_start, window_end
FROM TABLE(TUMBLE(TABLE bid_p, DESCRIPTOR(p_time), INTERVAL '10' SECOND))
GROUP BY bidder, window_start, window_end;

-- q13: bounded side input join
SELECT B.auction, B.bidder, B.price, B.`dateTime`, S.v
FROM bid B JOIN side_input S ON MOD(B.auction, 4) = S.k;

-- q14: calculation
-- (Nexmark counts a character with a UDF; CHAR_LENGTH and REPLACE do it here)
SELECT auction, bidder, 0.908 * price AS price,
       CASE
         WHEN HOUR(`dateTime`) >= 8 AND HOUR(`dateTime`) <= 18 THEN 'dayTime'
         WHEN HOUR(`dateTime`) <= 6 OR HOUR(`dateTime`) >= 20 THEN 'nightTime'
         ELSE 'otherTime'
       END AS bidTimeType,
       `dateTime`, extra, CHAR_LENGTH(extra) - CHAR_LENGTH(REPLACE(extra, 'c', '')) AS c_counts
FROM bid
WHERE 0.908 * price > 1000000 AND 0.908 * price < 50000000;

-- q15: bidding statistics report
SELECT DATE_FORMAT(`dateTime`, 'yyyy-MM-dd') AS `day`,
       COUNT(*) AS total_bids,
       COUNT(*) FILTER (WHERE price < 10000) AS rank1_bids,
       COUNT(*) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bids,
       COUNT(*) FILTER (WHERE price >= 1000000) AS rank3_bids,
       COUNT(DISTINCT bidder) AS total_bidders,
       COUNT(DISTINCT bidder) FILTER (WHERE price < 10000) AS rank1_bidders,
       COUNT(DISTINCT bidder) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bidders,
       COUNT(DISTINCT bidder) FILTER (WHERE price >= 1000000) AS rank3_bidders,
       COUNT(DISTINCT auction) AS total_auctions,
       COUNT(DISTINCT auction) FILTER (WHERE price < 10000) AS rank1_auctions,
       COUNT(DISTINCT auction) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_auctions,
       COUNT(DISTINCT auction) FILTER (WHERE price >= 1000000) AS rank3_auctions
FROM bid
GROUP BY DATE_FORMAT(`dateTime`, 'yyyy-MM-dd');

-- q16: channel statistics report
SELECT channel, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd') AS `day`, MAX(DATE_FORMAT(`dateTime`, 'HH:mm')) AS `minute`,
       COUNT(*) AS total_bids,
       COUNT(*) FILTER (WHERE price < 10000) AS rank1_bids,
       COUNT(*) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bids,
       COUNT(*) FILTER (WHERE price >= 1000000) AS rank3_bids,
       COUNT(DISTINCT bidder) AS total_bidders,
       COUNT(DISTINCT bidder) FILTER (WHERE price < 10000) AS rank1_bidders,
       COUNT(DISTINCT bidder) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bidders,
       COUNT(DISTINCT bidder) FILTER (WHERE price >= 1000000) AS rank3_bidders,
       COUNT(DISTINCT auction) AS total_auctions,
       COUNT(DISTINCT auction) FILTER (WHERE price < 10000) AS rank1_auctions,
       COUNT(DISTINCT auction) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_auctions,
       COUNT(DISTINCT auction) FILTER (WHERE price >= 1000000) AS rank3_auctions
FROM bid
GROUP BY channel, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd');

-- q17: auction statistics report
SELECT auction, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd') AS `day`,
       COUNT(*) AS total_bids,
       COUNT(*) FILTER (WHERE price < 10000) AS rank1_bids,
       COUNT(*) FILTER (WHERE price >= 10000 AND price < 1000000) AS rank2_bids,
       COUNT(*) FILTER (WHERE price >= 1000000) AS rank3_bids,
       MIN(price) AS min_price, MAX(price) AS max_price, AVG(price) AS avg_price, SUM(price) AS sum_price
FROM bid
GROUP BY auction, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd');

-- q18: find last bid
SELECT auction, bidder, price, channel, url, `dateTime`, extra
FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder, auction ORDER BY `dateTime` DESC) AS rank_number
  FROM bid
)
WHERE rank_number <= 1;

-- q19: auction top-10 price
SELECT *
FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC) AS rank_number
  FROM bid
)
WHERE rank_number <= 10;

-- q20: expand bid with auction
SELECT auction, bidder, price, channel, url, B.`dateTime`, B.extra,
       itemName, description, initialBid, reserve, A.`dateTime` AS auction_dateTime, expires, seller, category,
       A.extra AS auction_extra
FROM bid AS B INNER JOIN auction AS A ON B.auction = A.id
WHERE A.category = 10;

-- q21: add channel id
SELECT auction, bidder, price, channel,
       CASE
         WHEN LOWER(channel) = 'apple' THEN '0'
         WHEN LOWER(channel) = 'google' THEN '1'
         WHEN LOWER(channel) = 'facebook' THEN '2'
         WHEN LOWER(channel) = 'baidu' THEN '3'
         ELSE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2)
       END AS channel_id
FROM bid
WHERE REGEXP_EXTRACT(url, '(&|^)channel_id=([^&]*)', 2) IS NOT NULL OR LOWER(channel) IN ('apple', 'google', 'facebook', 'baidu');

-- q22: get URL directories
SELECT auction, bidder, price, channel,
       SPLIT_INDEX(url, '/', 3) AS dir1, SPLIT_INDEX(url, '/', 4) AS dir2, SPLIT_INDEX(url, '/', 5) AS dir3
FROM bid;
