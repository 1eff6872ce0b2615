package io.ferrystream.ferry.planner;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The Markdown tables the doc tests check. */
final class DocTables {
    private DocTables() {}

    /** The cells of the document's first table (the header row first, no separator row). */
    static List<List<String>> first(Path doc) throws Exception {
        return first(doc, null);
    }

    /**
     * The cells of the first table after the line {@code heading} (null: anywhere), the header row
     * first, no separator row.
     */
    static List<List<String>> first(Path doc, String heading) throws Exception {
        List<List<String>> rows = new ArrayList<>();
        boolean after = heading == null;
        for (String line : Files.readAllLines(doc)) {
            after |= line.equals(heading);
            if (!after) {
                continue;
            }
            if (!line.startsWith("|")) {
                if (!rows.isEmpty()) {
                    break;
                }
                continue;
            }
            if (line.startsWith("|---")) {
                continue;
            }
            List<String> cells = new ArrayList<>();
            for (String c : line.substring(1, line.length() - 1).split("\\|")) {
                cells.add(c.trim());
            }
            rows.add(cells);
        }
        if (rows.isEmpty()) {
            throw new AssertionError("no table after " + heading + " in " + doc);
        }
        return rows;
    }
}
