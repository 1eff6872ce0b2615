-- Outer interval joins with the EARLY_FIRE hint (docs/operators/interval-join.md#early_fire),
-- which Flink 2.3 does not have and Ferry brings:
--   ./ferry sql examples/interval-join-early-fire.sql --mode compare --require-native
-- The stock side runs each query without the hint. An early-fire join pads an unmatched row once
-- its delay has passed and corrects the pad (-U, +U) when a match comes later, so its changelog
-- differs from Flink's, while the table it leaves is the same: compare checks the final result.
-- The watermarks lag the row times by an hour, longer than the data spans, so no row is late and
-- the final result does not depend on the timing.

CREATE TABLE orders (
  id BIGINT,
  ord_time AS TO_TIMESTAMP(FROM_UNIXTIME(1700000000 + id / 3)),
  item AS MOD(id * 7919, 97),
  qty AS CAST(MOD(id * 31, 11) AS INT),
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
  WATERMARK FOR ship_time AS ship_time - INTERVAL '1' HOUR
) WITH (
  'connector' = 'datagen',
  'fields.id.kind' = 'sequence',
  'fields.id.start' = '1',
  'fields.id.end' = '3000',
  'rows-per-second' = '1000000000'
);

-- row-time early fire: the pads are due with the watermark, here the final one
SELECT /*+ EARLY_FIRE('delay'='30s') */ o.id, s.id AS sid, o.qty, s.qty AS sqty
FROM orders o LEFT JOIN shipments s
  ON o.item = s.item AND s.ship_time BETWEEN o.ord_time AND o.ord_time + INTERVAL '2' MINUTE
 AND o.qty > s.qty;

-- processing-time early fire on a row-time join: pads 1 ms after a row arrives, corrected by
-- the matches that arrive later
SELECT /*+ EARLY_FIRE('delay'='1ms', 'time-mode'='proctime') */ o.id, s.id AS sid
FROM orders o FULL JOIN shipments s
  ON o.item = s.item AND o.ord_time BETWEEN s.ship_time - INTERVAL '3' MINUTE AND s.ship_time;
