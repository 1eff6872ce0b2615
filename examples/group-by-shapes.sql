-- GROUP BY shapes around the aggregate: grouping sets, ROLLUP and CUBE (an Expand feeding one
-- aggregate keyed by the $e grouping id), HAVING, an aggregate over an aggregate's changelog, a
-- global aggregate, and SELECT DISTINCT under a GROUP BY. Every GROUP BY here runs natively.
--   ./ferry sql examples/group-by-shapes.sql --mode compare
CREATE TABLE seq (id BIGINT) WITH (
  'connector' = 'datagen',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '3000'
);

CREATE TEMPORARY VIEW t AS
SELECT MOD(id * 7919, 13) AS a, MOD(id * 31, 5) AS b, CAST(MOD(id, 7) AS INT) AS c, id * 3 AS v,
  CONCAT('s', CAST(MOD(id, 11) AS STRING)) AS s
FROM seq;

SELECT a, b, SUM(v), COUNT(*), GROUPING_ID(a, b) FROM t GROUP BY GROUPING SETS ((a, b), (a), ());
SELECT a, b, MAX(v), MIN(s) FROM t GROUP BY ROLLUP (a, b);
SELECT a, c, COUNT(DISTINCT b), AVG(v) FROM t GROUP BY CUBE (a, c);
SELECT a, SUM(v) FROM t GROUP BY a HAVING SUM(v) > 1000;
SELECT cnt, COUNT(*), MAX(a) FROM (SELECT a, COUNT(*) AS cnt FROM t GROUP BY a) GROUP BY cnt;
SELECT COUNT(*), SUM(v), MAX(s) FROM t;
SELECT a, COUNT(*) FROM (SELECT DISTINCT a, b FROM t) GROUP BY a;
