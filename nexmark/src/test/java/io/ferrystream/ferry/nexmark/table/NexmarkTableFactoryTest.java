package io.ferrystream.ferry.nexmark.table;

import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The 'nexmark' connector's checks of its table and options: clear errors at planning. */
class NexmarkTableFactoryTest {
    private static String explain(String columns, String options) {
        StreamTableEnvironment t = StreamTableEnvironment.create(StreamExecutionEnvironment.getExecutionEnvironment());
        t.executeSql("CREATE TABLE e (" + columns + ") WITH ('connector' = 'nexmark'" + options + ")");
        return t.explainSql("SELECT * FROM e");
    }

    private static final String COLUMNS = "event_type INT,"
            + " person ROW<id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR, state VARCHAR,"
            + " `dateTime` TIMESTAMP(3), extra VARCHAR>,"
            + " auction ROW<id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT,"
            + " `dateTime` TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR>,"
            + " bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR, `dateTime` TIMESTAMP(3),"
            + " extra VARCHAR>";

    private static String message(Throwable t) {
        StringBuilder b = new StringBuilder();
        for (Throwable c = t; c != null; c = c.getCause()) {
            b.append(c.getMessage()).append('\n');
        }
        return b.toString();
    }

    @Test
    void plansNexmarksTable() {
        assertTrue(explain(COLUMNS, ", 'events.num' = '1000', 'seed' = '3'")
                .contains("TableSourceScan(table=[[default_catalog, default_database, e]]"));
    }

    @Test
    void namesTheColumnsItWants() {
        Throwable e = assertThrows(Exception.class, () -> explain("event_type INT, bid ROW<auction BIGINT>", ""));
        assertTrue(message(e).contains("has physical columns ROW<`event_type` INT, `bid` ROW<`auction` BIGINT>>;"
                + " Nexmark's table has ROW<`event_type` INT, `person` ROW<"), message(e));
    }

    @Test
    void refusesBadOptions() {
        assertTrue(message(assertThrows(Exception.class, () -> explain(COLUMNS, ", 'first-event.rate' = '0'")))
                .contains("nexmark: first-event.rate must be positive, got 0"));
        assertTrue(message(assertThrows(Exception.class, () -> explain(COLUMNS, ", 'base-time' = 'yesterday'")))
                .contains("base-time must be an ISO-8601 instant"));
        assertTrue(message(assertThrows(Exception.class, () -> explain(COLUMNS, ", 'events.num' = '3', 'splits' = '4'")))
                .contains("events.num (3) must be at least the number of splits (4)"));
    }
}
