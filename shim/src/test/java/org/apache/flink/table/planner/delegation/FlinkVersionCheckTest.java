package org.apache.flink.table.planner.delegation;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.apache.flink.runtime.util.EnvironmentInformation;
import org.apache.flink.table.api.TableException;
import org.junit.jupiter.api.Test;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The shim's version check, through its package-private seam, and its option defaults. */
class FlinkVersionCheckTest {
    @Test
    void acceptsExactly230() {
        assertDoesNotThrow(() -> DefaultPlannerFactory.checkFlinkVersion("2.3.0", "2.3.0"));
    }

    @Test
    void refusesAnyOtherPlannerOrRuntimeVersion() {
        String[][] wrong = {
            {"2.3.1", "2.3.1"}, {"2.2.0", "2.2.0"}, {"2.3.0", "2.3.1"}, {"2.4.0", "2.3.0"},
            {"2.3-SNAPSHOT", "2.3.0"}, {"2.3.0", EnvironmentInformation.UNKNOWN}, {null, "2.3.0"}, {"2.3.0", null},
        };
        for (String[] v : wrong) {
            TableException e =
                    assertThrows(TableException.class, () -> DefaultPlannerFactory.checkFlinkVersion(v[0], v[1]));
            String m = e.getMessage();
            assertTrue(m.startsWith("Ferry's planner shim supports Flink 2.3.0 only, but this JVM runs"
                    + " flink-table-planner_2.12 "), m);
            assertTrue(m.contains("Remove the shim ("), m);
            assertTrue(m.contains(v[0] == null ? "flink-table-planner_2.12 (unknown version)" : "flink-table-planner_2.12 " + v[0]), m);
            assertTrue(m.contains(v[1] == null || v[1].equals(EnvironmentInformation.UNKNOWN)
                    ? "Flink runtime (unknown version)" : "Flink runtime " + v[1]), m);
        }
    }

    /** docs/install.md's troubleshooting entry quotes the message the shim throws. */
    @Test
    void installGuideQuotesTheMessage() throws Exception {
        String guide = Files.readString(Paths.get("..", "docs", "install.md"), StandardCharsets.UTF_8);
        Matcher block =
                Pattern.compile("```\\s*\\n(org\\.apache\\.flink\\.table\\.api\\.TableException: Ferry's planner shim supports[^`]*)```")
                        .matcher(guide);
        assertTrue(block.find(), "docs/install.md shows the version-mismatch error");
        String documented = block.group(1).trim().replaceAll("\\s*\\n\\s*", " ");
        TableException e =
                assertThrows(TableException.class, () -> DefaultPlannerFactory.checkFlinkVersion("2.3.1", "2.3.1"));
        assertEquals(
                withoutShimLocation("org.apache.flink.table.api.TableException: " + e.getMessage()),
                withoutShimLocation(documented));
    }

    private static String withoutShimLocation(String message) {
        return message.replaceFirst("Remove the shim \\([^)]*\\)", "Remove the shim (<shim>)");
    }

    @Test
    void theClassPathUnderTestIsFlink230() {
        assertEquals("2.3.0", DefaultPlannerFactory.plannerVersion());
        assertEquals("2.3.0", EnvironmentInformation.getVersion());
    }

    @Test
    void parsesDefaults() {
        assertEquals(Map.of(), DefaultPlannerFactory.parseDefaults(null));
        assertEquals(Map.of(), DefaultPlannerFactory.parseDefaults(" "));
        assertEquals(
                Map.of("ferry.batch.max-delay", "0 ms", "ferry.batch.size", "1"),
                DefaultPlannerFactory.parseDefaults(" ferry.batch.max-delay = 0 ms ,ferry.batch.size=1,"));
        for (String bad : new String[] {"table.exec.mini-batch.enabled=true", "ferry.enabled", "=1", "ferry.=1"}) {
            assertThrows(TableException.class, () -> DefaultPlannerFactory.parseDefaults(bad), bad);
        }
    }
}
