package io.ferrystream.ferry.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A SQL script as the SQL Client reads one: statements end at semicolons outside strings, quoted
 * identifiers and comments; {@code --} and {@code /* *}{@code /} comments are dropped, query
 * hints ({@code /*+ ... *}{@code /}) kept. Besides
 * Flink's own statements a script may hold the SQL Client's {@code SET 'key' = 'value';}, {@code
 * SET;}, {@code RESET 'key';} and {@code RESET;}.
 */
final class SqlScript {
    private SqlScript() {}

    /** What a statement does, as the CLI runs it. */
    enum Kind {
        /** {@code SET 'key' = 'value'} (key null: {@code SET;}, list the settings). */
        SET,
        /** {@code RESET 'key'} (key null: {@code RESET;}, every key). */
        RESET,
        /** A query: its rows are collected and compared. */
        QUERY,
        /** {@code INSERT INTO} / {@code INSERT OVERWRITE}: a job whose rows go to a sink. */
        INSERT,
        /** Anything else (DDL, USE, SHOW, ...): executed as it is. */
        OTHER
    }

    /**
     * One statement: its text without comments, the line it starts on (1-based), and its title:
     * the first line of the comment block right above it, if any (e.g. {@code -- q5: hot items}).
     */
    record Statement(String sql, int line, String title) {
        Kind kind() {
            return SqlScript.kind(sql);
        }

        /** "line N" or "line N, title". */
        String label() {
            return title == null ? "line " + line : "line " + line + ", " + title;
        }
    }

    /** The statements' texts. */
    static List<String> split(String script) {
        List<String> out = new ArrayList<>();
        for (Statement s : parse(script)) {
            out.add(s.sql());
        }
        return out;
    }

    static List<Statement> parse(String script) {
        List<Statement> out = new ArrayList<>();
        StringBuilder cur = new StringBuilder();
        int n = script.length();
        int line = 1;
        int startLine = -1; // line of the current statement's first character; -1 before it
        List<String> comments = new ArrayList<>(); // the contiguous comment block before the statement
        int lastCommentLine = -2;
        for (int i = 0; i < n; i++) {
            char c = script.charAt(i);
            char next = i + 1 < n ? script.charAt(i + 1) : 0;
            if (c == '-' && next == '-') { // line comment: dropped, remembered as a possible title
                int end = script.indexOf('\n', i);
                end = end < 0 ? n : end;
                if (startLine < 0 && startsLine(script, i)) { // a comment after code on its line is no title
                    if (lastCommentLine != line - 1) {
                        comments.clear();
                    }
                    comments.add(script.substring(i + 2, end).strip());
                    lastCommentLine = line;
                }
                i = end - 1; // the newline is counted by the next iteration
            } else if (c == '/' && next == '*') { // block comment: dropped; a hint (/*+ ... */) kept
                int end = script.indexOf("*/", i + 2);
                int stop = end < 0 ? n : end + 2;
                boolean hint = i + 2 < n && script.charAt(i + 2) == '+';
                if (hint && startLine < 0) {
                    startLine = line;
                }
                line += count(script, i, stop, '\n');
                cur.append(hint ? script.substring(i, stop) : " ");
                i = stop - 1;
            } else if (c == ';') {
                add(out, cur, startLine, lastCommentLine == startLine - 1 ? comments : List.of());
                startLine = -1;
                comments.clear();
            } else {
                if (!Character.isWhitespace(c) && startLine < 0) {
                    startLine = line;
                }
                if (c == '\'' || c == '`' || c == '"') { // quoted: copied verbatim
                    int j = i + 1;
                    while (j < n) {
                        if (script.charAt(j) == c) {
                            if (j + 1 < n && script.charAt(j + 1) == c) {
                                j += 2; // a doubled quote escapes itself
                                continue;
                            }
                            break;
                        }
                        j++;
                    }
                    int stop = Math.min(j + 1, n);
                    line += count(script, i, stop, '\n');
                    cur.append(script, i, stop);
                    i = stop - 1;
                    continue;
                }
                if (c == '\n') {
                    line++;
                }
                cur.append(c);
            }
        }
        add(out, cur, startLine, lastCommentLine == startLine - 1 ? comments : List.of());
        return out;
    }

    /** Whether only whitespace precedes position {@code i} on its line. */
    private static boolean startsLine(String s, int i) {
        for (int j = i - 1; j >= 0 && s.charAt(j) != '\n'; j--) {
            if (!Character.isWhitespace(s.charAt(j))) {
                return false;
            }
        }
        return true;
    }

    private static int count(String s, int from, int to, char c) {
        int k = 0;
        for (int i = from; i < to; i++) {
            if (s.charAt(i) == c) {
                k++;
            }
        }
        return k;
    }

    private static void add(List<Statement> out, StringBuilder cur, int line, List<String> comments) {
        String s = cur.toString().trim();
        if (!s.isEmpty()) {
            String title = null;
            for (String c : comments) {
                if (!c.isEmpty()) {
                    title = c;
                    break;
                }
            }
            out.add(new Statement(s, Math.max(line, 1), title));
        }
        cur.setLength(0);
    }

    private static final Pattern SET =
            Pattern.compile("SET(?:\\s+('(?:[^']|'')*'|[^\\s=]+)\\s*=\\s*('(?:[^']|'')*'|.*?))?\\s*", Pattern.CASE_INSENSITIVE | Pattern.DOTALL);
    private static final Pattern RESET =
            Pattern.compile("RESET(?:\\s+('(?:[^']|'')*'|\\S+))?\\s*", Pattern.CASE_INSENSITIVE | Pattern.DOTALL);

    static Kind kind(String statement) {
        String s = statement.stripLeading().toUpperCase(Locale.ROOT);
        if (SET.matcher(statement.strip()).matches() && firstWord(s).equals("SET")) {
            return Kind.SET;
        }
        if (RESET.matcher(statement.strip()).matches() && firstWord(s).equals("RESET")) {
            return Kind.RESET;
        }
        if (isQuery(statement)) {
            return Kind.QUERY;
        }
        if (firstWord(s).equals("INSERT")) {
            return Kind.INSERT;
        }
        return Kind.OTHER;
    }

    private static String firstWord(String upper) {
        int i = 0;
        while (i < upper.length() && Character.isLetter(upper.charAt(i))) {
            i++;
        }
        return upper.substring(0, i);
    }

    /**
     * The key and value of a {@code SET}: {key, value}, or null for a bare {@code SET;}. Quoted
     * keys and values lose their quotes ({@code ''} stands for one quote).
     */
    static String[] setKeyValue(String statement) {
        Matcher m = SET.matcher(statement.strip());
        if (!m.matches()) {
            throw new IllegalArgumentException("not a SET statement: " + statement);
        }
        if (m.group(1) == null) {
            return null;
        }
        return new String[] {unquote(m.group(1)), unquote(m.group(2).strip())};
    }

    /** The key of a {@code RESET}, or null for a bare {@code RESET;}. */
    static String resetKey(String statement) {
        Matcher m = RESET.matcher(statement.strip());
        if (!m.matches()) {
            throw new IllegalArgumentException("not a RESET statement: " + statement);
        }
        return m.group(1) == null ? null : unquote(m.group(1));
    }

    private static String unquote(String s) {
        if (s.length() >= 2 && s.startsWith("'") && s.endsWith("'")) {
            return s.substring(1, s.length() - 1).replace("''", "'");
        }
        return s;
    }

    /** Whether a statement returns rows (a query) rather than changing the catalog or settings. */
    static boolean isQuery(String statement) {
        String s = statement.stripLeading().toUpperCase(Locale.ROOT);
        return s.startsWith("SELECT") || s.startsWith("WITH") || s.startsWith("VALUES") || s.startsWith("(");
    }
}
