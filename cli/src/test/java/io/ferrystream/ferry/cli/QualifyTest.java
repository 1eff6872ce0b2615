package io.ferrystream.ferry.cli;

import io.ferrystream.ferry.FerryOptions;
import io.ferrystream.ferry.planner.Ferry;

import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.DisabledIfSystemProperty;
import org.junit.jupiter.api.io.TempDir;

import javax.imageio.ImageIO;

import java.awt.image.BufferedImage;
import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * {@code ferry qualify}: every query of the scripts planned (nothing run), the stateful operators
 * native or not with their reasons, the reasons ranked by the queries they block, a native share
 * per query, the Nexmark gains of the native kinds it would use; compiled plans (JSON) as EXECUTE
 * PLAN decides them; Markdown on stdout and an HTML report that a real browser renders.
 */
class QualifyTest {
    @TempDir Path dir;

    /**
     * Compiled plans written here by COMPILE PLAN with Ferry's planner, next to a script, a
     * malformed JSON file and a foreign one: each plan is a query labelled by its file, decided as
     * EXECUTE PLAN decides it (so the command's options apply: a kill switch turns the native node
     * into a fallback), with the Nexmark gains of its native kinds; a file that does not load is an
     * error line of its own, and the report goes on.
     */
    @Test
    void compiledPlansAsExecutePlanDecidesThem() throws Exception {
        StreamTableEnvironment tEnv = StreamTableEnvironment.create(
                StreamExecutionEnvironment.getExecutionEnvironment(), EnvironmentSettings.inStreamingMode());
        Ferry.install(tEnv);
        tEnv.getConfig().set(FerryOptions.ENABLED, true);
        tEnv.executeSql("CREATE TABLE src (k INT, b BIGINT, i INT, pt AS PROCTIME())"
                + " WITH ('connector' = 'datagen', 'number-of-rows' = '100')");
        tEnv.executeSql("CREATE TABLE sink (k INT, n BIGINT, s DOUBLE) WITH ('connector' = 'print')");
        tEnv.executeSql("CREATE TABLE firsts (k INT, b BIGINT, i INT) WITH ('connector' = 'print')");
        Path plans = Files.createDirectory(dir.resolve("plans"));
        tEnv.executeSql("COMPILE PLAN '" + plans.resolve("agg.json") + "' FOR INSERT INTO sink"
                + " SELECT k, COUNT(*), CAST(SUM(b) AS DOUBLE) FROM src GROUP BY k");
        // AVG(DISTINCT) stays Flink's: Go refuses it
        tEnv.executeSql("COMPILE PLAN '" + plans.resolve("avg-distinct.json") + "' FOR INSERT INTO sink"
                + " SELECT k, SUM(b), AVG(DISTINCT i) FROM src GROUP BY k");
        // Flink's planner makes a Rank of it, which translates to the exec node Deduplicate: the deduplicate kind
        tEnv.executeSql("COMPILE PLAN '" + plans.resolve("dedup.json") + "' FOR INSERT INTO firsts SELECT k, b, i FROM"
                + " (SELECT k, b, i, ROW_NUMBER() OVER (PARTITION BY k ORDER BY pt) AS rn FROM src) WHERE rn = 1");
        // mini-batch: the two-phase aggregate, whose kinds Nexmark measures
        tEnv.getConfig().set("table.exec.mini-batch.enabled", "true");
        tEnv.getConfig().set("table.exec.mini-batch.allow-latency", "1 s");
        tEnv.getConfig().set("table.exec.mini-batch.size", "1000");
        tEnv.executeSql("COMPILE PLAN '" + plans.resolve("two-phase.json") + "' FOR INSERT INTO sink"
                + " SELECT k, COUNT(*), CAST(MAX(b) AS DOUBLE) FROM src GROUP BY k");
        Files.writeString(plans.resolve("broken.json"), "{\"flinkVersion\": \"2.3\", \"nodes\": [", StandardCharsets.UTF_8);
        Files.writeString(plans.resolve("package.json"), "{\"name\": \"webapp\", \"version\": \"1.0.0\"}", StandardCharsets.UTF_8);
        Cli.script(plans, "script.sql",
                "CREATE TABLE src (k INT, b BIGINT) WITH ('connector' = 'datagen', 'number-of-rows' = '10');",
                "SELECT k, COUNT(*) FROM src GROUP BY k;");

        Path html = dir.resolve("plans.html");
        Cli.Result r = Cli.run("qualify", plans.toString(), "--html", html.toString());
        assertEquals(0, r.code(), r.toString());
        String out = r.out();
        assertTrue(out.contains("7 queries from 1 script and 6 compiled plans: 5 of 6 stateful operators would run natively (83 %)."
                + " Queries fully native: 4, partly: 0, not at all: 1, without stateful operators: 0, failed to plan or load: 2."),
                r.toString());
        NexmarkGains gains = NexmarkGains.shipped();
        String agg = plans.resolve("agg.json").normalize().toString();
        assertTrue(out.contains("| " + agg + ": compiled plan | GroupAggregate (native) | 1 of 1 | 100 % |  | group_aggregate: "
                + gains.describe("group_aggregate") + " |"), r.toString());
        assertTrue(out.contains(": compiled plan | GroupAggregate | 0 of 1 | 0 % | GroupAggregate: AVG(DISTINCT): not native yet |  |"),
                r.toString());
        assertTrue(out.contains("| GroupAggregate: AVG(DISTINCT): not native yet | 1 | 1 |"), r.toString());
        assertTrue(out.contains("dedup.json: compiled plan | Deduplicate (native) | 1 of 1 | 100 % |  | deduplicate: "
                + gains.describe("deduplicate") + " |"), r.toString());
        assertTrue(out.contains("two-phase.json: compiled plan | LocalGroupAggregate (native), GlobalGroupAggregate (native) | 2 of 2 | 100 % |  | "
                + "local_group_aggregate: " + gains.describe("local_group_aggregate") + "; global_group_aggregate: "
                + gains.describe("global_group_aggregate") + " |"), r.toString());
        assertTrue(out.contains("script.sql:2: SELECT k, COUNT(*) FROM src GROUP BY k | GroupAggregate (native) | 1 of 1 |"), r.toString());
        for (String bad : List.of("broken.json", "package.json")) {
            assertTrue(Pattern.compile("\\| \\S*" + Pattern.quote(bad) + ": compiled plan \\| loading failed \\| \\| \\| not a compiled plan Flink 2.3 loads: \\S")
                    .matcher(out).find(), bad + ":\n" + r);
        }
        assertTrue(out.contains("From the Nexmark run of commit " + gains.commit + ", started " + gains.started), r.toString());
        assertFalse(r.err().contains("\tat ") || out.contains("\tat "), "a stack trace:\n" + r);

        // the HTML report shows the plans as queries: rows, bars, the failed ones, the gains
        String page = Files.readString(html, StandardCharsets.UTF_8);
        assertEquals(7, count(page, "<tr><td><code>"), page);
        assertEquals(5, count(page, "<rect class=\"native\""), page);
        assertEquals(1, count(page, "<rect class=\"fallback\""), page);
        assertEquals(2, count(page, "fill=\"#b00\">loading failed</text>"), page);
        assertTrue(page.contains("<code>" + QualifyHtml.esc(agg) + ": compiled plan</code>"), page);
        assertTrue(page.contains("<td class=\"gains\">" + QualifyHtml.esc("local_group_aggregate: " + gains.describe("local_group_aggregate"))),
                page);

        // decided when read, with the command's options, as EXECUTE PLAN decides
        Cli.Result off = Cli.run("qualify", plans.resolve("agg.json").toString(), "-D", "ferry.group-aggregate.enabled=false");
        assertEquals(0, off.code(), off.toString());
        assertTrue(off.out().contains("1 queries from 1 compiled plan: 0 of 1 stateful operators would run natively"), off.toString());
        assertTrue(off.out().contains("| GroupAggregate | 0 of 1 | 0 % | GroupAggregate: disabled by ferry.group-aggregate.enabled=false |  |"),
                off.toString());
    }

