-- Split DISTINCT under mini-batch, the official Nexmark configuration's shape: with
-- table.optimizer.distinct-agg.split.enabled Flink groups each DISTINCT by the key and a bucket of
-- the DISTINCT argument first, and plans LocalGroupAggregate -> IncrementalGroupAggregate ->
-- GlobalGroupAggregate; Ferry runs all three natively, frames crossing both exchanges between them.
--   ./ferry sql examples/split-distinct.sql --mode compare --require-native --parallelism 3
-- Bundles close at 500 rows or at the end of input (the latency is longer than the job), so a
-- run at parallelism 1 is deterministic row for row.
SET 'table.exec.mini-batch.enabled' = 'true';
SET 'table.exec.mini-batch.allow-latency' = '1 h';
SET 'table.exec.mini-batch.size' = '500';
SET 'table.optimizer.distinct-agg.split.enabled' = 'true';

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

-- q15-shaped: distinct bidders and auctions per channel, overall and under FILTERs
SELECT channel,
       COUNT(*) AS bids,
       COUNT(*) FILTER (WHERE price < 1000) AS rank1_bids,
       COUNT(DISTINCT bidder) AS bidders,
       COUNT(DISTINCT bidder) FILTER (WHERE price < 1000) AS rank1_bidders,
       COUNT(DISTINCT auction) AS auctions,
       COUNT(DISTINCT auction) FILTER (WHERE price >= 5000) AS rank2_auctions,
       MAX(price) AS top
FROM bid
GROUP BY channel;

-- DISTINCT over an updating input: the inner GROUP BY's changes reach the split aggregate as
-- retractions, so its value sets count up and down
SELECT MOD(auction, 7) AS bucket,
       COUNT(DISTINCT top) AS distinct_tops,
       SUM(top) AS total
FROM (SELECT auction, MAX(price) AS top FROM bid GROUP BY auction)
GROUP BY MOD(auction, 7);
