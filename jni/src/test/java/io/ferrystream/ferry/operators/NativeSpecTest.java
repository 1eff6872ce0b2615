package io.ferrystream.ferry.operators;

import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateSpec.Call;
import io.ferrystream.ferry.kinds.groupaggregate.GroupAggregateSpec;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.BooleanType;
import org.apache.flink.table.types.logical.CharType;
import org.apache.flink.table.types.logical.DateType;
import org.apache.flink.table.types.logical.DecimalType;
import org.apache.flink.table.types.logical.DoubleType;
import org.apache.flink.table.types.logical.IntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.TimestampType;
import org.apache.flink.table.types.logical.VarCharType;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.node.ObjectNode;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;

/**
 * The spec JSON, written with Jackson: byte for byte what the hand-written writer it replaced
 * produced (group-aggregate-specs.jsonl holds that writer's output for the cases below, its
 * members arranged in the header-and-params layout of ABI 4 with every string as that writer
 * escaped it), strings of any content survive, and every input has its place in the header.
 */
class NativeSpecTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    static RowType row(Object... nameType) {
        LogicalType[] types = new LogicalType[nameType.length / 2];
        String[] names = new String[nameType.length / 2];
        for (int i = 0; i < types.length; i++) {
            names[i] = (String) nameType[2 * i];
            types[i] = (LogicalType) nameType[2 * i + 1];
        }
        return RowType.of(types, names);
    }

    static final RowType BIDS = row("auction", new BigIntType(false), "bidder", new BigIntType(), "price", new BigIntType(),
            "channel", new VarCharType(VarCharType.MAX_LENGTH), "url", new VarCharType(VarCharType.MAX_LENGTH),
            "ts", new TimestampType(3), "amount", new DecimalType(18, 2), "ok", new BooleanType());

    /** Keys, projection, Java-String flags, DISTINCT, FILTER, retraction, mini-batch, TTL, odd names. */
    static List<GroupAggregateSpec> cases() {
        RowType odd = row("k \"quoted\"", new VarCharType(10), "back\\slash", new IntType(), "tab\tnew\nline", new DoubleType(),
                "ünï€ode", new CharType(false, 3), "ts9", new TimestampType(9), "d", new DateType());
        return List.of(
                new GroupAggregateSpec("GroupAggregate(groupBy=[auction], select=[auction, COUNT(*) AS bids, SUM(price) AS total])",
                        BIDS, new int[] {0},
                        List.of(new Call("COUNT", new int[0], false, "bids"), new Call("SUM", new int[] {2}, false, "total")),
                        false, false, 0, false),
                new GroupAggregateSpec("GroupAggregate(groupBy=[channel, auction], select=[...])",
                        BIDS, new int[] {3, 0},
                        List.of(new Call("MIN", new int[] {4}, true, "minUrl"),
                                new Call("MAX", new int[] {3}, true, "maxChannel"),
                                new Call("MAX", new int[] {4}, true, "maxUrl", false, 7),
                                new Call("SUM", new int[] {6}, true, "s", true, -1),
                                new Call("COUNT", new int[] {1}, false, "c", true, 7),
                                new Call("AVG", new int[] {2}, true, "a"),
                                new Call("SUM0", new int[] {2}, false, "z")),
                        true, true, 3_600_000, true),
                new GroupAggregateSpec("name with \"quotes\", back\\slash, tab\t, newline\n, ünï€ode",
                        odd, new int[] {0, 3},
                        List.of(new Call("MAX", new int[] {0}, false, "m \"x\""), new Call("SUM", new int[] {2}, false, "s\\"),
                                new Call("MIN", new int[] {4}, true, "t"), new Call("COUNT", new int[] {5}, false, "d\n")),
                        false, true, -5, false),
                new GroupAggregateSpec("global", BIDS, new int[0],
                        List.of(new Call("COUNT", new int[0], false, "n")), false, false, 1, false));
    }

    static List<String> golden() throws IOException {
        try (InputStream in = NativeSpecTest.class.getResourceAsStream("group-aggregate-specs.jsonl")) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8).lines().toList();
        }
    }

    @Test
    void groupAggregateSpecsAreByteForByteThoseOfTheHandWrittenWriter() throws IOException {
        int[][] ranges = {{128, 0, 127}, {4096, 17, 2047}, {1, 0, 0}};
        List<GroupAggregateSpec> cases = cases();
        List<String> want = golden();
        assertEquals(cases.size(), want.size());
        for (int i = 0; i < cases.size(); i++) {
            int[] r = ranges[i % ranges.length];
            assertEquals(want.get(i), cases.get(i).toJson(r[0], r[1], r[2]), "case " + i);
        }
    }

    /** Control characters are escaped (Jackson's way: \b, \f, \\u00XX), so Go reads the same strings. */
    @Test
    void anyStringSurvives() throws IOException {
        StringBuilder all = new StringBuilder();
        for (char c = 0; c < 0x80; c++) {
            all.append(c);
        }
        all.append("ü€\u2028\u2029\uD83D\uDE00");
        String name = all.toString();
        GroupAggregateSpec spec = new GroupAggregateSpec(name, row(name, new BigIntType(), "v", new BigIntType()), new int[] {0},
                List.of(new Call("SUM", new int[] {1}, false, name)), false, false, 0, false);
        String json = spec.toJson(128, 0, 127);
        for (int i = 0; i < json.length(); i++) {
            assertTrue(json.charAt(i) >= 0x20, "a raw control character at " + i + ": " + json);
        }
        JsonNode tree = JSON.readTree(json);
        assertEquals(name, tree.get("name").asText());
        assertEquals(name, tree.get("inputs").get(0).get("fields").get(0).get("name").asText());
        assertEquals(name, tree.get("params").get("aggs").get(0).get("name").asText());
    }

    /** The common part comes from NativeSpec, the parameters from the kind, in this order. */
    @Test
    void headerThenParams() throws IOException {
        GroupAggregateSpec spec = cases().get(0);
        JsonNode tree = JSON.readTree(spec.toJson(256, 8, 15));
        assertEquals(List.of("kind", "name", "inputs", "max_parallelism", "key_group_start", "key_group_end", "params"),
                names(tree.fieldNames()));
        assertEquals(GroupAggregateSpec.KIND, spec.kind());
        assertEquals(256, tree.get("max_parallelism").asInt());
        assertEquals(8, tree.get("key_group_start").asInt());
        assertEquals(15, tree.get("key_group_end").asInt());
        assertEquals(List.of("aggs", "need_retraction", "generate_update_before", "state_ttl_ms"),
                names(tree.get("params").fieldNames()));
    }

    private static List<String> names(Iterator<String> it) {
        List<String> out = new ArrayList<>();
        it.forEachRemaining(out::add);
        return out;
    }

    /** Each input, in order, has its fields and key columns in the header. */
    @Test
    void everyInputInTheHeader() throws IOException {
        NativeSpec.Input a = NativeSpec.Input.of(BIDS, new int[] {0, 2}, new int[] {0}, new int[0]);
        NativeSpec.Input b = NativeSpec.Input.of(BIDS, new int[] {1, 3, 0}, new int[] {2, 0}, new int[0]);
        NativeSpec two = new NativeSpec("some_join", "join", List.of(a, b)) {
            @Override
            protected void writeParams(ObjectNode params) {
                params.put("p", 1);
            }
        };
        JsonNode tree = JSON.readTree(two.toJson(128, 0, 127));
        assertEquals("[{\"fields\":[{\"name\":\"auction\",\"type\":\"BIGINT\",\"nullable\":false},"
                + "{\"name\":\"price\",\"type\":\"BIGINT\",\"nullable\":true}],\"keys\":[0]},"
                + "{\"fields\":[{\"name\":\"bidder\",\"type\":\"BIGINT\",\"nullable\":true},"
                + "{\"name\":\"channel\",\"type\":\"VARCHAR(2147483647)\",\"nullable\":true},"
                + "{\"name\":\"auction\",\"type\":\"BIGINT\",\"nullable\":false}],\"keys\":[2,0]}]",
                tree.get("inputs").toString());
        assertEquals("{\"p\":1}", tree.get("params").toString());
    }

    @Test
    void inputs() {
        NativeSpec.Input in = NativeSpec.Input.of(BIDS, new int[] {3, 0}, new int[] {1}, new int[] {0});
        assertEquals("ROW<`channel` VARCHAR(2147483647), `auction` BIGINT NOT NULL, `channel$java` BOOLEAN NOT NULL> NOT NULL",
                in.type().asSerializableString());
        assertThrows(IllegalArgumentException.class, () -> NativeSpec.Input.of(BIDS, new int[] {3}, new int[] {2}, new int[0]));
    }
}
