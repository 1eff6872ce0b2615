package io.ferrystream.ferry.shim;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import org.apache.flink.table.planner.delegation.DefaultPlannerFactory;
import org.apache.flink.table.planner.delegation.StreamPlanner;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;

/**
 * The shim on a class path whose planner jar is not Flink 2.3.0: creating a table environment the
 * way user code does fails closed, with the message docs/install.md documents.
 *
 * <p>The mismatched planner is a jar that carries Flink's {@code StreamPlanner} class under a
 * manifest saying 2.3.1, placed after the shim and before the real planner jar, in a class loader
 * of its own (the shim's version verdict is made once per loaded class).
 */
class VersionMismatchTest {
    private static final String PLANNER_CLASS = StreamPlanner.class.getName().replace('.', '/') + ".class";

    /** A jar holding only StreamPlanner.class, under a manifest that says {@code version}. */
    private static Path plannerJarOfVersion(Path dir, String version) throws IOException {
        Manifest manifest = new Manifest();
        manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        manifest.getMainAttributes().put(Attributes.Name.IMPLEMENTATION_TITLE, "Flink : Table : Planner");
        manifest.getMainAttributes().put(Attributes.Name.IMPLEMENTATION_VERSION, version);
        Path jar = dir.resolve("flink-table-planner_2.12-" + version + ".jar");
        try (OutputStream file = Files.newOutputStream(jar);
                JarOutputStream out = new JarOutputStream(file, manifest);
                InputStream in = StreamPlanner.class.getClassLoader().getResourceAsStream(PLANNER_CLASS)) {
            assertNotNull(in, PLANNER_CLASS);
            out.putNextEntry(new JarEntry(PLANNER_CLASS));
            in.transferTo(out);
            out.closeEntry();
        }
        return jar;
    }

    /** This JVM's class path with {@code extra} right after the shim's classes. */
    private static URL[] classPathWith(Path extra) throws IOException {
        Path shim = Paths.get(DefaultPlannerFactory.class.getProtectionDomain().getCodeSource().getLocation().getPath());
        List<URL> urls = new ArrayList<>();
        boolean inserted = false;
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path p = Paths.get(entry);
            urls.add(p.toUri().toURL());
            if (Files.isSameFile(p, shim)) {
                urls.add(extra.toUri().toURL());
                inserted = true;
            }
        }
        assertTrue(inserted, "the shim's classes are on the test class path");
        return urls.toArray(new URL[0]);
    }

    /** What {@code TableEnvironment.create(inStreamingMode())} throws in {@code loader}. */
    private static Throwable createTableEnvironment(ClassLoader loader) throws Exception {
        Thread thread = Thread.currentThread();
        ClassLoader previous = thread.getContextClassLoader();
        thread.setContextClassLoader(loader); // Flink discovers the planner factory here
        try {
            Class<?> settingsClass = loader.loadClass("org.apache.flink.table.api.EnvironmentSettings");
            Object settings = settingsClass.getMethod("inStreamingMode").invoke(null);
            Method create = loader.loadClass("org.apache.flink.table.api.TableEnvironment").getMethod("create", settingsClass);
            create.invoke(null, settings);
            return fail("a table environment was created next to a Flink 2.3.1 planner");
        } catch (InvocationTargetException e) {
            return e.getCause();
        } finally {
            thread.setContextClassLoader(previous);
        }
    }

    @Test
    void anotherPlannerVersionFailsTableEnvironmentCreationWithTheDocumentedError(@TempDir Path dir) throws Exception {
        Path planner = plannerJarOfVersion(dir, "2.3.1");
        Throwable error;
        try (URLClassLoader loader = new URLClassLoader(classPathWith(planner), ClassLoader.getPlatformClassLoader())) {
            error = createTableEnvironment(loader);
        }
        Throwable shimError = error;
        while (shimError != null && !String.valueOf(shimError.getMessage()).startsWith("Ferry's planner shim")) {
            shimError = shimError.getCause();
        }
        assertNotNull(shimError, () -> "not the shim's error: " + error);
        assertEquals("org.apache.flink.table.api.TableException", shimError.getClass().getName());
        assertEquals(
                "Ferry's planner shim supports Flink 2.3.0 only, but this JVM runs flink-table-planner_2.12 2.3.1"
                        + " and Flink runtime 2.3.0. Remove the shim (<shim>) to run this Flink without Ferry, or"
                        + " install the Ferry release built for this Flink version (docs/install.md).",
                withoutShimLocation(shimError.getMessage()));
    }

    private static String withoutShimLocation(String message) {
        return message.replaceFirst("Remove the shim \\([^)]*\\)", "Remove the shim (<shim>)");
    }
}
