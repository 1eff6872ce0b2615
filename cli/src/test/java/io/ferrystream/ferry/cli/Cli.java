package io.ferrystream.ferry.cli;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertTrue;

/** Runs the {@code ferry} command in this JVM, as {@code ./ferry} runs it, and reads its output. */
final class Cli {
    private Cli() {}

    /** What a command printed and its exit code. */
    record Result(int code, String out, String err) {
        @Override
        public String toString() {
            return "exit " + code + "\n--- stdout\n" + out + "\n--- stderr\n" + err;
        }

        /** The run's closing count: {native, candidates, opened subtasks}. */
        long[] nativeCount() {
            Matcher m = Pattern.compile("(?m)^native: (\\d+) of (\\d+) candidate nodes ran natively; (\\d+) native operator subtasks? opened$")
                    .matcher(out);
            assertTrue(m.find(), "no native count in\n" + this);
            return new long[] {Long.parseLong(m.group(1)), Long.parseLong(m.group(2)), Long.parseLong(m.group(3))};
        }

        /** How often {@code s} occurs in the output. */
        int count(String s) {
            return out.split(Pattern.quote(s), -1).length - 1;
        }
    }

    static Result run(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = FerryCli.execute(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Result(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    /** Writes a script into {@code dir} and returns its path as a string. */
    static String script(Path dir, String name, String... lines) throws IOException {
        Path p = dir.resolve(name);
        Files.writeString(p, String.join("\n", lines) + "\n", StandardCharsets.UTF_8);
        return p.toString();
    }

    /** An example script of the repository (tests run in cli/). */
    static String example(String name) {
        return "../examples/" + name;
    }
}
