package io.ferrystream.ferry.nativelib;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/** Scenarios that inject panics or refuse the library run in a child JVM (see {@link ChildJvmMain}). */
class ChildJvmTest {

    static String run(Map<String, String> env, String... args) throws Exception {
        String javaHome = System.getProperty("java.home");
        List<String> cmd = new ArrayList<>();
        cmd.add(Paths.get(javaHome, "bin", "java").toString());
        cmd.add("--add-opens=java.base/java.nio=ALL-UNNAMED");
        cmd.add("-Xmx256m");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        for (String a : args) {
            cmd.add(a);
        }
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().putAll(env);
        Path log = Files.createTempFile("ferry-child-", ".log");
        pb.redirectOutput(log.toFile());
        Process p = pb.start();
        boolean done = p.waitFor(60, TimeUnit.SECONDS);
        if (!done) {
            p.destroyForcibly();
        }
        String output = Files.readString(log, StandardCharsets.UTF_8);
        Files.deleteIfExists(log);
        assertTrue(done, "child JVM hung:\n" + output);
        assertEquals(0, p.exitValue(), "child JVM failed (exit " + p.exitValue() + "):\n" + output);
        assertTrue(output.lines().anyMatch("OK"::equals), output);
        return output;
    }

    /**
     * The libferry.so built with the ferrytest tag (panic injection) and its JNI glue, which
     * ./build.sh puts in build/test/native/<platform>/; the system property
     * ferry.test.library.path names another directory. The production library refuses test hooks.
     */
    static Path testLibraryDirectory() {
        String dir = System.getProperty("ferry.test.library.path");
        Path p = dir != null ? Paths.get(dir)
                : Paths.get("..", "build", "test", "native", NativeLibrary.platform());
        p = p.toAbsolutePath().normalize();
        assertTrue(Files.isRegularFile(p.resolve(NativeLibrary.LIBFERRY)) && Files.isRegularFile(p.resolve(NativeLibrary.LIBFERRY_JNI)),
                "no test build of the library in " + p + ": run ./build.sh first");
        return p;
    }

    @Test
    void panicPoisonsItsOperatorOnlyAndTheJvmSurvives() throws Exception {
        String out = run(Map.of(), "-Dferry.test-hooks=true",
                "-D" + NativeLibrary.LIBRARY_PATH_PROPERTY + "=" + testLibraryDirectory(), ChildJvmMain.class.getName(),
                "panic");
        assertTrue(out.contains("[EINTERNAL]") && out.contains("[EPOISONED]")
                && out.contains("healthy: the other operator and a new one work"), out);
    }

    @Test
    void libraryPathPropertyOverridesTheJarResources() throws Exception {
        Path dir = NativeLibrary.load().directory(); // the extracted copy of this JVM
        run(Map.of(), "-D" + NativeLibrary.LIBRARY_PATH_PROPERTY + "=" + dir, ChildJvmMain.class.getName(),
                "librarypath");
    }

    @Test
    void libjsigIsRefused() throws Exception {
        Path jsig = Paths.get(System.getProperty("java.home"), "lib", "libjsig.so");
        assumeTrue(Files.exists(jsig), "no libjsig.so in this JDK");
        String out = run(Map.of("LD_PRELOAD", jsig.toString()), ChildJvmMain.class.getName(), "jsig");
        assertTrue(out.contains("refused: ") && out.contains(File.separator + "libjsig.so"), out);
    }
}
