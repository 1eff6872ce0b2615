package io.ferrystream.ferry.nativelib;

import io.ferrystream.ferry.arrow.ArrowTypes;
import io.ferrystream.ferry.arrow.RowDataArrowWriter;
import org.apache.arrow.memory.BufferAllocator;
import org.apache.arrow.memory.RootAllocator;
import org.apache.arrow.vector.VectorSchemaRoot;

/**
 * Runs in a child JVM spawned by {@link ChildJvmTest}. Prints "OK" and exits 0 when the scenario
 * behaved; prints the failure and exits 1 otherwise.
 *
 * <ul>
 *   <li>{@code panic}: a test hook panics inside ferry_operator_process (a library built with the
 *       ferrytest tag, loaded through {@code -Dferry.library.path}); Java gets EINTERNAL with the
 *       panic message, the input is still released, every later call on that operator is
 *       EPOISONED until it is closed, another operator and a new one keep working, and the JVM
 *       keeps running.
 *   <li>{@code jsig}: started with libjsig.so preloaded; loading must be refused with ELOAD.
 *   <li>{@code librarypath}: {@code -Dferry.library.path} makes the loader use that directory.
 * </ul>
 */
public final class ChildJvmMain {
    private ChildJvmMain() {}

    public static void main(String[] args) throws Exception {
        try {
            switch (args[0]) {
                case "panic":
                    panicDrill();
                    break;
                case "jsig":
                    jsig();
                    break;
                case "librarypath":
                    libraryPath();
                    break;
                default:
                    throw new IllegalArgumentException(args[0]);
            }
            System.out.println("OK");
            System.exit(0);
        } catch (Throwable t) {
            System.out.println("FAILED: " + t);
            t.printStackTrace(System.out);
            System.exit(1);
        }
    }

    private static void check(boolean ok, String what) {
        if (!ok) {
            throw new AssertionError(what);
        }
    }

    private static void panicDrill() {
        check(NativeLibrary.load().options().testHooks(), "test hooks enabled by -Dferry.test-hooks=true");
        try (BufferAllocator allocator = new RootAllocator();
                NativeOperator healthy = Bids.open(allocator);
                RowDataArrowWriter w = RowDataArrowWriter.create(Bids.INPUT, allocator, 64);
                VectorSchemaRoot out = VectorSchemaRoot.create(healthy.outputSchema(), allocator)) {
            Bids.write(w, 1, 10, 5);
            check(healthy.process(0, w.root(), 0, out, c -> { }) == 1, "healthy operator works before the panic");
            out.clear();
            NativeOperator doomed = NativeOperator.open(Bids.spec("\"test\":{\"panic\":\"process\"}"),
                    ArrowTypes.schemaOf(Bids.INPUT), allocator);
            long exportBaseline = doomed.exportAllocator().getAllocatedMemory();
            try {
                doomed.process(0, w.root(), 0, out, c -> { });
                throw new AssertionError("the panic hook did not fire");
            } catch (FerryException e) {
                System.out.println("panic: " + e);
                check(e.code() == FerryException.EINTERNAL, "EINTERNAL, got " + e);
                check(e.getMessage().contains("panic"), "message mentions the panic: " + e.getMessage());
                check(e.isFatal(), "fatal");
            }
            check(doomed.exportAllocator().getAllocatedMemory() == exportBaseline, "input released after the panic");
            try {
                doomed.process(0, w.root(), 0, out, c -> { });
                throw new AssertionError("a poisoned operator accepted a call");
            } catch (FerryException e) {
                System.out.println("after: " + e);
                check(e.code() == FerryException.EPOISONED, "EPOISONED, got " + e);
            }
            doomed.close(); // frees it
            check(healthy.process(0, w.root(), 0, out, c -> { }) == 1, "the other operator still works");
            out.clear();
            try (NativeOperator fresh = NativeOperator.open(Bids.spec(), null, allocator)) {
                check(fresh.process(0, w.root(), 0, out, c -> { }) == 1, "a new operator works");
                out.clear();
            }
            check(FerryNative.abiVersion() == NativeLibrary.ABI_VERSION && FerryNative.version().startsWith("ferry"), "version still works");
            System.out.println("healthy: the other operator and a new one work");
            System.gc(); // the JVM is still fully alive
        }
    }

    private static void libraryPath() throws Exception {
        java.nio.file.Path want = java.nio.file.Paths.get(System.getProperty(NativeLibrary.LIBRARY_PATH_PROPERTY));
        NativeLibrary lib = NativeLibrary.load();
        check(lib.directory().equals(want.toAbsolutePath()), "loaded from " + lib.directory());
        String maps = new String(java.nio.file.Files.readAllBytes(java.nio.file.Paths.get("/proc/self/maps")));
        check(maps.contains(want.resolve("libferry.so").toString()), "libferry.so mapped from " + want);
        check(maps.contains(want.resolve("libferry_jni.so").toString()), "libferry_jni.so mapped from " + want);
        check(lib.options().crashOutput() != null && !lib.options().testHooks(), "defaults: " + lib.options());
    }

    private static void jsig() {
        try {
            NativeLibrary.load();
            throw new AssertionError("loaded with libjsig preloaded");
        } catch (FerryException e) {
            System.out.println("refused: " + e.getMessage());
            check(e.code() == FerryException.ELOAD, "ELOAD, got " + e);
            check(e.getMessage().contains("libjsig") && e.getMessage().contains("LD_PRELOAD"), e.getMessage());
        }
        check(!NativeLibrary.isLoaded(), "not loaded");
        try {
            NativeLibrary.load(); // the failure is remembered, never retried
            throw new AssertionError("second load succeeded");
        } catch (FerryException e) {
            check(e.code() == FerryException.ELOAD, "ELOAD again, got " + e);
        }
    }
}
