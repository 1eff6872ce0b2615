-- Window joins, all native (docs/operators/window-join.md): two window table-valued functions
-- joined on window_start, window_end and a key, Nexmark q8's shape:
--   ./ferry sql examples/window-join.sql --mode compare --require-native
-- The watermarks lag the row times by an hour, longer than the data spans: no row is late, and
-- every window fires with the final watermark, so the multiset is the same in every run.

CREATE TABLE persons (
  id BIGINT,
  p_time AS TO_TIMESTAMP(FROM_UNIXTIME(1700000000 + id / 3)),
  city AS CASE WHEN MOD(id, 6) = 0 THEN CAST(NULL AS BIGINT) ELSE MOD(id * 7919, 41) END,
  WATERMARK FOR p_time AS p_time - INTERVAL '1' HOUR
) WITH (
  'connector' = 'datagen',
  'fields.id.kind' = 'sequence',
  'fields.id.start' = '1',
  'fields.id.end' = '4000',
  'rows-per-second' = '1000000000'
);

CREATE TABLE auctions (
  id BIGINT,
  a_time AS TO_TIMESTAMP(FROM_UNIXTIME(1700000000 + id / 2)),
  city AS CASE WHEN MOD(id, 9) = 0 THEN CAST(NULL AS BIGINT) ELSE MOD(id * 104729, 41) END,
  price AS CAST(MOD(id * 31, 1000) AS INT),
  WATERMARK FOR a_time AS a_time - INTERVAL '1' HOUR
) WITH (
  'connector' = 'datagen',
  'fields.id.kind' = 'sequence',
  'fields.id.start' = '1',
  'fields.id.end' = '3000',
  'rows-per-second' = '1000000000'
);

-- tumbling windows, inner join (Nexmark q8)
SELECT p.city, p.window_start, p.window_end, p.id AS pid, a.id AS aid
FROM (SELECT * FROM TABLE(TUMBLE(TABLE persons, DESCRIPTOR(p_time), INTERVAL '10' SECOND))) p
JOIN (SELECT * FROM TABLE(TUMBLE(TABLE auctions, DESCRIPTOR(a_time), INTERVAL '10' SECOND))) a
  ON p.window_start = a.window_start AND p.window_end = a.window_end AND p.city = a.city;

-- hopping windows, both sides padded (NULL cities never match and are padded), a residual condition
SELECT p.city, p.window_end, p.id AS pid, a.id AS aid, a.price
FROM (SELECT * FROM TABLE(HOP(TABLE persons, DESCRIPTOR(p_time), INTERVAL '5' SECOND, INTERVAL '15' SECOND))) p
FULL JOIN (SELECT * FROM TABLE(HOP(TABLE auctions, DESCRIPTOR(a_time), INTERVAL '5' SECOND, INTERVAL '15' SECOND))) a
  ON p.window_start = a.window_start AND p.window_end = a.window_end AND p.city = a.city AND a.price > 100;

-- cumulating windows, anti join: persons without an auction in their city and window
SELECT p.city, p.window_end, p.id
FROM (SELECT * FROM TABLE(CUMULATE(TABLE persons, DESCRIPTOR(p_time), INTERVAL '5' SECOND, INTERVAL '20' SECOND))) p
WHERE NOT EXISTS (
  SELECT * FROM (SELECT * FROM TABLE(CUMULATE(TABLE auctions, DESCRIPTOR(a_time), INTERVAL '5' SECOND, INTERVAL '20' SECOND))) a
  WHERE p.window_start = a.window_start AND p.window_end = a.window_end AND p.city = a.city);
