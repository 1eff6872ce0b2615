-- Nexmark-shaped bids, generated deterministically so that every run sees the same rows in the
-- same order (datagen's sequence generator, with the other columns derived from it).
CREATE TABLE bid_source (
  id BIGINT
) WITH (
  'connector' = 'datagen',
  'fields.id.kind' = 'sequence',
  'fields.id.start' = '1',
  'fields.id.end' = '50000'
);

CREATE TEMPORARY VIEW bid AS
SELECT
  MOD(id * 7919, 1000) AS auction,                 -- 1,000 auctions
  MOD(id * 104729, 50000) AS bidder,
  CAST(MOD(id * 31, 10000) + 1 AS INT) AS price,   -- INT price, 1..10,000
  CAST(MOD(id * 17, 997) AS DOUBLE) / 7 AS fee     -- DOUBLE
FROM bid_source;

-- Per-auction statistics: insert-only input.
SELECT auction,
       COUNT(*) AS bids,
       COUNT(fee) AS fees,
       SUM(price) AS total,
       MIN(price) AS lowest,
       MAX(fee) AS top_fee,
       AVG(price) AS avg_price
FROM bid
GROUP BY auction;

-- Q4-shaped second stage: an aggregate over another aggregate's changelog (retracting input).
SELECT bids_bucket,
       COUNT(*) AS auctions,
       SUM(top) AS sum_top,
       MIN(top) AS min_top,
       MAX(top) AS max_top,
       AVG(top) AS avg_top
FROM (
  SELECT auction, MAX(price) AS top, COUNT(*) / 10 AS bids_bucket
  FROM bid
  GROUP BY auction
)
GROUP BY bids_bucket;
