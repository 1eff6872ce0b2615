-- Nexmark-shaped bids, generated deterministically so that every run sees the same rows in the
-- same order (datagen's sequence generator, with the other columns derived from it).
CREATE TABLE bid_source (
  id BIGINT
) WITH (
  'connector' = 'datagen',
  'fields.id.kind' = 'sequence',
  'fields.id.start' = '1',
  'fields.id.end' = '50000',
  'rows-per-second' = '1000000000'
);

CREATE TEMPORARY VIEW bid AS
SELECT
  MOD(id * 7919, 1000) AS auction,                 -- BIGINT, 1,000 auctions
  MOD(id * 104729, 50000) AS bidder,               -- BIGINT
  CAST(MOD(id * 31, 10000) + 1 AS INT) AS price,   -- INT, 1..10,000
  CAST(MOD(id * 17, 997) AS DOUBLE) / 7 AS fee     -- DOUBLE
FROM bid_source;

-- Per-auction statistics over insert-only input
-- (COUNT, SUM, MIN, MAX, AVG over BIGINT, INT and DOUBLE).
SELECT auction,
       COUNT(*) AS bids,
       COUNT(fee) AS fees,
       SUM(price) AS total,
       MIN(price) AS lowest,
       MAX(price) AS highest,
       AVG(price) AS avg_price,
       SUM(bidder) AS bidder_sum,
       MIN(bidder) AS min_bidder,
       MAX(bidder) AS max_bidder,
       AVG(bidder) AS avg_bidder,
       SUM(fee) AS fee_sum,
       MIN(fee) AS min_fee,
       MAX(fee) AS max_fee,
       AVG(fee) AS avg_fee
FROM bid
GROUP BY auction;

-- Q4-shaped second stage: an aggregate over another aggregate's changelog
-- (retracting input), again over BIGINT, INT and DOUBLE values.
SELECT bucket,
       COUNT(*) AS auctions,
       SUM(top) AS sum_top,
       MIN(top) AS min_top,
       MAX(top) AS max_top,
       AVG(top) AS avg_top,
       SUM(bids) AS sum_bids,
       MIN(bids) AS min_bids,
       MAX(bids) AS max_bids,
       AVG(bids) AS avg_bids,
       SUM(top_fee) AS sum_fee,
       MIN(top_fee) AS min_fee,
       MAX(top_fee) AS max_fee,
       AVG(top_fee) AS avg_fee
FROM (
  SELECT auction, MAX(price) AS top, COUNT(*) AS bids, MAX(fee) AS top_fee, MOD(auction, 7) AS bucket
  FROM bid
  GROUP BY auction
)
GROUP BY bucket;
