-- One GROUP BY per row of docs/operators/group-by.md's table, on insert-only and on retracting
-- input, with DISTINCT, FILTER and NULLs. Deterministic: every run sees the same rows in order.
--   ./ferry sql examples/group-by-types.sql --mode compare
CREATE TABLE seq (id BIGINT) WITH (
  'connector' = 'datagen',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '5000'
);

CREATE TEMPORARY VIEW t AS
SELECT
  MOD(id * 7919, 37) AS k,
  CASE WHEN MOD(id, 11) = 0 THEN CAST(NULL AS BIGINT) ELSE id * 1000003 - 2500000000 END AS b,
  CAST(MOD(id * 31, 20011) - 10000 AS INT) AS i,
  CAST(MOD(id * 37, 60001) - 30000 AS SMALLINT) AS s,
  CAST(MOD(id * 41, 251) - 125 AS TINYINT) AS ti,
  CASE WHEN MOD(id, 13) = 0 THEN CAST(NULL AS DOUBLE) ELSE CAST(MOD(id * 17, 10007) AS DOUBLE) / 7 - 700 END AS d,
  CAST(MOD(id * 19, 1009) AS FLOAT) / CAST(3 AS FLOAT) AS f,
  CAST(CAST(MOD(id * 23, 100003) - 50000 AS DECIMAL(10, 0)) / 100 AS DECIMAL(10, 2)) AS m,
  CAST(id * 99991 AS DECIMAL(38, 4)) * CAST(1000000000000000000 AS DECIMAL(38, 4)) AS big,
  CASE WHEN MOD(id, 17) = 0 THEN CAST(NULL AS STRING) ELSE CONCAT('név-', CAST(MOD(id * 29, 503) AS STRING), '😀') END AS v,
  MOD(id, 3) = 0 AS flag
FROM seq;

SELECT k, SUM(b), AVG(b), MIN(b), MAX(b), COUNT(b), COUNT(DISTINCT b) FILTER (WHERE flag) FROM t GROUP BY k;
SELECT k, SUM(i), AVG(i), MIN(i), MAX(i), COUNT(i), SUM(DISTINCT i) FROM t GROUP BY k;
SELECT k, SUM(s), AVG(s), MIN(s), MAX(s), COUNT(s) FROM t GROUP BY k;
SELECT k, SUM(ti), AVG(ti), MIN(ti), MAX(ti), COUNT(DISTINCT ti) FROM t GROUP BY k;
SELECT k, SUM(d), AVG(d), MIN(d), MAX(d), COUNT(d) FILTER (WHERE flag) FROM t GROUP BY k;
SELECT k, SUM(f), AVG(f), MIN(f), MAX(f), COUNT(DISTINCT f) FROM t GROUP BY k;
SELECT k, SUM(m), AVG(m), MIN(m), MAX(m), COUNT(DISTINCT m) FROM t GROUP BY k;
SELECT k, SUM(big), AVG(big), MIN(big), MAX(big) FROM t GROUP BY k;
SELECT k, MIN(v), MAX(v), COUNT(v), COUNT(DISTINCT v) FROM t GROUP BY k;

-- Retracting input: the same aggregates over another GROUP BY's changelog.
SELECT n, SUM(b), AVG(i), MIN(d), MAX(s), SUM(m), MIN(v), MAX(v), COUNT(DISTINCT ti)
FROM (SELECT k, COUNT(*) / 40 AS n, MAX(b) AS b, MIN(i) AS i, MAX(d) AS d, MIN(s) AS s,
             MAX(m) AS m, MIN(v) AS v, MAX(ti) AS ti
      FROM t GROUP BY k)
GROUP BY n;
