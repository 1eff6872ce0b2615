-- Regular joins (docs/operators/regular-join.md): the kind is a preview, off by default, so this
-- script switches it on; then every join here runs natively:
--   ./ferry sql examples/regular-join.sql --mode compare --require-native
-- A join's two inputs interleave by arrival, so compare checks what the plan guarantees: the
-- multiset of an inner join of insert-only inputs, the final result of outer joins and of joins
-- over updating inputs (their pads and retractions depend on which side's row came first).
-- The last section switches mini-batch on: the joins after it run Flink's mini-batch join.

SET 'ferry.regular-join.enabled' = 'true';

CREATE TABLE orders (
  id BIGINT,
  customer AS CASE WHEN MOD(id, 29) = 0 THEN CAST(NULL AS BIGINT) ELSE MOD(id * 7919, 150) END,
  region AS CASE WHEN MOD(id, 7) = 0 THEN CAST(NULL AS STRING) ELSE CONCAT('r', CAST(MOD(id, 3) AS STRING)) END,
  amount AS CAST(MOD(id * 31, 1000) AS DECIMAL(10, 2)) / 10,
  qty AS CAST(MOD(id * 17, 11) AS INT)
) WITH (
  'connector' = 'datagen',
  'fields.id.kind' = 'sequence',
  'fields.id.start' = '1',
  'fields.id.end' = '3000',
  'rows-per-second' = '1000000000'
);

CREATE TABLE customers (
  id BIGINT,
  customer AS MOD(id, 200),
  region AS CASE WHEN MOD(id, 11) = 0 THEN CAST(NULL AS STRING) ELSE CONCAT('r', CAST(MOD(id, 3) AS STRING)) END,
  name AS CONCAT('c', CAST(id AS STRING)),
  credit AS CAST(MOD(id * 13, 12) AS INT)
) WITH (
  'connector' = 'datagen',
  'fields.id.kind' = 'sequence',
  'fields.id.start' = '1',
  'fields.id.end' = '400',
  'rows-per-second' = '1000000000'
);

-- an inner join of insert-only inputs (each order meets its customer's two rows)
SELECT o.id, o.customer, o.amount, c.name
FROM orders o JOIN customers c ON o.customer = c.customer;

-- a left join with a residual condition: an order without a customer of enough credit is padded
SELECT o.id, o.qty, c.name, c.credit
FROM orders o LEFT JOIN customers c ON o.customer = c.customer AND o.qty < c.credit;

-- a full join on a composite key whose second part is IS NOT DISTINCT FROM (NULL regions meet)
SELECT o.id, o.region, c.name
FROM orders o FULL JOIN customers c ON o.customer = c.customer AND o.region IS NOT DISTINCT FROM c.region;

-- joins over GROUP BYs: updating inputs, each side's unique key its join key
SELECT a.customer, a.orders, a.total, b.credit
FROM (SELECT customer, COUNT(*) AS orders, SUM(amount) AS total FROM orders GROUP BY customer) a
RIGHT JOIN (SELECT customer, MAX(credit) AS credit FROM customers GROUP BY customer) b
ON a.customer = b.customer;

-- a SEMI join (IN): each order of a customer with enough credit, once
SELECT o.id, o.customer, o.amount
FROM orders o WHERE o.customer IN (SELECT customer FROM customers WHERE credit > 8);

-- an ANTI join (NOT EXISTS) with a residual condition: orders no customer of their region covers
SELECT o.id, o.region, o.qty
FROM orders o WHERE NOT EXISTS (
  SELECT * FROM customers c WHERE c.customer = o.customer AND c.region = o.region AND c.credit > o.qty);

-- mini-batch: Flink's MiniBatchStreamingJoinOperator, run natively in the same bundles
SET 'table.exec.mini-batch.enabled' = 'true';
SET 'table.exec.mini-batch.allow-latency' = '100 ms';
SET 'table.exec.mini-batch.size' = '500';

-- the inner join in bundles of 500 rows
SELECT o.id, o.customer, o.amount, c.name
FROM orders o JOIN customers c ON o.customer = c.customer;

-- a full join with a residual condition in bundles: pads retracted and restored per bundle
SELECT o.id, o.qty, c.name, c.credit
FROM orders o FULL JOIN customers c ON o.customer = c.customer AND o.qty < c.credit;
