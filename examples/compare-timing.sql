-- Plans whose changelog depends on timing, for `./ferry sql examples/compare-timing.sql --mode
-- compare`: the stock and the Ferry run cannot be compared row for row here, even where both run
-- only Flink's operators. Compare says why for each query and compares at the level the plan
-- guarantees (docs/cli.md#how-compare-compares).
CREATE TABLE orders (id BIGINT) WITH (
  'connector' = 'datagen',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '4000'
);
CREATE TABLE payments (id BIGINT) WITH (
  'connector' = 'datagen',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '4000'
);

-- a join of two sources: its two inputs interleave by arrival, even at parallelism 1
-- (compared as a multiset of changelog rows and as the final result)
SELECT o.id AS order_id, p.id AS payment_id
FROM orders o JOIN payments p ON MOD(o.id, 50) = MOD(p.id, 50)
WHERE o.id <= 300;

-- a native GROUP BY over that join: its updates follow the join's arrival order
-- (compared as the final result)
SELECT MOD(o.id, 7) AS k, COUNT(*) AS n, SUM(p.id) AS total
FROM orders o JOIN payments p ON MOD(o.id, 50) = MOD(p.id, 50)
WHERE o.id <= 300
GROUP BY MOD(o.id, 7);

-- an outer join: whether a row first appears padded with NULLs depends on arrival
-- (compared as the final result)
SELECT o.id, p.id FROM orders o LEFT JOIN payments p ON o.id = p.id * 3;

-- a processing-time mini-batch: a bundle closes after 20 ms of wall clock or at 500 rows
-- (compared as the final result; the native single-phase GROUP BY runs it on the Ferry side)
SET 'table.exec.mini-batch.enabled' = 'true';
SET 'table.exec.mini-batch.allow-latency' = '20 ms';
SET 'table.exec.mini-batch.size' = '500';
SET 'table.optimizer.agg-phase-strategy' = 'ONE_PHASE';
CREATE TABLE ticks (id BIGINT) WITH (
  'connector' = 'datagen',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '30000',
  'rows-per-second' = '30000'
);
SELECT MOD(id, 40) AS k, COUNT(*) AS n, MAX(id) AS last_id FROM ticks GROUP BY MOD(id, 40);
