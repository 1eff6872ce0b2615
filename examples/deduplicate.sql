-- Deduplication, ROW_NUMBER() OVER (PARTITION BY ... ORDER BY a time attribute) ... = 1 over an
-- insert-only input: every form Flink 2.3 runs as StreamExecDeduplicate, all native
-- (docs/operators/deduplicate.md):
--   ./ferry sql examples/deduplicate.sql --mode compare --require-native [--parallelism 4]
-- A bidder is id modulo 400 and the datagen sequence is dealt out to the source subtasks by id
-- modulo the parallelism (1 or 4): every row of a bidder comes from one subtask, so each key sees
-- its rows in one order in every run, and the final results are the same at any of those
-- parallelisms. Row times repeat within a key (ties); the watermarks lag them by an hour, longer
-- than the data spans, so no row is late and the insert-only first row is emitted at the end.

CREATE TABLE bid (
  id BIGINT,
  bidder AS MOD(id, 400),
  auction AS MOD(id * 7919, 997),
  price AS CAST(MOD(id * 31, 10000) + 1 AS INT),
  era AS CAST(id / 5000 AS INT),
  channel AS CONCAT('channel-', CAST(MOD(id * 13, 11) AS STRING)),
  ts AS TO_TIMESTAMP(FROM_UNIXTIME(1700000000 + id / 1600)),
  pt AS PROCTIME(),
  WATERMARK FOR ts AS ts - INTERVAL '1' HOUR
) WITH (
  'connector' = 'datagen',
  'fields.id.kind' = 'sequence',
  'fields.id.start' = '1',
  'fields.id.end' = '20000',
  'rows-per-second' = '1000000000'
);

-- row time, last row (Nexmark q18's shape): an update per later (or equal) row time
SELECT bidder, auction, price, channel, ts
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY ts DESC) AS rn FROM bid)
WHERE rn = 1;

-- row time, first row: insert-only, each key's earliest row emitted once the watermark passes it
SELECT bidder, auction, price, ts
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY ts) AS rn FROM bid)
WHERE rn = 1;

-- processing time, last row: a row equal to the last one emitted changes nothing, except right
-- after an update on the heap state backend (this command's), whose stored row then holds the
-- update's kind; on RocksDB it changes nothing there either (DeduplicateSqlTest runs both)
SELECT bidder, era
FROM (SELECT bidder, era, pt, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY pt DESC) AS rn FROM bid)
WHERE rn = 1;

-- processing time, first row; then with no key, over the rows of one source subtask (id modulo
-- 4 is 1): one operator subtask keeps the very first of them
SELECT bidder, auction, price
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY pt) AS rn FROM bid)
WHERE rn = 1;
SELECT auction, price
FROM (SELECT *, ROW_NUMBER() OVER (ORDER BY pt) AS rn FROM bid WHERE MOD(id, 4) = 1)
WHERE rn = 1;

-- mini-batch: each bundle of 100 rows folded per key, the keys finished in Flink's HashMap order
SET 'table.exec.mini-batch.enabled' = 'true';
SET 'table.exec.mini-batch.allow-latency' = '1 h';
SET 'table.exec.mini-batch.size' = '100';

SELECT bidder, auction, price, ts
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY ts DESC) AS rn FROM bid)
WHERE rn = 1;

SELECT bidder, era
FROM (SELECT bidder, era, pt, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY pt DESC) AS rn FROM bid)
WHERE rn = 1;

SELECT bidder, auction, price
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY pt) AS rn FROM bid)
WHERE rn = 1;

-- bundles of 1,000 rows, each holding a bidder two or three times, whose changes are compacted
-- into one per bundle (row time only)
SET 'table.exec.mini-batch.size' = '1000';
SET 'table.exec.deduplicate.mini-batch.compact-changes-enabled' = 'true';

SELECT bidder, auction, price, ts
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY ts DESC) AS rn FROM bid)
WHERE rn = 1;

SELECT bidder, auction, price, ts
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY ts) AS rn FROM bid)
WHERE rn = 1;
