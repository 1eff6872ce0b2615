-- The two-phase mini-batch GROUP BY: with mini-batch on and Flink's default
-- table.optimizer.agg-phase-strategy (AUTO), Flink plans LocalGroupAggregate, a hash exchange and
-- GlobalGroupAggregate; Ferry runs both halves natively, each on its own.
--   ./ferry sql examples/two-phase-groupby.sql --mode compare --require-native --parallelism 3
-- Bundles close at 1,000 rows or at the end of input (the latency is longer than the job), so a
-- run at parallelism 1 is deterministic row for row.
SET 'table.exec.mini-batch.enabled' = 'true';
SET 'table.exec.mini-batch.allow-latency' = '1 h';
SET 'table.exec.mini-batch.size' = '1000';

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
  MOD(id * 104729, 50000) AS bidder,               -- BIGINT
  CAST(MOD(id * 31, 10000) + 1 AS INT) AS price,   -- INT, 1..10,000
  CAST(MOD(id * 17, 997) AS DOUBLE) / 7 AS fee,    -- DOUBLE
  CAST(MOD(id * 13, 9973) AS DECIMAL(10, 2)) / 100 AS amount  -- DECIMAL
FROM bid_source;

-- q17-shaped: per-auction statistics over insert-only input, FILTER clauses included
SELECT auction,
       COUNT(*) AS bids,
       COUNT(*) FILTER (WHERE price < 1000) AS rank1_bids,
       COUNT(fee) AS fees,
       SUM(price) AS total,
       MIN(price) AS lowest,
       MAX(price) AS highest,
       AVG(price) AS avg_price,
       SUM(amount) AS amount_sum,
       MAX(amount) AS max_amount,
       MIN(fee) AS min_fee,
       AVG(fee) AS avg_fee
FROM bid
GROUP BY auction;

-- q4-shaped second stage: a two-phase aggregate over another aggregate's changelog (retracting input)
SELECT bucket,
       COUNT(*) AS auctions,
       SUM(top) AS sum_top,
       AVG(top) AS avg_top,
       SUM(bids) AS sum_bids,
       COUNT(top_fee) AS fees
FROM (
  SELECT auction, MAX(price) AS top, COUNT(*) AS bids, MAX(fee) AS top_fee, MOD(auction, 7) AS bucket
  FROM bid
  GROUP BY auction
)
GROUP BY bucket;
