-- Idle-state TTL next to MapView state: DISTINCT value sets (with and without FILTER) and the
-- value multisets of MIN/MAX with retraction, whose entries Flink expires one by one, each at its
-- own last write. Ferry keeps a last write per entry too, so these run natively.
--   ./ferry sql examples/idle-state-ttl.sql --mode compare --require-native
-- The retention (1 h) outlasts the run, so nothing expires here and the changelogs compare row
-- for row; expiry itself is checked against Flink's operators in their test harness, whose TTL
-- clock the tests step (GroupAggregateDifferentialTest, TwoPhaseAggregateDifferentialTest,
-- IncrementalAggregateDifferentialTest).
SET 'table.exec.state.ttl' = '1 h';

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
  MOD(id * 104729, 2000) AS bidder,                -- BIGINT, 2,000 bidders
  CAST(MOD(id * 31, 10000) + 1 AS INT) AS price,   -- INT, 1..10,000
  CONCAT('channel-', CAST(MOD(id * 13, 11) AS STRING)) AS channel  -- VARCHAR
FROM bid_source;

-- DISTINCT on insert-only input: one bit per call and value
SELECT channel,
       COUNT(DISTINCT bidder) AS bidders,
       COUNT(DISTINCT bidder) FILTER (WHERE price < 1000) AS rank1_bidders,
       SUM(DISTINCT price) AS distinct_price_sum,
       MAX(price) AS top
FROM bid
GROUP BY channel;

-- Over an updating input: DISTINCT counts values up and down, MIN and MAX take retraction
SELECT MOD(auction, 7) AS bucket,
       COUNT(DISTINCT top) AS distinct_tops,
       MIN(top) AS lowest_top,
       MAX(top) AS highest_top,
       COUNT(*) AS auctions
FROM (SELECT auction, MAX(price) AS top FROM bid GROUP BY auction)
GROUP BY MOD(auction, 7);
