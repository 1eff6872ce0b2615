-- COUNT(DISTINCT) and friends in the two-phase mini-batch GROUP BY: with mini-batch on and
-- Flink's default table.optimizer.agg-phase-strategy (AUTO), the local aggregate's partial rows
-- carry each DISTINCT argument's value set (a MapView), and Ferry runs both halves natively.
--   ./ferry sql examples/two-phase-distinct.sql --mode compare --require-native --parallelism 3
-- Bundles close at 500 rows or at the end of input (the latency is longer than the job), so a
-- run at parallelism 1 is deterministic row for row.
SET 'table.exec.mini-batch.enabled' = 'true';
SET 'table.exec.mini-batch.allow-latency' = '1 h';
SET 'table.exec.mini-batch.size' = '500';

CREATE TABLE bid_source (
  id BIGINT
) WITH (
  'connector' = 'datagen',
  'fields.id.kind' = 'sequence',
  'fields.id.start' = '1',
  'fields.id.end' = '30000',
  'rows-per-second' = '1000000000'
);

CREATE TEMPORARY VIEW bid AS
SELECT
  MOD(id * 7919, 500) AS auction,                  -- BIGINT, 500 auctions
  MOD(id * 104729, 3000) AS bidder,                -- BIGINT, 3,000 bidders
  CAST(MOD(id * 31, 10000) + 1 AS INT) AS price,   -- INT, 1..10,000
  CONCAT('channel-', CAST(MOD(id * 13, 11) AS STRING)) AS channel  -- VARCHAR
FROM bid_source;

-- q15-shaped: distinct bidders per auction, overall and under FILTERs sharing one value set
SELECT auction,
       COUNT(*) AS bids,
       COUNT(DISTINCT bidder) AS bidders,
       COUNT(DISTINCT bidder) FILTER (WHERE price < 1000) AS rank1_bidders,
       COUNT(DISTINCT bidder) FILTER (WHERE price >= 5000) AS rank3_bidders,
       COUNT(DISTINCT channel) AS channels,
       SUM(DISTINCT price) AS distinct_price_sum
FROM bid
GROUP BY auction;

-- distinct counts over another aggregate's changelog (retracting input: a count per value)
SELECT bucket,
       COUNT(DISTINCT top) AS distinct_tops,
       COUNT(DISTINCT bids) AS distinct_bid_counts,
       SUM(DISTINCT bids) AS distinct_bid_sum
FROM (
  SELECT auction, MAX(price) AS top, COUNT(*) AS bids, MOD(auction, 7) AS bucket
  FROM bid
  GROUP BY auction
)
GROUP BY bucket;
