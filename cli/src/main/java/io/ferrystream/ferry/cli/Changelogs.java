package io.ferrystream.ferry.cli;

import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.Consumer;

/**
 * Comparing two changelogs of the same query (stock Flink's and Ferry's) at the level the plan
 * guarantees ({@link PlanAnalysis}):
 *
 * <ol>
 *   <li><b>strict</b>: the same rows, row kinds included, in the same order;
 *   <li><b>multiset</b>: the same rows with the same multiplicities, in any order;
 *   <li><b>final result</b>: the same table once the changelog is applied ({@code +I}/{@code +U}
 *       add a row, {@code -U}/{@code -D} retract it).
 * </ol>
 *
 * Each level implies the next. A verdict says which level was required and why. Below the strict
 * level the rows reach a stateful operator in an order the plan does not fix, and a floating-point
 * SUM or AVG adds them in that order: stock Flink against itself then differs in the last bits of
 * a DOUBLE. There, and only there, two final results whose FLOAT and DOUBLE fields differ by
 * rounding alone ({@link #ROUNDING}) count as equal, and the verdict says so.
 */
final class Changelogs {
    private Changelogs() {}

    /**
     * The relative difference (and, near zero, the absolute one) two FLOAT or DOUBLE fields may
     * have when the plan leaves the order of a floating-point sum open.
     */
    static final double ROUNDING = 1e-9;

    /** The level a plan's changelog is compared at. */
    enum Level {
        /** Deterministic plan: the changelogs must be equal row for row. */
        STRICT("equal row for row"),
        /** Only the order depends on timing: the same multiset of changelog rows and the same final result. */
        ORDER("the same multiset of changelog rows and the same final result"),
        /** Intermediate updates depend on timing: the same final result. */
        CONTENT("the same final result"),
        /** Even the final result depends on timing or random input. */
        RESULT("the same final result, which this plan does not guarantee");

        final String requirement;

        Level(String requirement) {
            this.requirement = requirement;
        }

        static Level of(PlanAnalysis plan) {
            if (!plan.resultReasons.isEmpty()) {
                return RESULT;
            }
            if (!plan.contentReasons.isEmpty()) {
                return CONTENT;
            }
            if (!plan.orderReasons.isEmpty()) {
                return ORDER;
            }
            return STRICT;
        }
    }

    /**
     * The outcome of one query's comparison.
     *
     * @param identical whether the required level holds
     * @param failure whether the outcome fails the run (a difference Ferry may have caused)
     * @param text one line: IDENTICAL or DIFFERENT, what held, and why the level
     */
    record Verdict(Level level, boolean identical, boolean failure, String text) {
        /** The verdict without its explanation, for the summary. */
        String brief() {
            String head = text.contains(" (") ? text.substring(0, text.indexOf(" (")) : text;
            if (head.startsWith("IDENTICAL")) {
                String rounding = text.startsWith("IDENTICAL final result up to floating-point rounding") ? " up to floating-point rounding" : "";
                return switch (level) {
                    case STRICT -> "IDENTICAL, row for row";
                    case ORDER -> "IDENTICAL as a multiset and as the final result (order not deterministic)";
                    case CONTENT -> "IDENTICAL final result" + rounding + " (intermediate updates not deterministic)";
                    case RESULT -> "IDENTICAL final result" + rounding + " (result not deterministic)";
                };
            }
            return FerryCli.oneLine(head, 200);
        }
    }

