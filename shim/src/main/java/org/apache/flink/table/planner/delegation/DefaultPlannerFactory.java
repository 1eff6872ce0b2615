package org.apache.flink.table.planner.delegation;

import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.runtime.util.EnvironmentInformation;
import org.apache.flink.table.api.TableConfig;
import org.apache.flink.table.api.TableException;
import org.apache.flink.table.delegation.Planner;
import org.apache.flink.table.delegation.PlannerFactory;
import org.apache.flink.table.planner.plan.optimize.program.FlinkStreamProgram;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.InvocationTargetException;
import java.net.JarURLConnection;
import java.net.URL;
import java.net.URLConnection;
import java.security.CodeSource;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import java.util.jar.Attributes;
import java.util.jar.JarFile;
import java.util.jar.Manifest;

/**
 * Ferry's planner shim: it takes the place of Flink 2.3.0's factory of the same name when its jar
 * comes before {@code flink-table-planner_2.12-2.3.0.jar} on the class path (in a distribution:
 * {@code lib/00-ferry-flink-shim.jar}; Flink sorts {@code lib/}). Flink discovers the planner
 * factory by the class name listed in the planner jar's service file, so this class is found in
 * its place and every table environment (Table API, SQL Client, SQL Gateway) gets its planner
 * here.
 *
 * <p>For a streaming planner it installs Ferry ({@code io.ferrystream.ferry.planner.Ferry#install}
 * on the planner's table configuration) and then builds Flink's own {@link StreamPlanner}; a batch
 * planner is Flink's {@link BatchPlanner}, untouched. Ferry's options ({@code ferry.*}) are read
 * from the table configuration when a query is planned, so {@code SET} and {@code config.yaml}
 * both work.
 *
 * <p>The shim builds Flink's planners with the constructors of Flink {@value #FLINK_VERSION}, so
 * it refuses any other version (of the planner jar or of Flink's runtime) instead of guessing:
 * creating a table environment then fails with a message that says what to do.
 *
 * <p>Tests and other class paths without a {@code config.yaml} may give Ferry options JVM-wide
 * defaults with the system property {@value #DEFAULTS_PROPERTY} ({@code key=value} pairs
 * separated by commas); an option the configuration sets itself keeps its value.
 */
public final class DefaultPlannerFactory implements PlannerFactory {
    /** The one Flink version this shim builds planners for. */
    public static final String FLINK_VERSION = "2.3.0";

    /** System property: Ferry option defaults, {@code key=value[,key=value...]}. */
    public static final String DEFAULTS_PROPERTY = "ferry.defaults";

    static final String FERRY_CLASS = "io.ferrystream.ferry.planner.Ferry";

    private static final Logger LOG = LoggerFactory.getLogger(DefaultPlannerFactory.class);

    private static final AtomicLong FERRY_PLANNERS = new AtomicLong();

    /** The version check's verdict, made once per loading of this class: "" when they match. */
    private static volatile String versionError;

    @Override
    public String factoryIdentifier() {
        return PlannerFactory.DEFAULT_IDENTIFIER;
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        return Collections.emptySet();
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        return Collections.emptySet();
    }

    @Override
    public Planner create(Context context) {
        requireSupportedFlink();
        TableConfig config = context.getTableConfig();
        RuntimeExecutionMode mode = config.get(ExecutionOptions.RUNTIME_MODE);
        if (mode == RuntimeExecutionMode.BATCH) {
            return new BatchPlanner(
                    context.getExecutor(),
                    config,
                    context.getModuleManager(),
                    context.getFunctionCatalog(),
                    context.getCatalogManager(),
                    context.getClassLoader());
        }
        if (mode != RuntimeExecutionMode.STREAMING) {
            // Flink's own message (DefaultPlannerFactory of 2.3.0)
            throw new TableException(
                    String.format(
                            "Unsupported mode '%s' for '%s'. Only an explicit BATCH or "
                                    + "STREAMING mode is supported in Table API.",
                            mode, ExecutionOptions.RUNTIME_MODE.key()));
        }
        applyDefaults(config, parseDefaults(System.getProperty(DEFAULTS_PROPERTY)));
        Class<?> ferry = installFerry(config);
        Planner planner =
                new FerryStreamPlanner(
                        context.getExecutor(),
                        config,
                        context.getModuleManager(),
                        context.getFunctionCatalog(),
                        context.getCatalogManager(),
                        context.getClassLoader(),
                        ferry);
        if (FERRY_PLANNERS.getAndIncrement() == 0) {
            LOG.info("Ferry is installed into Flink {}'s streaming planners by the planner shim {}", FLINK_VERSION, shimLocation());
        }
        return planner;
    }

    /** Streaming planners this class created, each with Ferry installed, in this JVM. */
    public static long ferryPlannersCreated() {
        return FERRY_PLANNERS.get();
    }

    // ---------------------------------------------------------------------------------------------
    // Flink version

    private static void requireSupportedFlink() {
        String error = versionError;
        if (error == null) {
            try {
                checkFlinkVersion(plannerVersion(), EnvironmentInformation.getVersion());
                error = "";
            } catch (TableException e) {
                error = e.getMessage();
            }
            versionError = error;
        }
        if (!error.isEmpty()) {
            throw new TableException(error);
        }
    }

