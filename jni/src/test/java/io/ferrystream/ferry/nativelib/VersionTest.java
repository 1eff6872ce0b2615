package io.ferrystream.ferry.nativelib;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import org.junit.jupiter.api.Test;

/**
 * The project version has one source, the root pom.xml's {@code <revision>}: Maven versions this jar
 * with it and libferry.so embeds it (version.go). This test fails when the two ever disagree, e.g.
 * when {@code -Drevision} overrides Maven's value or the jar carries a stale libferry.so.
 */
class VersionTest {

    @Test
    void libraryReportsTheJarsVersion() {
        String jarVersion = System.getProperty("ferry.project.version");
        assertNotNull(jarVersion, "ferry.project.version is set by the jni module's Surefire configuration");
        assertEquals("ferry " + jarVersion + " (abi " + NativeLibrary.ABI_VERSION + ")", NativeLibrary.load().version());
    }
}