    /**
     * Compares at the level {@code plan} requires. {@code nativeRan}: whether any native operator
     * ran for this query; when none did, both sides ran Flink's operators only, so a difference a
     * non-deterministic plan explains is no failure.
     */
    static Verdict compare(List<Row> stock, List<Row> ferry, PlanAnalysis plan, boolean nativeRan) {
        Level level = Level.of(plan);
        int[] upsertKey = plan.upsertKey;
        String ordered = firstDifference(stock, ferry);
        String multiset = multisetDifference(stock, ferry);
        String fin = finalResultDifference(stock, ferry, upsertKey);
        String rows = String.format("%d/%d changelog rows", stock.size(), ferry.size());
        if (level == Level.STRICT) {
            return ordered == null
                    ? new Verdict(level, true, false, "IDENTICAL: " + stock.size() + " changelog rows, equal row for row (the plan is deterministic)")
                    : new Verdict(level, false, true, "DIFFERENT: " + ordered + " (the plan is deterministic: the changelogs must be equal row for row)");
        }
        String why = switch (level) {
            case ORDER -> "its order is not deterministic: " + String.join("; ", plan.orderReasons);
            case CONTENT -> "its intermediate updates are not deterministic: " + String.join("; ", plan.contentReasons);
            default -> "its result is not deterministic: " + String.join("; ", plan.resultReasons);
        };
        String held = (ordered == null ? "equal row for row" : multiset == null ? "the same multiset of changelog rows, in another order"
                : fin == null ? "the same final result, other intermediate updates" : "different final results");
        if (level == Level.ORDER) {
            boolean ok = multiset == null && fin == null;
            return new Verdict(level, ok, !ok, (ok ? "IDENTICAL" : "DIFFERENT: " + (multiset != null ? multiset : fin))
                    + " (" + rows + ": " + held + "; compared as a multiset and as the final result, since " + why + ")");
        }
        if (fin == null) {
            return new Verdict(level, true, false,
                    "IDENTICAL final result (" + rows + ": " + held + "; compared as the final result, since " + why + ")");
        }
        if (finalResultDifferenceBeyondRounding(stock, ferry, upsertKey) == null) {
            return new Verdict(level, true, false, "IDENTICAL final result up to floating-point rounding (" + rows
                    + ": FLOAT/DOUBLE fields differ by at most " + ROUNDING + " relative, as a floating-point sum added in"
                    + " another order does; compared as the final result, since " + why + ")");
        }
        if (level == Level.RESULT && !nativeRan) {
            return new Verdict(level, false, false,
                    "DIFFERENT, as expected: " + fin + " (" + rows + "; no operator of this query ran natively, so both sides"
                            + " ran Flink's own operators, and " + why + ")");
        }
        return new Verdict(level, false, true, "DIFFERENT: " + fin + " (" + rows + "; compared as the final result, since " + why
                + (level == Level.RESULT ? "; the difference may be the plan's or Ferry's" : "") + ")");
    }

    /** The first differing changelog row, or null when both changelogs are equal. */
    static String firstDifference(List<Row> stock, List<Row> ferry) {
        int n = Math.max(stock.size(), ferry.size());
        for (int i = 0; i < n; i++) {
            String a = i < stock.size() ? stock.get(i).toString() : "(none)";
            String b = i < ferry.size() ? ferry.get(i).toString() : "(none)";
            if (!a.equals(b)) {
                return String.format(
                        "changelog row %d of %d/%d: stock %s, Ferry %s", i + 1, stock.size(), ferry.size(), a, b);
            }
        }
        return null;
    }

    /** The changelog rows (kinds included) with their multiplicities. */
    static Map<String, Integer> multiset(List<Row> rows) {
        Map<String, Integer> m = new TreeMap<>();
        for (Row r : rows) {
            m.merge(r.toString(), 1, Integer::sum);
        }
        return m;
    }

    /** A row whose multiplicity differs between the two changelogs, or null. */
    static String multisetDifference(List<Row> stock, List<Row> ferry) {
        String d = difference(multiset(stock), multiset(ferry));
        return d == null ? null : "changelog row " + d;
    }

    /** Compares the tables the two changelogs materialize to ({@link #materialize}); null when equal. */
    static String finalResultDifference(List<Row> stock, List<Row> ferry, int[] upsertKey) {
        String d = difference(materialize(stock, upsertKey), materialize(ferry, upsertKey));
        return d == null ? null : "final row " + d;
    }

