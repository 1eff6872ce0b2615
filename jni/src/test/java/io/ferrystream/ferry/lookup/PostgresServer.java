package io.ferrystream.ferry.lookup;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * A real PostgreSQL for a test, started and removed by scripts/postgres.sh (as the Go tests'
 * internal/pgtest does): Debian's server in a temporary directory on a free loopback port, user
 * ferry with a random password, pg_stat_statements loaded. Nothing is skipped: when the server
 * cannot start the test fails with the script's output.
 */
public final class PostgresServer implements AutoCloseable {
    /** The repository root: the working directory (benchmarks) or its parent (jni's tests). */
    public static final Path ROOT = Files.exists(Path.of("scripts/postgres.sh"))
            ? Path.of("").toAbsolutePath()
            : Path.of("").toAbsolutePath().getParent();

    /** The script's lines: PGHOST, PGPORT, PGUSER, PGPASSWORD, PGDATABASE, FERRY_PG_DIR. */
    public final Map<String, String> env;

    private PostgresServer(Map<String, String> env) {
        this.env = env;
    }

    /** Starts a fresh server. */
    public static PostgresServer start() throws Exception {
        String out = run(List.of(ROOT.resolve("scripts/postgres.sh").toString(), "start"), 120);
        Map<String, String> env = new LinkedHashMap<>();
        for (String line : out.split("\n")) {
            int eq = line.indexOf('=');
            if (eq > 0) {
                env.put(line.substring(0, eq), line.substring(eq + 1).trim());
            }
        }
        assertTrue(env.containsKey("PGPORT") && env.containsKey("FERRY_PG_DIR"), "scripts/postgres.sh start printed: " + out);
        return new PostgresServer(env);
    }

    /** The JDBC URL of the server's database. */
    public String url() {
        return "jdbc:postgresql://" + env.get("PGHOST") + ":" + env.get("PGPORT") + "/" + env.get("PGDATABASE");
    }

    public String user() {
        return env.get("PGUSER");
    }

    public String password() {
        return env.get("PGPASSWORD");
    }

    /** A new JDBC connection as the test user. */
    public Connection connect() throws SQLException {
        return DriverManager.getConnection(url(), user(), password());
    }

    /** Stops the server and removes its directory. */
    @Override
    public void close() throws Exception {
        run(List.of(ROOT.resolve("scripts/postgres.sh").toString(), "stop", env.get("FERRY_PG_DIR")), 120);
    }

    /** Runs cmd in the repository root; fails with its output unless it exits 0 in time. */
    public static String run(List<String> cmd, int seconds) throws IOException, InterruptedException {
        Process p;
        try {
            ProcessBuilder pb = new ProcessBuilder(cmd).directory(ROOT.toFile()).redirectErrorStream(true);
            pb.environment().put("FERRY_PG_OWNER", Long.toString(ProcessHandle.current().pid()));
            p = pb.start();
        } catch (IOException e) {
            fail("cannot run " + cmd + " (Go and Debian's postgresql are needed: scripts/setup.sh test): " + e);
            return null;
        }
        byte[] bytes = p.getInputStream().readAllBytes();
        if (!p.waitFor(seconds, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail(cmd + " did not finish in " + seconds + " s");
        }
        String out = new String(bytes, StandardCharsets.UTF_8);
        assertEquals(0, p.exitValue(), cmd + " failed:\n" + out);
        return out;
    }
}
