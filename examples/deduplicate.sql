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
-- after an update on the heap state backend, whose stored row then holds the update's kind
SELECT bidder, era
FROM (SELECT bidder, era, pt, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY pt DESC) AS rn FROM bid)
WHERE rn = 1;

-- processing time, first row, and no key: one subtask keeps the very first row
SELECT bidder, auction, price
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY pt) AS rn FROM bid)
WHERE rn = 1;
SELECT auction, price
FROM (SELECT *, ROW_NUMBER() OVER (ORDER BY pt) AS rn FROM bid)
WHERE rn = 1;

-- the same processing-time last row on RocksDB, which stores the row as it arrived: fewer updates
SET 'state.backend.type' = 'rocksdb';
SELECT bidder, era
FROM (SELECT bidder, era, pt, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY pt DESC) AS rn FROM bid)
WHERE rn = 1;
RESET 'state.backend.type';

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

-- a bundle's changes of a key compacted into one (row time only), the first row an update
SET 'table.exec.deduplicate.mini-batch.compact-changes-enabled' = 'true';
SET 'table.exec.deduplicate.insert-update-after-sensitive-enabled' = 'false';

SELECT bidder, auction, price, ts
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY ts DESC) AS rn FROM bid)
WHERE rn = 1;

SELECT bidder, auction, price, ts
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY bidder ORDER BY ts) AS rn FROM bid)
WHERE rn = 1;
