-- Aggregate functions beyond SUM/COUNT/AVG/MIN/MAX, all native
-- (docs/operators/group-by.md): STDDEV/VAR (Flink's $WELFORD_M2) and LISTAGG in two phases,
-- FIRST_VALUE/LAST_VALUE (one phase: they cannot merge), also with retraction, TIMESTAMP_LTZ values,
-- MIN/MAX over BOOLEAN and TIMESTAMP(6) with a BINARY key, SINGLE_VALUE (a scalar sub-query), in two phases.
--   ./ferry sql examples/more-aggregates.sql --mode compare --require-native
-- Bundles close at 500 rows or at the end of input, so a run at parallelism 1 is deterministic.
SET 'table.exec.mini-batch.enabled' = 'true';
SET 'table.exec.mini-batch.allow-latency' = '1 h';
SET 'table.exec.mini-batch.size' = '500';

CREATE TABLE src (
  id BIGINT,
  k AS MOD(id * 7919, 23),
  s AS CONCAT('v', CAST(MOD(id * 13, 101) AS STRING)),
  x AS CAST(MOD(id * 31, 1000) AS DOUBLE) / 7,
  n AS CASE WHEN MOD(id, 4) = 0 THEN CAST(NULL AS INT) ELSE CAST(MOD(id, 50) AS INT) END,
  ts AS TO_TIMESTAMP_LTZ(1700000000000 + id * 1000, 3)
) WITH ('connector' = 'datagen', 'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '20000', 'rows-per-second' = '1000000000');

-- variance in two phases
SELECT k, STDDEV_POP(x), VAR_SAMP(n), AVG(x), MAX(ts) FROM src GROUP BY k;

-- LISTAGG in two phases
SELECT k, LISTAGG(s, '|') FROM (SELECT k, s FROM src WHERE id < 300) GROUP BY k;

-- FIRST_VALUE / LAST_VALUE (one phase)
SELECT k, FIRST_VALUE(s), LAST_VALUE(n), LAST_VALUE(ts) FROM src GROUP BY k;

-- FIRST_VALUE / LAST_VALUE with retraction: a GROUP BY over a GROUP BY (the inner one in two phases)
SELECT MOD(c, 5), FIRST_VALUE(ms), LAST_VALUE(c), COUNT(*)
FROM (SELECT k, COUNT(*) AS c, MAX(s) AS ms FROM src WHERE id < 3000 GROUP BY k) GROUP BY MOD(c, 5);

-- MIN/MAX over BOOLEAN and TIMESTAMP(6) (microseconds), a BINARY key, in two phases
SELECT kb, MIN(even), MAX(even), MIN(t6), MAX(t6), COUNT(*) FROM (
  SELECT CAST(CAST(k AS STRING) AS BYTES) AS kb, MOD(id, 3) = 0 AS even,
    CAST(CONCAT('2024-01-01 00:00:', LPAD(CAST(MOD(id, 60) AS STRING), 2, '0'), '.',
      LPAD(CAST(MOD(id * 7919, 1000000) AS STRING), 6, '0')) AS TIMESTAMP(6)) AS t6
  FROM src) GROUP BY kb;

-- SINGLE_VALUE over a scalar sub-query with one row per key, in two phases
-- (the outer GROUP BY turns mini-batch on: Flink skips it for a query of projections and sub-queries)
SELECT x, COUNT(*) FROM (SELECT k, (SELECT w.s FROM src w WHERE w.id = src.k + 1) AS x FROM src) GROUP BY x;