    @Test
    void markdownOverNexmarkAndFallbacks() {
        Cli.Result r = Cli.run("qualify", Cli.example("nexmark.sql"), Cli.example("group-by-fallbacks.sql"));
        assertEquals(0, r.code(), r.toString());
        String out = r.out();
        assertTrue(out.startsWith("# Ferry qualification report"), r.toString());
        // 23 Nexmark queries (q0-q22) and 5 GROUP BYs, none failing to plan
        assertTrue(out.contains("28 queries from 2 scripts: 14 of 31 stateful operators would run natively (45 %)."), r.toString());
        for (int q = 0; q <= 22; q++) {
            assertTrue(out.contains(" q" + q + ": "), "q" + q + " missing:\n" + r);
        }
        // ranked by queries blocked; COLLECT counts once; candidates' reasons lose their aggs[i] prefix
        int join = out.indexOf("| regular join: its native kind is a preview, off by default (SET 'ferry.regular-join.enabled' = 'true'"
                + " switches it on) | 7 | 7 |");
        int window = out.indexOf("| window aggregate: no native operator kind yet | 4 | 6 |");
        // q12's processing-time window aggregate is single-phase: the preview kind's node, off by default
        assertTrue(out.contains("| window aggregate: its native kind is a preview, off by default (SET"
                + " 'ferry.window-aggregate.enabled' = 'true' switches it on; single-phase only) | 1 | 1 |"), r.toString());
        int listagg = out.indexOf("| GroupAggregate: aggregate function COLLECT: not native yet | 1 | 1 |");
        assertTrue(join > 0 && window > join && listagg > window, r.toString());
        assertTrue(out.contains("q17: auction statistics report: SELECT auction, DATE_FORMAT(`dateTime`,"), r.toString());
        assertTrue(Pattern.compile("q17: .*\\| GroupAggregate \\(native\\) \\| 1 of 1 \\| 100 % \\|").matcher(out).find(), r.toString());
        assertTrue(Pattern.compile("q4: .*\\| GroupAggregate ×2 \\(native\\), Join \\| 2 of 3 \\| 67 % \\| regular join").matcher(out).find(),
                r.toString());
        assertTrue(Pattern.compile("q0: .*\\| none \\| 0 of 0 \\| – \\|").matcher(out).find(), r.toString());
        // q18 deduplicates natively; q19's Top-N and the top-1 after q6's and q9's joins are native Top-Ns
        assertTrue(Pattern.compile("q18: .*\\| Rank \\(native\\) \\| 1 of 1 \\| 100 % \\|").matcher(out).find(), r.toString());
        assertTrue(Pattern.compile("q19: .*\\| Rank \\(native\\) \\| 1 of 1 \\| 100 % \\|  \\| top_n: ").matcher(out).find(),
                r.toString());
        assertTrue(Pattern.compile("q9: .*\\| Rank \\(native\\), Join \\| 1 of 2 \\| 50 % \\| regular join").matcher(out).find(),
                r.toString());
        // q5 and q8 join windows natively (docs/operators/window-join.md)
        assertTrue(Pattern.compile("q8: .*\\| WindowJoin \\(native\\), GlobalWindowAggregate ×2 \\| 1 of 3 \\| 33 % \\|").matcher(out).find(),
                r.toString());
    }

