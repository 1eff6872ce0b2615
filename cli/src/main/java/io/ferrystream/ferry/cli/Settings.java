package io.ferrystream.ferry.cli;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.CoreOptions;
import org.apache.flink.configuration.GlobalConfiguration;

import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.TreeMap;

/**
 * The configuration a run starts from, the same for the stock and the Ferry side: a Flink {@code
 * config.yaml} ({@code --conf DIR}, read by Flink's own {@link GlobalConfiguration}), then every
 * {@code -D key=value} in order, then {@code --parallelism N}; parallelism 1 when none of them sets
 * it. It configures the embedded MiniCluster and every job; a script's {@code SET} statements go on
 * top of it, per side, as in the SQL Client.
 */
final class Settings {
    private final Configuration configuration;
    /** Where each key's value came from, for the run's header. */
    private final Map<String, String> origins = new TreeMap<>();

    private Settings(Configuration configuration) {
        this.configuration = configuration;
    }

    /**
     * @param confDir a Flink configuration directory holding {@code config.yaml}, or null
     * @param dynamic the {@code -D} options in command-line order
     * @param parallelism {@code --parallelism}, or null
     */
    static Settings of(Path confDir, Map<String, String> dynamic, Integer parallelism) throws FerryCli.UsageException {
        Configuration conf;
        Settings s;
        if (confDir != null) {
            if (!Files.isRegularFile(confDir.resolve(GlobalConfiguration.FLINK_CONF_FILENAME))) {
                throw new FerryCli.UsageException(
                        "--conf " + confDir + ": no " + GlobalConfiguration.FLINK_CONF_FILENAME + " in that directory");
            }
            try {
                conf = GlobalConfiguration.loadConfiguration(confDir.toString());
            } catch (RuntimeException e) {
                throw new FerryCli.UsageException("--conf " + confDir + ": " + e.getMessage());
            }
            s = new Settings(conf);
            String origin = "--conf " + confDir.resolve(GlobalConfiguration.FLINK_CONF_FILENAME);
            for (String key : conf.keySet()) {
                s.origins.put(key, origin);
            }
        } else {
            s = new Settings(new Configuration());
        }
        for (Map.Entry<String, String> e : dynamic.entrySet()) {
            s.configuration.setString(e.getKey(), e.getValue());
            s.origins.put(e.getKey(), "-D");
        }
        if (parallelism != null) {
            s.configuration.set(CoreOptions.DEFAULT_PARALLELISM, parallelism);
            s.origins.put(CoreOptions.DEFAULT_PARALLELISM.key(), "--parallelism");
        } else if (!s.configuration.contains(CoreOptions.DEFAULT_PARALLELISM)) {
            s.configuration.set(CoreOptions.DEFAULT_PARALLELISM, 1);
            s.origins.put(CoreOptions.DEFAULT_PARALLELISM.key(), "ferry's default");
        }
        return s;
    }

    /** A copy of the configuration. */
    Configuration configuration() {
        return new Configuration(configuration);
    }

    int parallelism() {
        return configuration.get(CoreOptions.DEFAULT_PARALLELISM);
    }

    /** Every key with its value and origin, sorted by key. */
    Map<String, String[]> entries() {
        Map<String, String> values = configuration.toMap();
        Map<String, String[]> out = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : origins.entrySet()) {
            out.put(e.getKey(), new String[] {values.getOrDefault(e.getKey(), ""), e.getValue()});
        }
        return out;
    }

    /** A value as the header shows it: Flink's sensitive keys (passwords, secrets, ...) masked. */
    static String shown(String key, String value) {
        return GlobalConfiguration.isSensitive(key) ? GlobalConfiguration.HIDDEN_CONTENT : value;
    }

    /** What a {@code RESET key} goes back to, for its line in the output. */
    String resetNote(String key) {
        String[] e = entries().get(key);
        return e == null ? "   (back to Flink's default)" : "   (back to " + shown(key, e[0]) + ", from " + e[1] + ")";
    }

    /** Prints the configuration every side starts from, one key per line, with where it came from. */
    void print(PrintStream out, boolean bothSides) {
        out.println("configuration (" + (bothSides ? "both sides; " : "") + "a script's SET statements apply on top, in order):");
        for (Map.Entry<String, String[]> e : entries().entrySet()) {
            out.printf("  %s = %s   (%s)%n", e.getKey(), shown(e.getKey(), e.getValue()[0]), e.getValue()[1]);
        }
    }
}