    /**
     * Compares the two final results with FLOAT and DOUBLE fields equal within {@link #ROUNDING};
     * null when equal so. Rows that are not equal exactly are grouped by their other fields and
     * paired in the order of their floating-point fields.
     */
    static String finalResultDifferenceBeyondRounding(List<Row> stock, List<Row> ferry, int[] upsertKey) {
        Map<String, Integer> stockTable = materialize(stock, upsertKey);
        Map<String, Integer> ferryTable = materialize(ferry, upsertKey);
        Map<String, List<Row>> a = unmatchedByShape(stock, stockTable, ferryTable);
        Map<String, List<Row>> b = unmatchedByShape(ferry, ferryTable, stockTable);
        Set<String> shapes = new TreeSet<>(a.keySet());
        shapes.addAll(b.keySet());
        for (String shape : shapes) {
            List<Row> x = a.getOrDefault(shape, List.of());
            List<Row> y = b.getOrDefault(shape, List.of());
            if (x.size() != y.size()) {
                return "final row " + (x.size() > y.size() ? x : y).get(0) + ": stock x" + x.size() + ", Ferry x" + y.size();
            }
            for (int i = 0; i < x.size(); i++) {
                if (!withinRounding(x.get(i), y.get(i))) {
                    return "final row stock " + x.get(i) + ", Ferry " + y.get(i);
                }
            }
        }
        return null;
    }

    /**
     * The rows of {@code mine} (the materialized {@code rows}) beyond those of {@code theirs},
     * grouped by {@link #shape}, each group sorted by its floating-point fields.
     */
    private static Map<String, List<Row>> unmatchedByShape(
            List<Row> rows, Map<String, Integer> mine, Map<String, Integer> theirs) {
        Map<String, Row> byText = new TreeMap<>();
        for (Row r : rows) {
            Row v = Row.copy(r);
            v.setKind(RowKind.INSERT);
            byText.putIfAbsent(v.toString(), v);
        }
        Map<String, List<Row>> out = new TreeMap<>();
        for (Map.Entry<String, Integer> e : mine.entrySet()) {
            int extra = e.getValue() - theirs.getOrDefault(e.getKey(), 0);
            Row row = byText.get(e.getKey());
            for (int i = 0; i < extra; i++) {
                out.computeIfAbsent(shape(row), k -> new ArrayList<>()).add(row);
            }
        }
        out.values().forEach(l -> l.sort(Changelogs::compareFloatingFields));
        return out;
    }

    private static boolean floating(Object field) {
        return field instanceof Double || field instanceof Float;
    }

    /** The row's text with each FLOAT/DOUBLE field replaced by {@code ~}. */
    private static String shape(Row row) {
        Row s = Row.copy(row);
        for (int i = 0; i < s.getArity(); i++) {
            if (floating(s.getField(i))) {
                s.setField(i, "~");
            }
        }
        return s.toString();
    }

    /** Orders rows of one shape by their FLOAT/DOUBLE fields, left to right. */
    private static int compareFloatingFields(Row x, Row y) {
        for (int i = 0; i < x.getArity(); i++) {
            if (floating(x.getField(i))) {
                int c = Double.compare(((Number) x.getField(i)).doubleValue(), ((Number) y.getField(i)).doubleValue());
                if (c != 0) {
                    return c;
                }
            }
        }
        return 0;
    }

    /** Whether two rows of one shape have FLOAT/DOUBLE fields equal within {@link #ROUNDING}. */
    private static boolean withinRounding(Row x, Row y) {
        for (int i = 0; i < x.getArity(); i++) {
            if (floating(x.getField(i))) {
                double p = ((Number) x.getField(i)).doubleValue();
                double q = ((Number) y.getField(i)).doubleValue();
                if (Double.compare(p, q) != 0
                        && Math.abs(p - q) > ROUNDING * Math.max(1.0, Math.max(Math.abs(p), Math.abs(q)))) {
                    return false;
                }
            }
        }
        return true;
    }

