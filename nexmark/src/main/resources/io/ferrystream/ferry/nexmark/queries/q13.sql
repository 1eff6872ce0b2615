-- q13: bounded side input join. Each bid with the side input's value for its auction modulo
-- 10,000. Nexmark declares the side input with the legacy file system connector
-- ('connector.type' = 'filesystem'), which Flink 2.3 no longer has; here 'nexmark-side-input'
-- reads the same CSV file (10,000 lines i,i, written by the runner as Nexmark's side input
-- generator writes it) into memory when a lookup opens, as the legacy table's lookups did.
CREATE TABLE side_input (
  key BIGINT,
  `value` VARCHAR
) WITH (
  'connector' = 'nexmark-side-input',
  'path' = '${SIDE_INPUT}'
);

CREATE TABLE nexmark_q13 (
  auction  BIGINT,
  bidder  BIGINT,
  price  BIGINT,
  `dateTime`  TIMESTAMP(3),
  `value`  VARCHAR
) WITH (
  'connector' = 'nexmark-checksum'
);

INSERT INTO nexmark_q13
SELECT
    B.auction,
    B.bidder,
    B.price,
    B.`dateTime`,
    S.`value`
FROM (SELECT *, PROCTIME() as p_time FROM bid) B
JOIN side_input FOR SYSTEM_TIME AS OF B.p_time AS S
ON mod(B.auction, 10000) = S.key;
