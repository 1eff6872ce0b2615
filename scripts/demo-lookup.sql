-- The lookup join demo (./build.sh demo-lookup): orders joined with a products table in a real
-- PostgreSQL through Flink's JDBC connector. The script fills in @URL@, @USER@ and @PASSWORD@ with
-- the server it starts; ./ferry runs every query with Ferry off and on and compares.

-- 20,000 orders: a sequence, with product ids over 1..1100 (products 1001..1100 do not exist)
CREATE TABLE gen (seq BIGINT, pt AS PROCTIME()) WITH (
  'connector' = 'datagen', 'fields.seq.kind' = 'sequence', 'fields.seq.start' = '1', 'fields.seq.end' = '20000'
);
CREATE VIEW orders AS
  SELECT seq AS id, 1 + MOD(seq * 7919, 1100) AS product, CAST(1 + MOD(seq, 9) AS INT) AS qty, pt FROM gen;

CREATE TABLE products (id BIGINT, name STRING, price DECIMAL(10, 2), category STRING, added TIMESTAMP(3)) WITH (
  'connector' = 'jdbc', 'url' = '@URL@', 'table-name' = 'products',
  'username' = '@USER@', 'password' = '@PASSWORD@'
);

-- INNER: Go looks the products up, one statement per batch of orders (fetch=[PostgreSQL in Go, ...])
SELECT o.id, o.qty, p.name, p.price * o.qty AS total
FROM orders AS o JOIN products FOR SYSTEM_TIME AS OF o.pt AS p ON o.product = p.id;

-- LEFT with a residual condition: unknown products and cheap ones padded with NULLs
SELECT o.id, p.name, p.category, p.added
FROM orders AS o LEFT JOIN products FOR SYSTEM_TIME AS OF o.pt AS p ON o.product = p.id AND p.price * o.qty > 100;

-- A condition on the products alone is pushed into the JDBC source: the join stays Ferry's operator,
-- the lookups Flink's JDBC function (fetch=[Flink's JDBC lookup per probe row: ...])
SELECT o.id, p.name FROM orders AS o JOIN products FOR SYSTEM_TIME AS OF o.pt AS p
  ON o.product = p.id AND p.category = 'books';
