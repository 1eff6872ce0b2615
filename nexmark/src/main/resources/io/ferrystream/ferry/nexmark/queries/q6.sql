-- q6: average selling price by seller. The closest form Flink 2.3 plans (docs/nexmark.md#q6):
-- Nexmark's text averages each seller's winning prices with an OVER window of ROWS BETWEEN 10
-- PRECEDING AND CURRENT ROW over the winners, an update stream, which Flink's OVER cannot read
-- ("Column 'rownum' not found", then "Non-time attribute sort is not supported"). Here the same
-- winners (each auction's highest bid within its lifetime, Nexmark's inner query) feed a Top-N
-- that keeps each seller's 11 latest auctions (the window's 10 preceding rows and the current one),
-- and an AVG over them: the value Nexmark's last window row holds, as an updating table. Latest
-- by auction id, which Nexmark assigns in creation order, not by the winning bid's time as
-- Nexmark's window orders: ordered by that time, Flink plans the Top-N with its update-fast
-- strategy, which assumes a row's order key moves one way only, and two stock runs over the same
-- events kept different rows. Equal prices go to the earliest bid (q9's rule; Nexmark leaves them to arrival order),
-- and seller is BIGINT (Nexmark's sink declares VARCHAR for a BIGINT column).
CREATE TABLE nexmark_q6 (
  seller  BIGINT,
  avg_price  BIGINT
) WITH (
  'connector' = 'nexmark-checksum'
);

INSERT INTO nexmark_q6
SELECT
    Q.seller,
    AVG(Q.price)
FROM (
    SELECT *, ROW_NUMBER() OVER (PARTITION BY W.seller ORDER BY W.id DESC) AS recent
    FROM (
        SELECT *, ROW_NUMBER() OVER (PARTITION BY id, seller ORDER BY price DESC, `dateTime` ASC) AS rownum
        FROM (SELECT A.id, A.seller, B.price, B.`dateTime`
            FROM auction AS A,
                bid AS B
            WHERE A.id = B.auction
                and B.`dateTime` between A.`dateTime` and A.expires)
    ) AS W
    WHERE rownum <= 1
) AS Q
WHERE recent <= 11
GROUP BY Q.seller;
