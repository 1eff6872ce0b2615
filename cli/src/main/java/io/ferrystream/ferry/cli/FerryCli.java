package io.ferrystream.ferry.cli;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The {@code ferry} command (docs/cli.md): runs Flink SQL scripts on an embedded MiniCluster with
 * Ferry off, on, or both, plans a team's scripts and reads its compiled plans to report what would
 * run natively, and measures Ferry against stock Flink.
 *
 * <pre>
 *   ferry sql FILE.sql [--mode native|stock|compare] [--require-native] [--max-rows N] [CONFIG]
 *   ferry explain FILE.sql [CONFIG]
 *   ferry qualify DIR|FILE.sql|PLAN.json... [--html OUT.html] [CONFIG]
 *   ferry bench FILE.sql [--runs N] [CONFIG]
 *   CONFIG: [--parallelism N] [-D key=value]... [--conf DIR]
 * </pre>
 *
 * <p>Exit codes: {@value #OK} success (compare: every query identical at the level its plan
 * guarantees), {@value #DIFFERENT} a difference (compare, bench checksums), {@value #ERROR} an
 * error (usage, a statement that fails, a failed job), {@value #NOT_NATIVE} {@code
 * --require-native} and a candidate node did not run natively, or no native operator ran at all.
 */
public final class FerryCli {
    static final int OK = 0;
    static final int DIFFERENT = 1;
    static final int ERROR = 2;
    static final int NOT_NATIVE = 3;

    static final String USAGE =
            "usage: ferry sql FILE.sql [--mode native|stock|compare] [--require-native] [--max-rows N] [CONFIG]\n"
                    + "       ferry explain FILE.sql [CONFIG]\n"
                    + "       ferry qualify DIR|FILE.sql|PLAN.json... [--html OUT.html] [CONFIG]\n"
                    + "       ferry bench FILE.sql [--runs N] [CONFIG]\n"
                    + "CONFIG: [--parallelism N] [-D key=value]... [--conf DIR (a Flink config.yaml)]\n"
                    + "exit codes: 0 identical / success, 1 different, 2 error, 3 --require-native and not all native\n"
                    + "docs: docs/cli.md";

    private final PrintStream out;

    FerryCli(PrintStream out) {
        this.out = out;
    }

    public static void main(String[] args) {
        int code = execute(args, System.out, System.err);
        System.out.flush();
        System.exit(code);
    }

    /** Runs a command line; returns its exit code, errors reported on {@code err}. */
    static int execute(String[] args, PrintStream out, PrintStream err) {
        try {
            return new FerryCli(out).run(args);
        } catch (UsageException e) {
            err.println("ferry: " + e.getMessage());
            err.println(USAGE);
        } catch (ScriptException e) {
            out.flush();
            err.println("ferry: " + e.getMessage());
        } catch (Exception e) {
            out.flush();
            err.println("ferry: " + e);
            e.printStackTrace(err);
        }
        return ERROR;
    }

    /** A command line that cannot be run: exit code 2 with the usage. */
    static final class UsageException extends Exception {
        UsageException(String message) {
            super(message);
        }
    }

    /** A statement of a script failed: exit code 2 with the script, line and Flink's message. */
    static final class ScriptException extends Exception {
        ScriptException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** The parsed command line. */
    static final class Args {
        String command;
        final List<String> files = new ArrayList<>();
        String mode = "native";
        int maxRows = 20;
        boolean requireNative;
        Integer parallelism;
        Path conf;
        final Map<String, String> dynamic = new LinkedHashMap<>();
        Path html;
        int runs = 3;
        final List<String> given = new ArrayList<>();
    }

    static Args parse(String[] argv) throws UsageException {
        if (argv.length < 1) {
            throw new UsageException("missing command");
        }
        Args a = new Args();
        a.command = argv[0];
        if (!Set.of("sql", "explain", "qualify", "bench").contains(a.command)) {
            throw new UsageException("unknown command " + a.command);
        }
        for (int i = 1; i < argv.length; i++) {
            String opt = argv[i];
            if (opt.startsWith("-D")) {
                String kv = opt.length() > 2 ? opt.substring(2) : value(argv, ++i, "-D");
                int eq = kv.indexOf('=');
                if (eq <= 0) {
                    throw new UsageException("-D needs key=value, got " + kv);
                }
                a.dynamic.put(kv.substring(0, eq).strip(), kv.substring(eq + 1).strip());
                a.given.add("-D");
                continue;
            }
            if (!opt.startsWith("--")) {
                a.files.add(opt);
                continue;
            }
            a.given.add(opt);
            switch (opt) {
                case "--mode" -> {
                    a.mode = value(argv, ++i, opt);
                    if (!List.of("native", "stock", "compare").contains(a.mode)) {
                        throw new UsageException("--mode must be native, stock or compare, got " + a.mode);
                    }
                }
                case "--max-rows" -> a.maxRows = number(opt, value(argv, ++i, opt), 0);
                case "--parallelism" -> a.parallelism = number(opt, value(argv, ++i, opt), 1);
                case "--runs" -> a.runs = number(opt, value(argv, ++i, opt), 1);
                case "--conf" -> a.conf = Path.of(value(argv, ++i, opt));
                case "--html" -> a.html = Path.of(value(argv, ++i, opt));
                case "--require-native" -> a.requireNative = true;
                default -> throw new UsageException("unknown option " + opt);
            }
        }
        Set<String> allowed = switch (a.command) {
            case "sql" -> Set.of("--mode", "--max-rows", "--require-native");
            case "qualify" -> Set.of("--html");
            case "bench" -> Set.of("--runs");
            default -> Set.of();
        };
        for (String g : a.given) {
            if (!g.equals("-D") && !Set.of("--parallelism", "--conf").contains(g) && !allowed.contains(g)) {
                throw new UsageException(g + " does not apply to ferry " + a.command);
            }
        }
        if (a.command.equals("qualify") ? a.files.isEmpty() : a.files.size() != 1) {
            throw new UsageException(
                    a.command.equals("qualify") ? "qualify needs a directory, scripts or compiled plans (.json)" : a.command + " takes one script, got " + a.files);
        }
        if (a.requireNative && a.mode.equals("stock")) {
            throw new UsageException("--require-native needs Ferry on: --mode native or compare");
        }
        return a;
    }

    private static String value(String[] argv, int i, String opt) throws UsageException {
        if (i >= argv.length) {
            throw new UsageException(opt + " needs a value");
        }
        return argv[i];
    }

    private static int number(String opt, String v, int min) throws UsageException {
        try {
            int n = Integer.parseInt(v);
            if (n >= min) {
                return n;
            }
        } catch (NumberFormatException ignored) {
            // reported below
        }
        throw new UsageException(opt + " must be an integer >= " + min + ", got " + v);
    }

    int run(String[] argv) throws Exception {
        Args a = parse(argv);
        Settings settings = Settings.of(a.conf, a.dynamic, a.parallelism);
        switch (a.command) {
            case "qualify":
                return new Qualify(out, settings).run(a.files, a.html);
            case "bench": {
                Path script = Path.of(a.files.get(0));
                return new BenchRun(out, settings, a.runs).run(commandLine(argv), script, SqlScript.parse(readScript(script)));
            }
            default: {
                Path script = Path.of(a.files.get(0));
                List<SqlScript.Statement> statements = SqlScript.parse(readScript(script));
                String mode = a.command.equals("explain") ? "explain" : a.mode;
                return new SqlRun(out, settings, mode, a.maxRows, a.requireNative).run(commandLine(argv), script, statements);
            }
        }
    }

    /** The command line as the user typed it, for the run's first line. */
    static String commandLine(String[] argv) {
        StringBuilder b = new StringBuilder("ferry");
        for (String a : argv) {
            b.append(' ').append(a.isEmpty() || a.matches(".*[\\s'\"].*") ? "'" + a.replace("'", "'\\''") + "'" : a);
        }
        return b.toString();
    }

    static String readScript(Path script) throws UsageException {
        try {
            return Files.readString(script, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UsageException("cannot read " + script + ": " + e.getMessage());
        }
    }

    /** A throwable's message with its root cause's, which is usually the one that says what is wrong. */
    static String describe(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String m = e.getMessage() == null ? e.toString() : e.getMessage();
        if (root != e && root.getMessage() != null && !m.contains(root.getMessage())) {
            m += "\n  caused by: " + root;
        }
        return m;
    }

    /** A statement on one line, at most {@code max} characters. */
    static String oneLine(String sql, int max) {
        String s = sql.replaceAll("\\s+", " ").strip();
        return s.length() > max ? s.substring(0, max - 3) + "..." : s;
    }
}
