-- Two-phase (local/global) mini-batch GROUP BY over Nexmark-shaped bids: Flink plans
-- MiniBatchAssigner -> LocalGroupAggregate -> Exchange -> GlobalGroupAggregate, and Ferry runs
-- both aggregates natively. Bundles end only at table.exec.mini-batch.size rows and at the end of
-- input (the mini-batch interval is an hour), so at parallelism 1 the changelog is deterministic
-- and `./ferry sql examples/nexmark-two-phase.sql --mode compare` compares it row for row.
SET 'table.exec.mini-batch.enabled' = 'true';
SET 'table.exec.mini-batch.allow-latency' = '1 h';
SET 'table.exec.mini-batch.size' = '5000';
SET 'table.optimizer.agg-phase-strategy' = 'TWO_PHASE';

CREATE TABLE bid_source (
  id BIGINT
) WITH (
  'connector' = 'datagen',
  'fields.id.kind' = 'sequence',
  'fields.id.start' = '1',
  'fields.id.end' = '300000',
  'rows-per-second' = '1000000000'  -- datagen's default is 10,000 rows/s
);

CREATE TEMPORARY VIEW bid AS
SELECT
  MOD(id * 7919, 1000) AS auction,                 -- BIGINT, 1,000 auctions
  MOD(id * 104729, 50000) AS bidder,               -- BIGINT
  CAST(MOD(id * 31, 10000) + 1 AS INT) AS price,   -- INT, 1..10,000
  CAST(MOD(id * 17, 997) AS DOUBLE) / 4 AS fee     -- DOUBLE
FROM bid_source;

-- Per-auction statistics over insert-only input.
SELECT auction,
       COUNT(*) AS bids,
       SUM(price) AS total,
       MIN(price) AS lowest,
       MAX(price) AS highest,
       AVG(price) AS avg_price,
       SUM(bidder) AS bidder_sum,
       AVG(fee) AS avg_fee,
       MAX(fee) AS max_fee
FROM bid
GROUP BY auction;

-- A second stage over the first one's changelog (retracting input; Flink adds count1 to the
-- partial rows). MIN/MAX would take retraction here, whose partial state Ferry does not carry.
SELECT bucket,
       COUNT(*) AS auctions,
       SUM(top) AS sum_top,
       AVG(top) AS avg_top,
       SUM(bids) AS sum_bids,
       AVG(bids) AS avg_bids
FROM (
  SELECT auction, MAX(price) AS top, COUNT(*) AS bids, MOD(auction, 7) AS bucket
  FROM bid
  GROUP BY auction
)
GROUP BY bucket;
