package io.ferrystream.ferry.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/** Splits a SQL script into statements at semicolons outside strings, identifiers and comments. */
final class SqlScript {
    private SqlScript() {}

    static List<String> split(String script) {
        List<String> out = new ArrayList<>();
        StringBuilder cur = new StringBuilder();
        int n = script.length();
        for (int i = 0; i < n; i++) {
            char c = script.charAt(i);
            char next = i + 1 < n ? script.charAt(i + 1) : 0;
            if (c == '-' && next == '-') { // line comment: dropped
                while (i < n && script.charAt(i) != '\n') {
                    i++;
                }
                cur.append('\n');
            } else if (c == '/' && next == '*') { // block comment: dropped
                int end = script.indexOf("*/", i + 2);
                i = end < 0 ? n : end + 1;
                cur.append(' ');
            } else if (c == '\'' || c == '`' || c == '"') { // quoted: copied verbatim
                int j = i + 1;
                while (j < n) {
                    if (script.charAt(j) == c) {
                        if (j + 1 < n && script.charAt(j + 1) == c) {
                            j += 2; // doubled quote escapes itself
                            continue;
                        }
                        break;
                    }
                    j++;
                }
                cur.append(script, i, Math.min(j + 1, n));
                i = j;
            } else if (c == ';') {
                add(out, cur);
            } else {
                cur.append(c);
            }
        }
        add(out, cur);
        return out;
    }

    private static void add(List<String> out, StringBuilder cur) {
        String s = cur.toString().trim();
        if (!s.isEmpty()) {
            out.add(s);
        }
        cur.setLength(0);
    }

    /** Whether a statement returns rows (a query) rather than changing the catalog or settings. */
    static boolean isQuery(String statement) {
        String s = statement.stripLeading().toUpperCase(Locale.ROOT);
        return s.startsWith("SELECT") || s.startsWith("WITH") || s.startsWith("VALUES") || s.startsWith("(");
    }
}
