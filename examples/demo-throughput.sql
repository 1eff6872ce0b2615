-- The demo's side-by-side run (`./build.sh demo`, or `./ferry bench examples/demo-throughput.sql`):
-- 4 million Nexmark-shaped bids over 100,000 auctions, aggregated in two stages as Nexmark q4
-- does after its join (the highest bid per auction, then the average of those per category).
-- Mini-batch is on (bundles of 10,000 rows; the allow-latency is long, so a bundle closes on its
-- size), with single-phase aggregation: Ferry runs Flink's single-phase mini-batch GROUP BY
-- natively (the two-phase plan, Flink's default with mini-batch, is not native yet). The result
-- is small (five categories), so the run measures the operators, not the client collecting rows.
SET 'table.exec.mini-batch.enabled' = 'true';
SET 'table.exec.mini-batch.allow-latency' = '1 h';
SET 'table.exec.mini-batch.size' = '10000';
SET 'table.optimizer.agg-phase-strategy' = 'ONE_PHASE';

CREATE TABLE gen (seq BIGINT) WITH (
  'connector' = 'datagen',
  'fields.seq.kind' = 'sequence', 'fields.seq.start' = '0', 'fields.seq.end' = '3999999',
  'rows-per-second' = '1000000000'
);

-- Deterministic bids: the auction and the price come from multiplicative hashes of seq.
CREATE TEMPORARY VIEW bid AS
SELECT auction, 10 + MOD(auction, 5) AS category, price
FROM (
  SELECT MOD(seq * 2654435761, 100000) AS auction, 100 + MOD(seq * 40503 + 12345, 9999900) AS price
  FROM gen
);

-- q4's aggregation stages
SELECT category, AVG(final) AS avg_final, COUNT(*) AS auctions
FROM (SELECT auction, category, MAX(price) AS final FROM bid GROUP BY auction, category)
GROUP BY category;
