-- Top-N, ROW_NUMBER() OVER (PARTITION BY ... ORDER BY ...) with a constant rank range: every
-- function Flink 2.3's StreamExecRank runs, all native (docs/operators/top-n.md):
--   ./ferry sql examples/top-n.sql --mode compare --require-native [--parallelism 4]
-- A bidder is id modulo 400 and the datagen sequence is dealt out to the source subtasks by id
-- modulo the parallelism (1 or 4): every row of a bidder comes from one subtask, so each bidder
-- sees its rows in one order in every run, and the final results are the same at any of those
-- parallelisms. Prices repeat within a key (ties, kept in arrival order as Flink keeps them);
-- about one row in 13 has no channel (NULL in a sort key). An auction's rows come from every
-- source subtask, in an order that varies at parallelism 4: the queries by auction end their
-- ORDER BY with a unique column, so their final results do not depend on it.

CREATE TABLE bid (
  id BIGINT,
  bidder AS MOD(id, 400),
  auction AS MOD(id * 7919, 997),
  price AS CAST(MOD(id * 31, 1000) + 1 AS INT),
  fee AS CAST(MOD(id * 17, 5000) AS DECIMAL(10, 2)) / 100,
  channel AS CASE WHEN MOD(id, 13) = 0 THEN CAST(NULL AS STRING) ELSE CONCAT('channel-', CAST(MOD(id * 13, 11) AS STRING)) END,
  ts AS TO_TIMESTAMP(FROM_UNIXTIME(1700000000 + MOD(id * 7, 20000) / 16)),
  pt AS PROCTIME()
) WITH (
  'connector' = 'datagen',
  'fields.id.kind' = 'sequence',
  'fields.id.start' = '1',
  'fields.id.end' = '20000',
  'rows-per-second' = '1000000000'
);

-- Nexmark q19's shape, the top 3 prices per bidder (AppendOnlyTopNFunction): a row entering the
-- top pushes the last one out, -D and +I; with the rank number, each rank below it moves, -U/+U
SELECT bidder, auction, price
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY price DESC) AS rn FROM bid)
WHERE rn <= 3;

SELECT bidder, auction, price, rn
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY price DESC) AS rn FROM bid)
WHERE rn <= 3;

-- an offset, several sort keys over a string with NULLs, a decimal and a timestamp
SELECT bidder, channel, fee, ts, rn
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY channel NULLS FIRST, fee DESC, ts) AS rn FROM bid)
WHERE rn BETWEEN 3 AND 5;

SELECT auction, bidder, price, ts
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY ts DESC, price, id) AS rn FROM bid)
WHERE rn > 1 AND rn <= 2;

-- the top 1 (FastTop1Function): each bidder's best price, replaced by +U (this command's sink
-- needs no -U here: the changelog is an upsert one, materialized by its key, the bidder)
SELECT bidder, auction, price, fee
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY price DESC, fee, id) AS rn FROM bid)
WHERE rn = 1;

-- the same per auction: at parallelism 4 an auction's rows arrive in another order in every run,
-- so its intermediate best prices differ, and only the final one per auction is compared
SELECT auction, bidder, price
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC, id) AS rn FROM bid)
WHERE rn = 1;

-- the top 1 over an upsert input (UpdateFastStrategy): each auction's bidder with the most bids,
-- over a GROUP BY whose COUNT only grows (and whose key never changes: the tie-breaker)
SELECT auction, bidder, bids
FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY bids DESC, bidder) AS rn
  FROM (SELECT auction, bidder, COUNT(*) AS bids FROM bid GROUP BY auction, bidder)
)
WHERE rn = 1;

-- more than the top 1 over that upsert input (UpdatableTopNFunction): each auction's 3 bidders
-- with the most bids, with their rank
SELECT auction, bidder, bids, rn
FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY bids DESC, bidder) AS rn
  FROM (SELECT auction, bidder, COUNT(*) AS bids FROM bid GROUP BY auction, bidder)
)
WHERE rn <= 3;

-- over an input with retractions (RetractableTopNFunction): a SUM that falls and rises, so each
-- change retracts the bidder's previous total
SELECT auction, bidder, balance, rn
FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY balance DESC, bidder) AS rn
  FROM (SELECT auction, bidder, SUM(price - 500) AS balance FROM bid GROUP BY auction, bidder)
)
WHERE rn <= 3;

-- the first rows in arrival order (AppendOnlyFirstNFunction: ORDER BY the processing time)
SELECT bidder, auction, price, rn
FROM (SELECT bidder, auction, price, pt, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY pt) AS rn FROM bid)
WHERE rn <= 2;

-- no key: one operator subtask over the rows of one source subtask (id modulo 4 is 1)
SELECT bidder, auction, price, rn
FROM (SELECT *, ROW_NUMBER() OVER (ORDER BY price DESC, id) AS rn FROM bid WHERE MOD(id, 4) = 1)
WHERE rn <= 10;