    /**
     * The HTML report of every example script, in Debian's Chromium (headless): the page's own
     * script runs and counts the chart's bars and the table's rows, the dumped DOM holds both
     * charts and the table, and the screenshot shows the native and the fallback colours. Chromium
     * is required: the test fails without it; {@code -Dferry.skipBrowserTests=true} skips it.
     */
    @Test
    @DisabledIfSystemProperty(named = "ferry.skipBrowserTests", matches = "true")
    void htmlInHeadlessChromium() throws Exception {
        String chromium = chromium();
        Path html = dir.resolve("qualify.html");
        Cli.Result r = Cli.run("qualify", "../examples", "--html", html.toString());
        assertEquals(0, r.code(), r.toString());
        Matcher m = Pattern.compile("(\\d+) queries from (\\d+) scripts: (\\d+) of (\\d+) stateful operators").matcher(r.out());
        assertTrue(m.find(), r.toString());
        int queries = Integer.parseInt(m.group(1));
        int operators = Integer.parseInt(m.group(4));
        int nativeOps = Integer.parseInt(m.group(3));

        String dom = browser(chromium, "--dump-dom", html);
        assertTrue(dom.contains("data-rendered=\"" + operators + " bars, " + queries + " rows\""),
                "the page's script did not run or counted otherwise:\n" + head(dom));
        assertTrue(dom.contains("<svg id=\"operators-chart\""), head(dom));
        assertTrue(dom.contains("<svg id=\"reasons-chart\""), head(dom));
        assertEquals(nativeOps, count(dom, "<rect class=\"native\""), head(dom));
        assertEquals(operators - nativeOps, count(dom, "<rect class=\"fallback\""), head(dom));
        assertEquals(queries, count(dom, "<tr><td><code>"), head(dom));
        assertTrue(dom.contains("q17: auction statistics report"), head(dom));

        Path png = dir.resolve("qualify.png");
        browser(chromium, "--screenshot=" + png, html);
        BufferedImage image = ImageIO.read(png.toFile());
        assertNotNull(image, "no screenshot");
        int nativePixels = 0;
        int fallbackPixels = 0;
        int nonWhite = 0;
        for (int y = 0; y < image.getHeight(); y++) {
            for (int x = 0; x < image.getWidth(); x++) {
                int rgb = image.getRGB(x, y) & 0xffffff;
                nativePixels += near(rgb, 0x1f9d55) ? 1 : 0;
                fallbackPixels += near(rgb, 0xe8772e) ? 1 : 0;
                nonWhite += rgb != 0xffffff ? 1 : 0;
            }
        }
        int pixels = image.getWidth() * image.getHeight();
        assertTrue(nonWhite > pixels / 50, "the screenshot is blank: " + nonWhite + " of " + pixels + " pixels not white");
        assertTrue(nativePixels > 2000, "native bars not drawn: " + nativePixels + " pixels");
        assertTrue(fallbackPixels > 2000, "fallback bars not drawn: " + fallbackPixels + " pixels");
    }