    private static String difference(Map<String, Integer> a, Map<String, Integer> b) {
        if (a.equals(b)) {
            return null;
        }
        for (Map.Entry<String, Integer> e : a.entrySet()) {
            if (!Objects.equals(b.get(e.getKey()), e.getValue())) {
                return e.getKey() + ": stock x" + e.getValue() + ", Ferry x" + b.getOrDefault(e.getKey(), 0);
            }
        }
        for (Map.Entry<String, Integer> e : b.entrySet()) {
            if (!a.containsKey(e.getKey())) {
                return e.getKey() + ": stock x0, Ferry x" + e.getValue();
            }
        }
        return "(differ)";
    }

    /** The table {@code rows} leave, materialized by {@link Materializer}. */
    static Map<String, Integer> materialize(List<Row> rows, int[] upsertKey) {
        Materializer m = new Materializer(upsertKey);
        rows.forEach(r -> m.accept(Row.copy(r)));
        return m.table();
    }

    /**
     * Folds a changelog into the table it leaves, without keeping the changelog: each row (as
     * {@code +I}) with its multiplicity, zero counts dropped.
     *
     * <ul>
     *   <li>A retract or insert-only changelog: {@code +I}/{@code +U} add a row, {@code -U}/{@code
     *       -D} retract it. A changelog with a {@code -U}, or without a {@code +U}, is one of these.
     *   <li>An upsert changelog, {@code +U} without {@code -U}, by the result's upsert key ({@link
     *       PlanAnalysis#upsertKey}): {@code +I}/{@code +U} replace the key's row, {@code -D}
     *       deletes it. Counted as a retract changelog, it would keep every intermediate version of
     *       a key, and those differ between runs whose intermediate updates are not deterministic.
     * </ul>
     *
     * It takes ownership of the rows it accepts (it resets their kind).
     */
    static final class Materializer implements Consumer<Row> {
        private final int[] upsertKey;
        private final Map<String, Integer> counts = new TreeMap<>();
        /** The row of each upsert key, while no {@code -U} has come (null without an upsert key). */
        private Map<String, String> byKey;
        private boolean updates;

        /** @param upsertKey the result's upsert key, or null when it has none */
        Materializer(int[] upsertKey) {
            this.upsertKey = upsertKey;
            byKey = upsertKey == null ? null : new HashMap<>();
        }

        @Override
        public void accept(Row r) {
            RowKind kind = r.getKind();
            boolean add = kind == RowKind.INSERT || kind == RowKind.UPDATE_AFTER;
            if (kind == RowKind.UPDATE_BEFORE) {
                byKey = null;
            }
            updates |= kind == RowKind.UPDATE_AFTER;
            r.setKind(RowKind.INSERT);
            String text = r.toString();
            counts.merge(text, add ? 1 : -1, Integer::sum);
            counts.remove(text, 0);
            if (byKey != null) {
                String key = Row.project(r, upsertKey).toString();
                if (add) {
                    byKey.put(key, text);
                } else {
                    byKey.remove(key);
                }
            }
        }

        /** The table folded so far. */
        Map<String, Integer> table() {
            if (byKey == null || !updates) {
                return counts;
            }
            Map<String, Integer> t = new TreeMap<>();
            byKey.values().forEach(text -> t.merge(text, 1, Integer::sum));
            return t;
        }
    }

    /** A short checksum of a materialized result (SHA-256 over its sorted rows and counts, 16 hex digits). */
    static String checksum(Map<String, Integer> table) {
        try {
            MessageDigest md = MessageDigest.getInstance("SHA-256");
            for (Map.Entry<String, Integer> e : new TreeMap<>(table).entrySet()) {
                md.update(e.getKey().getBytes(StandardCharsets.UTF_8));
                md.update((byte) 0);
                md.update(Integer.toString(e.getValue()).getBytes(StandardCharsets.UTF_8));
                md.update((byte) '\n');
            }
            return HexFormat.of().formatHex(md.digest(), 0, 8);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