    /**
     * Throws unless both the planner jar and Flink's runtime are {@value #FLINK_VERSION}.
     *
     * @param plannerVersion the version of flink-table-planner_2.12, null when unknown
     * @param runtimeVersion the version of Flink's runtime ({@code EnvironmentInformation}), null
     *     when unknown
     */
    static void checkFlinkVersion(String plannerVersion, String runtimeVersion) {
        if (FLINK_VERSION.equals(plannerVersion) && FLINK_VERSION.equals(runtimeVersion)) {
            return;
        }
        throw new TableException(
                "Ferry's planner shim supports Flink "
                        + FLINK_VERSION
                        + " only, but this JVM runs flink-table-planner_2.12 "
                        + known(plannerVersion)
                        + " and Flink runtime "
                        + known(runtimeVersion)
                        + ". Remove the shim ("
                        + shimLocation()
                        + ") to run this Flink without Ferry, or install the Ferry release built for"
                        + " this Flink version (docs/install.md).");
    }

    private static String known(String version) {
        return version == null || version.isEmpty() || version.equals(EnvironmentInformation.UNKNOWN)
                ? "(unknown version)"
                : version;
    }

    /**
     * Implementation-Version of the jar that holds {@link StreamPlanner} (its package is shared
     * with this shim, so {@link Package} cannot tell), else of the package of a planner-only class.
     */
    static String plannerVersion() {
        URL url =
                DefaultPlannerFactory.class
                        .getClassLoader()
                        .getResource(StreamPlanner.class.getName().replace('.', '/') + ".class");
        if (url != null && "jar".equals(url.getProtocol())) {
            try {
                URLConnection connection = url.openConnection();
                if (connection instanceof JarURLConnection) {
                    connection.setUseCaches(false);
                    try (JarFile jar = ((JarURLConnection) connection).getJarFile()) {
                        Manifest manifest = jar.getManifest();
                        String v =
                                manifest == null
                                        ? null
                                        : manifest.getMainAttributes().getValue(Attributes.Name.IMPLEMENTATION_VERSION);
                        if (v != null) {
                            return v;
                        }
                    }
                }
            } catch (IOException e) {
                LOG.debug("Ferry's planner shim cannot read the manifest of {}", url, e);
            }
        }
        Package p = FlinkStreamProgram.class.getPackage();
        return p == null ? null : p.getImplementationVersion();
    }

    private static String shimLocation() {
        CodeSource source = DefaultPlannerFactory.class.getProtectionDomain().getCodeSource();
        return source == null || source.getLocation() == null
                ? "ferry-flink-shim.jar"
                : source.getLocation().toString();
    }

    // ---------------------------------------------------------------------------------------------
    // Ferry

    /**
     * The file name of the wrapper jar of this shim's release, e.g. {@code ferry-flink-0.1.0.jar}:
     * the version comes from {@code META-INF/ferry-flink-shim.properties}, which the build fills in
     * from the project version.
     */
    static String wrapperJarName() {
        Properties props = new Properties();
        try (InputStream in =
                DefaultPlannerFactory.class.getResourceAsStream("/META-INF/ferry-flink-shim.properties")) {
            if (in != null) {
                props.load(in);
            }
        } catch (IOException e) {
            LOG.debug("Ferry's planner shim cannot read its version", e);
        }
        String version = props.getProperty("ferry.version");
        return version == null || version.isEmpty() ? "the ferry-flink jar" : "ferry-flink-" + version + ".jar";
    }

    /** Installs Ferry's optimizer program into {@code config}; returns Ferry's entry class. */
    private static Class<?> installFerry(TableConfig config) {
        Class<?> ferry;
        try {
            ferry = Class.forName(FERRY_CLASS, true, DefaultPlannerFactory.class.getClassLoader());
        } catch (ClassNotFoundException | LinkageError e) {
            throw new TableException(
                    "Ferry's planner shim cannot load "
                            + FERRY_CLASS
                            + " ("
                            + e
                            + "): put "
                            + wrapperJarName()
                            + " into Flink's lib/ next to the shim, or remove"
                            + " the shim (docs/install.md).",
                    e);
        }
        try {
            ferry.getMethod("install", TableConfig.class).invoke(null, config);
            return ferry;
        } catch (InvocationTargetException e) {
            Throwable cause = e.getCause();
            throw new TableException("Ferry's planner shim could not install Ferry: " + cause, cause);
        } catch (ReflectiveOperationException e) {
            throw new TableException("Ferry's planner shim does not match this ferry-flink jar: " + e, e);
        }
    }

    /** Parses {@value #DEFAULTS_PROPERTY}: {@code key=value} pairs, comma separated, keys ferry.*. */
    static Map<String, String> parseDefaults(String property) {
        Map<String, String> defaults = new LinkedHashMap<>();
        if (property == null || property.isBlank()) {
            return defaults;
        }
        for (String pair : property.split(",")) {
            if (pair.isBlank()) {
                continue;
            }
            int eq = pair.indexOf('=');
            String key = eq < 0 ? "" : pair.substring(0, eq).trim();
            if (!key.startsWith("ferry.") || key.length() == "ferry.".length()) {
                throw new TableException(
                        "System property "
                                + DEFAULTS_PROPERTY
                                + " must list ferry.* options as key=value pairs separated by commas;"
                                + " cannot read '"
                                + pair.trim()
                                + "'");
            }
            defaults.put(key, pair.substring(eq + 1).trim());
        }
        return defaults;
    }

    /** Sets each default the configuration (table or root, e.g. config.yaml) does not set. */
    static void applyDefaults(TableConfig config, Map<String, String> defaults) {
        for (Map.Entry<String, String> d : defaults.entrySet()) {
            ConfigOption<String> option = ConfigOptions.key(d.getKey()).stringType().noDefaultValue();
            if (!config.getOptional(option).isPresent()) {
                config.set(d.getKey(), d.getValue());
            }
        }
    }
}
