-- GROUP BYs a dashboard might hold, some of which stay Flink's today, each with the reason
-- Ferry records (docs/operators/group-by.md#falls-back-with-the-reason-explain-shows). Compare
-- still matches: a fallback runs Flink's own operator.
--   ./ferry sql examples/group-by-fallbacks.sql --mode compare
--   ./ferry qualify examples/group-by-fallbacks.sql
CREATE TABLE seq (id BIGINT) WITH (
  'connector' = 'datagen',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '2000'
);

CREATE TEMPORARY VIEW events AS
SELECT MOD(id, 13) AS page, CONCAT('u', CAST(MOD(id * 7, 97) AS STRING)) AS user_name,
       CAST(MOD(id * 31, 1000) AS DOUBLE) / 10 AS latency_ms, MOD(id, 5) = 0 AS error
FROM seq;

-- requests and errors per page (native)
SELECT page, COUNT(*) AS requests, COUNT(*) FILTER (WHERE error) AS errors, MAX(latency_ms) AS worst
FROM events GROUP BY page;

-- the users of each page as a multiset (COLLECT: Flink's)
SELECT page, COLLECT(user_name) AS users FROM events GROUP BY page;

-- latency spread per page, over DECIMAL (STDDEV_POP over DECIMAL: Flink's)
SELECT page, STDDEV_POP(CAST(latency_ms AS DECIMAL(10, 1))) AS spread FROM events GROUP BY page;

-- average over distinct latencies (AVG(DISTINCT): Flink's)
SELECT page, AVG(DISTINCT latency_ms) AS avg_distinct FROM events GROUP BY page;

-- distinct users per page (native)
SELECT page, COUNT(DISTINCT user_name) AS users FROM events GROUP BY page;
