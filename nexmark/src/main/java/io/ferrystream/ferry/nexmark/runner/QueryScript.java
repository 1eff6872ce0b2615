package io.ferrystream.ferry.nexmark.runner;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One Nexmark query as the runner runs it: the statements of {@code queries/ddl.sql} (the event
 * table and its views) and of {@code queries/qN.sql} (the sink, any view, function or side input
 * the query needs), then the query's INSERT into its sink. Placeholders {@code ${NAME}} are filled
 * in from the variables given; an unknown one is an error.
 */
record QueryScript(String name, String title, List<String> setup, String insert, String sinkTable) {
    /** q0 to q22, in order. */
    static final List<String> NAMES = names();

    private static final Pattern VARIABLE = Pattern.compile("\\$\\{([A-Z_]+)}");
    private static final Pattern INSERT_INTO = Pattern.compile("(?is)^INSERT\\s+INTO\\s+`?(\\w+)`?.*");

    private static List<String> names() {
        List<String> n = new ArrayList<>();
        for (int i = 0; i <= 22; i++) {
            n.add("q" + i);
        }
        return List.copyOf(n);
    }

    static QueryScript load(String name, Map<String, String> variables) {
        if (!NAMES.contains(name)) {
            throw new IllegalArgumentException("no Nexmark query " + name + "; queries are q0 to q22");
        }
        String text = resource(name + ".sql");
        String title = text.lines().findFirst().orElse("").replaceFirst("^--\\s*", "");
        List<String> statements = new ArrayList<>(statements(resource("ddl.sql"), variables));
        statements.addAll(statements(text, variables));
        String insert = statements.remove(statements.size() - 1);
        Matcher m = INSERT_INTO.matcher(insert);
        if (!m.matches()) {
            throw new IllegalStateException(name + ".sql must end with its INSERT INTO, not: " + insert);
        }
        return new QueryScript(name, title, List.copyOf(statements), insert, m.group(1));
    }

    /** The script's statements: comment lines dropped, split at each ';' that ends a line, variables filled in. */
    static List<String> statements(String script, Map<String, String> variables) {
        StringBuilder current = new StringBuilder();
        List<String> out = new ArrayList<>();
        for (String line : script.split("\n", -1)) {
            if (line.strip().startsWith("--")) {
                continue;
            }
            current.append(line).append('\n');
            if (line.stripTrailing().endsWith(";")) {
                String s = current.toString().strip();
                out.add(fill(s.substring(0, s.length() - 1), variables));
                current.setLength(0);
            }
        }
        if (!current.toString().isBlank()) {
            throw new IllegalStateException("a statement without its ';': " + current);
        }
        return out;
    }

    private static String fill(String statement, Map<String, String> variables) {
        Matcher m = VARIABLE.matcher(statement);
        StringBuilder b = new StringBuilder();
        while (m.find()) {
            String value = variables.get(m.group(1));
            if (value == null) {
                throw new IllegalArgumentException("no value for ${" + m.group(1) + "} in: " + statement);
            }
            m.appendReplacement(b, Matcher.quoteReplacement(value));
        }
        m.appendTail(b);
        return b.toString();
    }

    static String resource(String file) {
        String path = "/io/ferrystream/ferry/nexmark/queries/" + file;
        try (InputStream in = QueryScript.class.getResourceAsStream(path)) {
            if (in == null) {
                throw new IllegalStateException("missing resource " + path);
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IllegalStateException("cannot read " + path, e);
        }
    }
}
