-- Aggregate functions beyond SUM/COUNT/AVG/MIN/MAX, all native
-- (docs/operators/group-by.md): STDDEV/VAR (Flink's $WELFORD_M2) and LISTAGG in two phases,
-- FIRST_VALUE/LAST_VALUE (one phase: they cannot merge), also with retraction, TIMESTAMP_LTZ values.
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
