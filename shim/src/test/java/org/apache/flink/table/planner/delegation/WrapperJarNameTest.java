package org.apache.flink.table.planner.delegation;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The missing-wrapper message names the wrapper jar of the shim's own release. */
class WrapperJarNameTest {

    @Test
    void namesTheWrapperJarOfThisRelease() {
        String version = System.getProperty("ferry.project.version");
        assertEquals("ferry-flink-" + version + ".jar", DefaultPlannerFactory.wrapperJarName());
    }
}
