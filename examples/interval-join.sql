-- Interval joins, all native (docs/operators/interval-join.md): row time with residual
-- conditions beyond the keys and the time bounds, the EARLY_FIRE hint, a TIMESTAMP_LTZ row time,
-- processing time:
--   ./ferry sql examples/interval-join.sql --mode compare --require-native
-- A join's two inputs interleave by arrival, so compare checks the multiset of changelog rows.
-- The watermarks lag the row times by an hour, longer than the data spans: no row is late, and
-- every pair within the bounds meets the condition test whatever the interleaving, so the
-- multiset is the same in every run (the pads come with the final watermark).

CREATE TABLE orders (
  id BIGINT,
  ord_time AS TO_TIMESTAMP(FROM_UNIXTIME(1700000000 + id / 3)),
  item AS MOD(id * 7919, 97),
  qty AS CAST(MOD(id * 31, 11) AS INT),
  region AS CASE WHEN MOD(id, 5) = 0 THEN CAST(NULL AS STRING) ELSE CONCAT('r', CAST(MOD(id, 4) AS STRING)) END,
  pt AS PROCTIME(),
  WATERMARK FOR ord_time AS ord_time - INTERVAL '1' HOUR
) WITH (
  'connector' = 'datagen',
  'fields.id.kind' = 'sequence',
  'fields.id.start' = '1',
  'fields.id.end' = '5000',
  'rows-per-second' = '1000000000'
);

CREATE TABLE shipments (
  id BIGINT,
  ship_time AS TO_TIMESTAMP(FROM_UNIXTIME(1700000000 + id / 2)),
  item AS MOD(id * 104729, 97),
  qty AS CAST(MOD(id * 17, 13) AS INT),
  region AS CASE WHEN MOD(id, 7) = 0 THEN CAST(NULL AS STRING) ELSE CONCAT('r', CAST(MOD(id, 3) AS STRING)) END,
  pt AS PROCTIME(),
  WATERMARK FOR ship_time AS ship_time - INTERVAL '1' HOUR
) WITH (
  'connector' = 'datagen',
  'fields.id.kind' = 'sequence',
  'fields.id.start' = '1',
  'fields.id.end' = '3000',
  'rows-per-second' = '1000000000'
);

-- a comparison between the two sides
SELECT o.id, s.id AS sid, o.qty, s.qty AS sqty
FROM orders o JOIN shipments s
  ON o.item = s.item AND s.ship_time BETWEEN o.ord_time AND o.ord_time + INTERVAL '10' MINUTE
 AND o.qty > s.qty;

-- three-valued logic: a NULL region fails <>, so only IS NULL lets such a shipment join
SELECT o.id, o.region, s.id AS sid, s.region AS sregion
FROM orders o LEFT JOIN shipments s
  ON o.item = s.item AND s.ship_time BETWEEN o.ord_time - INTERVAL '2' MINUTE AND o.ord_time + INTERVAL '5' MINUTE
 AND (o.region <> s.region OR s.region IS NULL);

-- integer arithmetic in the condition, both sides padded
SELECT o.id, o.qty, s.id AS sid, s.qty AS sqty
FROM orders o FULL JOIN shipments s
  ON o.item = s.item AND o.ord_time BETWEEN s.ship_time - INTERVAL '3' MINUTE AND s.ship_time
 AND o.qty + 1 >= s.qty;

-- The EARLY_FIRE hint (Flink 2.3 has none; the stock side of compare runs the query without it):
-- an unmatched row is padded once its delay has passed and the pad corrected (-U, +U) when a
-- match comes later, so the changelog differs from Flink's while the table it leaves is the same,
-- which compare checks. Row time: the pads are due with the watermark, here the final one.
SELECT /*+ EARLY_FIRE('delay'='30s') */ o.id, s.id AS sid, o.qty, s.qty AS sqty
FROM orders o LEFT JOIN shipments s
  ON o.item = s.item AND s.ship_time BETWEEN o.ord_time AND o.ord_time + INTERVAL '2' MINUTE
 AND o.qty > s.qty;

-- processing-time early fire on a row-time join: pads 1 ms after a row arrives, corrected by
-- the matches that arrive later
SELECT /*+ EARLY_FIRE('delay'='1ms', 'time-mode'='proctime') */ o.id, s.id AS sid
FROM orders o FULL JOIN shipments s
  ON o.item = s.item AND o.ord_time BETWEEN s.ship_time - INTERVAL '3' MINUTE AND s.ship_time;

-- TIMESTAMP_LTZ row times (epoch milliseconds, whatever the session time zone)
CREATE TABLE payments (
  id BIGINT,
  pay_time AS TO_TIMESTAMP_LTZ((1700000000 + id / 2) * 1000, 3),
  item AS MOD(id * 31, 97),
  WATERMARK FOR pay_time AS pay_time - INTERVAL '1' HOUR
) WITH (
  'connector' = 'datagen',
  'fields.id.kind' = 'sequence',
  'fields.id.start' = '1',
  'fields.id.end' = '3000',
  'rows-per-second' = '1000000000'
);

CREATE TABLE refunds (
  id BIGINT,
  refund_time AS TO_TIMESTAMP_LTZ((1700000000 + id) * 1000, 3),
  item AS MOD(id * 17, 97),
  WATERMARK FOR refund_time AS refund_time - INTERVAL '1' HOUR
) WITH (
  'connector' = 'datagen',
  'fields.id.kind' = 'sequence',
  'fields.id.start' = '1',
  'fields.id.end' = '1500',
  'rows-per-second' = '1000000000'
);

SET 'table.local-time-zone' = 'America/Los_Angeles';

-- TIMESTAMP_LTZ row times, refunds padded
SELECT p.id, p.pay_time, r.id AS rid, r.refund_time
FROM payments p RIGHT JOIN refunds r
  ON p.item = r.item AND r.refund_time BETWEEN p.pay_time AND p.pay_time + INTERVAL '2' MINUTE;

-- processing time: the bounds (an hour) are wider than the run, so every pair of one item joins
-- whatever the timing (no cleanup timer comes due, none fires at the end of the input)
SELECT o.id, s.id AS sid
FROM orders o JOIN shipments s
  ON o.item = s.item AND s.pt BETWEEN o.pt - INTERVAL '1' HOUR AND o.pt + INTERVAL '1' HOUR
 AND o.qty > s.qty;
