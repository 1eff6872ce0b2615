-- Ferry's operators under Flink's other state backends, set in the script as in Flink's SQL client:
--   ./ferry sql examples/state-backends.sql --mode compare --require-native
-- Ferry keeps its state in Go on every backend and checkpoints it as the backend's raw keyed
-- state (docs/state.md); Flink's operators on the stock side keep theirs in RocksDB and ForSt.

CREATE TABLE bid (
  id BIGINT,
  bidder AS MOD(id, 50),
  auction AS MOD(id * 7919, 97),
  price AS CAST(MOD(id * 31, 1000) + 1 AS INT),
  ts AS TO_TIMESTAMP(FROM_UNIXTIME(1700000000 + id / 10)),
  WATERMARK FOR ts AS ts - INTERVAL '1' SECOND
) WITH (
  'connector' = 'datagen',
  'fields.id.kind' = 'sequence',
  'fields.id.start' = '1',
  'fields.id.end' = '5000',
  'rows-per-second' = '1000000000'
);

SET 'state.backend.type' = 'rocksdb';

SELECT bidder, COUNT(*) AS bids, MAX(price) AS top FROM bid GROUP BY bidder;

SELECT auction, bidder, price
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY price DESC, id) AS rn FROM bid)
WHERE rn <= 3;

SELECT auction, bidder, price
FROM (SELECT *, ROW_NUMBER() OVER (PARTITION BY auction ORDER BY ts DESC) AS rn FROM bid)
WHERE rn = 1;

SET 'state.backend.type' = 'forst';

SELECT bidder, COUNT(*) AS bids, MAX(price) AS top FROM bid GROUP BY bidder;
