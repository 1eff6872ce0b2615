-- Async state on: where Flink 2.3 would plan its async-state GROUP BY (AsyncStateGroupAggFunction:
-- mini-batch off, no call that keeps a DataView), Ferry's operator runs in its place.
--   ./ferry sql examples/async-state.sql --mode compare --require-native
-- On the HashMap and RocksDB backends Flink's async-state GROUP BY never expires state, whatever
-- table.exec.state.ttl says: the backend adaptor it goes through drops the TTL of its state
-- descriptor. Ferry's operator keeps its state too. The 1 ms retention below would make a
-- synchronous GROUP BY forget keys in the middle of the run (and its results depend on timing);
-- here both sides keep every key and the changelogs compare row for row.
SET 'table.exec.async-state.enabled' = 'true';
SET 'table.exec.state.ttl' = '1 ms';

CREATE TABLE bid_source (
  id BIGINT
) WITH (
  'connector' = 'datagen',
  'fields.id.kind' = 'sequence',
  'fields.id.start' = '1',
  'fields.id.end' = '20000',
  'rows-per-second' = '1000000000'
);

CREATE TEMPORARY VIEW bid AS
SELECT
  MOD(id * 7919, 300) AS auction,                  -- BIGINT, 300 auctions
  CAST(MOD(id * 31, 10000) + 1 AS INT) AS price,   -- INT, 1..10,000
  CONCAT('channel-', CAST(MOD(id * 13, 11) AS STRING)) AS channel  -- VARCHAR
FROM bid_source;

-- Insert-only input
SELECT auction,
       COUNT(*) AS bids,
       SUM(price) AS volume,
       MIN(price) AS lowest,
       MAX(price) AS highest,
       AVG(price) AS average
FROM bid
GROUP BY auction;

-- Over an updating input: COUNT and SUM take retraction without a DataView, so Flink plans its
-- async-state operator for both levels
SELECT MOD(auction, 7) AS bucket,
       COUNT(*) AS auctions,
       SUM(top) AS top_sum,
       SUM(channels) AS channel_sum
FROM (SELECT auction, MAX(price) AS top, COUNT(channel) AS channels FROM bid GROUP BY auction)
GROUP BY MOD(auction, 7);
