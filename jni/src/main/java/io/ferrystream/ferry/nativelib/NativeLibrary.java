package io.ferrystream.ferry.nativelib;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * Loads libferry.so and its JNI glue libferry_jni.so once per JVM and initialises the Go runtime.
 *
 * <p>The two libraries come from the jar resources {@code native/<platform>/} (extracted once into
 * a temporary directory deleted on exit) or, for development, from the directory named by the
 * system property {@value #LIBRARY_PATH_PROPERTY}. Loading is thread-safe and idempotent; a
 * failure is remembered and rethrown, so a second copy of libferry.so is never loaded (two Go
 * runtimes in one process crash, golang/go#65050). Put this class and the jar in Flink's
 * {@code lib/} so it is loaded by the parent class loader
 * (docs/architecture.md#one-go-runtime-per-process).
 *
 * <p>Refuses to load when libjsig is mapped into the process (docs/architecture.md#signals) and
 * when the library's ABI version is not {@link #ABI_VERSION}.
 */
public final class NativeLibrary {
    /** The ABI version of include/ferry.h this wrapper speaks. */
    public static final int ABI_VERSION = 13;
    /** System property: a directory holding libferry.so and libferry_jni.so (development). */
    public static final String LIBRARY_PATH_PROPERTY = "ferry.library.path";
    /**
     * System property: "true" enables the library's test-only spec options (panic injection); only
     * a library built with the ferrytest tag accepts it.
     */
    public static final String TEST_HOOKS_PROPERTY = "ferry.test-hooks";

    static final String LIBFERRY = "libferry.so";
    static final String LIBFERRY_JNI = "libferry_jni.so";

    private static final Object LOCK = new Object();
    private static volatile NativeLibrary instance;
    private static FerryException failure; // guarded by LOCK

    private final Path directory;
    private final String version;
    private volatile Options options;

    private NativeLibrary(Path directory, String version, Options options) {
        this.directory = directory;
        this.version = version;
        this.options = options;
    }

    /** Loads and initialises the library with {@link Options#defaults()}, unless already loaded. */
    public static NativeLibrary load() {
        NativeLibrary lib = instance;
        return lib != null ? lib : load(null);
    }

    /**
     * Loads and initialises the library with the given options (null: defaults). When the library
     * is already loaded it is returned unchanged; use {@link #reconfigure} to change settings.
     */
    public static NativeLibrary load(Options options) {
        NativeLibrary lib = instance;
        if (lib != null) {
            return lib;
        }
        synchronized (LOCK) {
            if (instance != null) {
                return instance;
            }
            if (failure != null) {
                throw new FerryException(failure.code(), failure.getMessage(), failure);
            }
            try {
                instance = doLoad(options != null ? options : Options.defaults());
                return instance;
            } catch (FerryException e) {
                failure = e;
                throw e;
            } catch (RuntimeException | LinkageError e) {
                failure = new FerryException(FerryException.ELOAD, "cannot load Ferry's native library: " + e, e);
                throw failure;
            }
        }
    }

    /** Whether the library has been loaded successfully in this JVM. */
    public static boolean isLoaded() {
        return instance != null;
    }

    /** Bytes of native output memory (batches, schemas, blobs) handed out and not yet released. */
    public static long outstandingBytes() {
        load();
        return FerryNative.outstandingBytes();
    }

    /**
     * The Go runtime's memory, process-wide: {@code [0]} the bytes it holds (what its soft limit
     * bounds), {@code [1]} the heap bytes live at the last collection, {@code [2]} the soft limit
     * in force (Long.MAX_VALUE when none).
     */
    public static long[] runtimeMemory() {
        load();
        long[] out = new long[3];
        FerryNative.runtimeMemory(out);
        return out;
    }

    /** The directory the two libraries were loaded from. */
    public Path directory() {
        return directory;
    }

    /** The library's version string, e.g. {@code "ferry 0.1.0 (abi 4)"}. */
    public String version() {
        return version;
    }

    /** The options last applied with ferry_init. */
    public Options options() {
        return options;
    }

    /** Applies new runtime settings (ferry_init may be called again). */
    public void reconfigure(Options newOptions) {
        synchronized (LOCK) {
            FerryNative.init(newOptions.toJson());
            options = newOptions;
        }
    }

    /** Sets the Go runtime's soft memory limit (Long.MAX_VALUE: none), keeping the other options. */
    public void setMemoryLimit(long bytes) {
        synchronized (LOCK) {
            reconfigure(options.withMemoryLimitBytes(bytes));
        }
    }

    private static NativeLibrary doLoad(Options options) {
        String jsig = findJsig(readMaps());
        if (jsig != null) {
            throw new FerryException(FerryException.ELOAD,
                    "refusing to load Ferry's native library: libjsig is loaded in this process (" + jsig
                            + "). With libjsig's signal chaining, a Go nil dereference inside libferry.so, normally a"
                            + " recoverable panic, aborts the whole JVM (\"non-Go code set up signal handler without"
                            + " SA_ONSTACK flag\", exit 134). Remove libjsig.so from LD_PRELOAD"
                            + " (docs/architecture.md#signals).");
        }
        Path dir = libraryDirectory();
        Path libferry = dir.resolve(LIBFERRY);
        Path glue = dir.resolve(LIBFERRY_JNI);
        for (Path p : List.of(libferry, glue)) {
            if (!Files.isRegularFile(p)) {
                throw new FerryException(FerryException.ELOAD, "Ferry's native library is missing: " + p);
            }
        }
        try {
            System.load(libferry.toAbsolutePath().toString());
            System.load(glue.toAbsolutePath().toString());
        } catch (UnsatisfiedLinkError e) {
            throw new FerryException(FerryException.ELOAD,
                    "cannot load Ferry's native library from " + dir + ": " + e.getMessage(), e);
        }
        int abi = FerryNative.abiVersion();
        if (abi != ABI_VERSION) {
            throw new FerryException(FerryException.ELOAD,
                    "Ferry's native library " + libferry + " has ABI version " + abi + " but this wrapper requires ABI"
                            + " version " + ABI_VERSION + "; use the libferry.so built with this jar");
        }
        String version = FerryNative.version();
        removeEmptyCrashFileAtExit(options.crashOutput());
        FerryNative.init(options.toJson());
        return new NativeLibrary(dir, version, options);
    }

    /**
     * ferry_init creates the crash file up front; when this JVM created it and it is still empty at
     * a normal exit, remove it. After a Go fatal error the JVM dies without shutdown hooks, so a
     * file with a traceback is always kept.
     */
    private static void removeEmptyCrashFileAtExit(String crashOutput) {
        if (crashOutput == null) {
            return;
        }
        Path p = Paths.get(crashOutput);
        if (Files.exists(p)) {
            return;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                if (Files.size(p) == 0) {
                    Files.delete(p);
                }
            } catch (IOException | SecurityException e) {
                // best effort
            }
        }, "ferry-crash-file-cleanup"));
    }

    /** The directory of {@value #LIBRARY_PATH_PROPERTY}, or the extracted jar resources. */
    private static Path libraryDirectory() {
        String override = System.getProperty(LIBRARY_PATH_PROPERTY);
        if (override != null && !override.isEmpty()) {
            return Paths.get(override).toAbsolutePath();
        }
        String platform = platform();
        try {
            Path dir = Files.createTempDirectory("ferry-native-");
            dir.toFile().deleteOnExit(); // registered first, so deleted after the files
            for (String name : List.of(LIBFERRY, LIBFERRY_JNI)) {
                String resource = "/native/" + platform + "/" + name;
                try (InputStream in = NativeLibrary.class.getResourceAsStream(resource)) {
                    if (in == null) {
                        throw new FerryException(FerryException.ELOAD, "no Ferry native library for platform "
                                + platform + ": resource " + resource + " is not on the class path");
                    }
                    Path target = dir.resolve(name);
                    Files.copy(in, target, StandardCopyOption.REPLACE_EXISTING);
                    target.toFile().deleteOnExit();
                }
            }
            return dir;
        } catch (IOException e) {
            throw new FerryException(FerryException.ELOAD, "cannot extract Ferry's native library: " + e, e);
        }
    }

    static String platform() {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        if (arch.equals("amd64") || arch.equals("x86_64")) {
            arch = "x86_64";
        } else if (arch.equals("arm64")) {
            arch = "aarch64";
        }
        return (os.startsWith("linux") ? "linux" : os.replace(' ', '_')) + "-" + arch;
    }

    private static List<String> readMaps() {
        try {
            return Files.readAllLines(Paths.get("/proc/self/maps"), StandardCharsets.ISO_8859_1);
        } catch (IOException e) {
            return List.of(); // not Linux, or /proc unavailable: nothing to check
        }
    }

    /** The path of a mapped libjsig in /proc/self/maps lines, or null. */
    static String findJsig(List<String> mapsLines) {
        for (String line : mapsLines) {
            int slash = line.indexOf('/');
            if (slash < 0) {
                continue;
            }
            String path = line.substring(slash);
            String base = path.substring(path.lastIndexOf('/') + 1);
            if (base.startsWith("libjsig")) {
                return path;
            }
        }
        return null;
    }

    /** Runtime settings passed to ferry_init. Immutable; {@code with*} return copies. */
    public static final class Options {
        private final int maxProcs;
        private final OptionalLong memoryLimitBytes;
        private final Integer gcPercent;
        private final String crashOutput;
        private final boolean testHooks;

        private Options(int maxProcs, OptionalLong memoryLimitBytes, Integer gcPercent, String crashOutput,
                boolean testHooks) {
            if (maxProcs < 0) {
                throw new IllegalArgumentException("maxProcs must not be negative: " + maxProcs);
            }
            if (memoryLimitBytes.isPresent() && memoryLimitBytes.getAsLong() <= 0) {
                throw new IllegalArgumentException("memoryLimitBytes must be positive: " + memoryLimitBytes);
            }
            this.maxProcs = maxProcs;
            this.memoryLimitBytes = memoryLimitBytes;
            this.gcPercent = gcPercent;
            this.crashOutput = crashOutput;
            this.testHooks = testHooks;
        }

        /**
         * GOMAXPROCS = available processors; no memory limit; Go's crash output next to Flink's log
         * file (system property {@code log.file}) or in {@code java.io.tmpdir}, named
         * {@code ferry-crash-<pid>.log}; test hooks from {@value #TEST_HOOKS_PROPERTY}.
         */
        public static Options defaults() {
            return new Options(Runtime.getRuntime().availableProcessors(), OptionalLong.empty(), null,
                    defaultCrashOutput(), Boolean.parseBoolean(System.getProperty(TEST_HOOKS_PROPERTY, "false")));
        }

        static String defaultCrashOutput() {
            String name = "ferry-crash-" + ProcessHandle.current().pid() + ".log";
            String logFile = System.getProperty("log.file");
            if (logFile != null && !logFile.isEmpty()) {
                File parent = new File(logFile).getAbsoluteFile().getParentFile();
                if (parent != null) {
                    return new File(parent, name).getPath();
                }
            }
            return new File(System.getProperty("java.io.tmpdir"), name).getPath();
        }

        public Options withMaxProcs(int n) {
            return new Options(n, memoryLimitBytes, gcPercent, crashOutput, testHooks);
        }

        public Options withMemoryLimitBytes(long bytes) {
            return new Options(maxProcs, OptionalLong.of(bytes), gcPercent, crashOutput, testHooks);
        }

        public Options withGcPercent(int percent) {
            return new Options(maxProcs, memoryLimitBytes, percent, crashOutput, testHooks);
        }

        /** The file Go fatal errors are written to; null leaves Go's default (stderr only). */
        public Options withCrashOutput(String path) {
            return new Options(maxProcs, memoryLimitBytes, gcPercent, path, testHooks);
        }

        public Options withTestHooks(boolean enabled) {
            return new Options(maxProcs, memoryLimitBytes, gcPercent, crashOutput, enabled);
        }

        public int maxProcs() {
            return maxProcs;
        }

        public OptionalLong memoryLimitBytes() {
            return memoryLimitBytes;
        }

        public String crashOutput() {
            return crashOutput;
        }

        public boolean testHooks() {
            return testHooks;
        }

        /** The ferry_init JSON object. */
        public String toJson() {
            StringBuilder b = new StringBuilder("{\"max_procs\":").append(maxProcs);
            memoryLimitBytes.ifPresent(v -> b.append(",\"memory_limit_bytes\":").append(v));
            if (gcPercent != null) {
                b.append(",\"gc_percent\":").append(gcPercent);
            }
            if (crashOutput != null) {
                b.append(",\"crash_output\":");
                appendJsonString(b, crashOutput);
            }
            return b.append(",\"test_hooks\":").append(testHooks).append('}').toString();
        }

        @Override
        public boolean equals(Object o) {
            if (!(o instanceof Options)) {
                return false;
            }
            Options x = (Options) o;
            return maxProcs == x.maxProcs && memoryLimitBytes.equals(x.memoryLimitBytes)
                    && Objects.equals(gcPercent, x.gcPercent) && Objects.equals(crashOutput, x.crashOutput)
                    && testHooks == x.testHooks;
        }

        @Override
        public int hashCode() {
            return Objects.hash(maxProcs, memoryLimitBytes, gcPercent, crashOutput, testHooks);
        }

        @Override
        public String toString() {
            return toJson();
        }
    }

    /** Appends s to b as a JSON string literal. */
    public static void appendJsonString(StringBuilder b, String s) {
        b.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"': b.append("\\\""); break;
                case '\\': b.append("\\\\"); break;
                case '\n': b.append("\\n"); break;
                case '\r': b.append("\\r"); break;
                case '\t': b.append("\\t"); break;
                default:
                    if (c < 0x20) {
                        b.append(String.format("\\u%04x", (int) c));
                    } else {
                        b.append(c);
                    }
            }
        }
        b.append('"');
    }
}