    /** The Chromium binary: -Dferry.chromium, else chromium or chromium-browser on PATH; fails when none. */
    static String chromium() {
        String configured = System.getProperty("ferry.chromium");
        if (configured != null) {
            return configured;
        }
        for (String name : List.of("chromium", "chromium-browser")) {
            for (String d : System.getenv().getOrDefault("PATH", "").split(File.pathSeparator)) {
                if (Files.isExecutable(Path.of(d, name))) {
                    return Path.of(d, name).toString();
                }
            }
        }
        fail("Chromium is required for the HTML report's test: apt-get install chromium (scripts/setup.sh test"
                + " installs it), -Dferry.chromium=PATH names another, -Dferry.skipBrowserTests=true skips the test");
        return null;
    }

    /** Runs headless Chromium on a file; returns its stdout. */
    private String browser(String chromium, String action, Path html) throws IOException, InterruptedException {
        Path profile = Files.createTempDirectory(dir, "chromium-profile");
        List<String> cmd = new ArrayList<>(List.of(chromium, "--headless", "--no-sandbox", "--disable-gpu",
                "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run",
                "--disable-dev-shm-usage", "--hide-scrollbars", "--user-data-dir=" + profile, "--window-size=1400,1800",
                action, html.toUri().toString()));
        Path stdout = dir.resolve("chromium.out");
        Path stderr = dir.resolve("chromium.err");
        Process p = new ProcessBuilder(cmd).redirectOutput(stdout.toFile()).redirectError(stderr.toFile()).start();
        if (!p.waitFor(90, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            fail("Chromium did not finish in 90 s: " + cmd);
        }
        String out = Files.readString(stdout, StandardCharsets.UTF_8);
        if (p.exitValue() != 0) {
            fail("Chromium exited with " + p.exitValue() + ": " + cmd + "\n" + Files.readString(stderr, StandardCharsets.UTF_8));
        }
        return out;
    }

    private static boolean near(int rgb, int want) {
        return Math.abs(((rgb >> 16) & 0xff) - ((want >> 16) & 0xff)) < 12
                && Math.abs(((rgb >> 8) & 0xff) - ((want >> 8) & 0xff)) < 12
                && Math.abs((rgb & 0xff) - (want & 0xff)) < 12;
    }

    private static int count(String s, String part) {
        return s.split(Pattern.quote(part), -1).length - 1;
    }

    private static String head(String dom) {
        return dom.length() > 3000 ? dom.substring(0, 3000) + "..." : dom;
    }
}
