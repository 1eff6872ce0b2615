-- q10: log to file system. Every bid with its day and minute. Nexmark writes them to CSV files
-- partitioned by dt and hm; here the checksum sink takes the same rows (a sink that is no file
-- system takes no PARTITIONED BY).
CREATE TABLE nexmark_q10 (
  auction  BIGINT,
  bidder  BIGINT,
  price  BIGINT,
  `dateTime`  TIMESTAMP(3),
  extra  VARCHAR,
  dt STRING,
  hm STRING
) WITH (
  'connector' = 'nexmark-checksum'
);

INSERT INTO nexmark_q10
SELECT auction, bidder, price, `dateTime`, extra, DATE_FORMAT(`dateTime`, 'yyyy-MM-dd'), DATE_FORMAT(`dateTime`, 'HH:mm')
FROM bid;
