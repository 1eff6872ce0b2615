package io.ferrystream.ferry.cli;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The HTML form of a qualification report: one self-contained page (inline CSS, inline SVG charts,
 * a few lines of inline script to sort the query table; nothing fetched from the network). Two
 * charts: the stateful operators of each query, native and falling back, and the fallback reasons
 * by the number of queries they block; the query table with the Nexmark gains of each query's
 * native kinds. Element ids and classes ({@code #operators-chart}, {@code
 * rect.native}, {@code #reasons-chart}, {@code #queries}) are what the browser test checks.
 */
final class QualifyHtml {
    private QualifyHtml() {}

    static final String NATIVE_COLOR = "#1f9d55";
    static final String FALLBACK_COLOR = "#e8772e";

    static String render(Qualify.Report r) {
        StringBuilder b = new StringBuilder();
        b.append("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n")
                .append("<title>Ferry qualification report</title>\n<style>\n")
                .append("body{font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;margin:24px 32px;color:#1d2330;max-width:1280px}\n")
                .append("h1{font-size:24px;margin:0 0 8px}h2{font-size:18px;margin:28px 0 8px}\n")
                .append("p.headline{font-size:16px;font-weight:600}p.about{color:#555;font-size:13px}\n")
                .append(".cards{display:flex;gap:12px;margin:16px 0}.card{border:1px solid #dde;border-radius:8px;padding:10px 16px;min-width:120px}\n")
                .append(".card b{display:block;font-size:26px}.card span{color:#555;font-size:12px}\n")
                .append("table{border-collapse:collapse;font-size:13px;width:100%}th,td{border-bottom:1px solid #e4e6ef;padding:5px 8px;text-align:left;vertical-align:top}\n")
                .append("th{background:#f4f5fa;cursor:pointer;user-select:none}td.num,th.num{text-align:right}\n")
                .append("td.share{font-weight:600}.legend span{display:inline-block;width:12px;height:12px;margin:0 4px 0 12px;vertical-align:middle}\n")
                .append("svg text{font-family:inherit;font-size:12px;fill:#1d2330}code{font-size:12px}\n")
                .append("</style>\n</head>\n<body>\n");
        b.append("<h1>Ferry qualification report</h1>\n<p class=\"headline\" id=\"headline\">").append(esc(r.headline())).append("</p>\n");
        b.append("<div class=\"cards\">");
        card(b, "native-share", Qualify.Report.percent(r.nativeOperators, r.operators), "of stateful operators native");
        card(b, "queries-total", Integer.toString(r.queries.size()), "queries planned");
        card(b, "queries-full", Integer.toString(r.fullyNative), "fully native");
        card(b, "queries-partly", Integer.toString(r.partlyNative), "partly native");
        card(b, "queries-none", Integer.toString(r.notNative), "not native");
        b.append("</div>\n<p class=\"about\">").append(esc(r.about())).append("</p>\n<p class=\"about\" id=\"gains-about\">")
                .append(esc(r.gainsAbout())).append("</p>\n");

        b.append("<h2>Stateful operators per query</h2>\n<div class=\"legend\"><span style=\"background:").append(NATIVE_COLOR)
                .append("\"></span>would run natively<span style=\"background:").append(FALLBACK_COLOR)
                .append("\"></span>stays Flink's</div>\n");
        operatorsChart(b, r);
        b.append("<h2>Fallback reasons, by queries blocked</h2>\n");
        reasonsChart(b, r);

        b.append("<h2>Queries</h2>\n<table id=\"queries\">\n<thead><tr><th>query</th><th>stateful operators</th>")
                .append("<th class=\"num\">native</th><th class=\"num\">native share</th><th>falls back</th>")
                .append("<th>Nexmark gains (per core)</th></tr></thead>\n<tbody>\n");
        for (Qualify.Query q : r.queries) {
            b.append("<tr><td><code>").append(esc(Qualify.Report.title(q))).append("</code></td>");
            if (q.isFailed()) {
                b.append("<td>").append(q.failure())
                        .append("</td><td class=\"num\"></td><td class=\"num share\" data-v=\"-1\"></td><td>")
                        .append(esc(FerryCli.oneLine(q.error(), 300))).append("</td><td></td></tr>\n");
                continue;
            }
            int ops = q.operators();
            int nat = q.nativeOperators();
            List<String> rs = new ArrayList<>();
            q.reasons().forEach((reason, n) -> rs.add(n > 1 ? reason + " (×" + n + ")" : reason));
            b.append("<td>").append(esc(Qualify.Report.operatorList(q))).append("</td><td class=\"num\">").append(nat)
                    .append(" of ").append(ops).append("</td><td class=\"num share\" data-v=\"")
                    .append(ops == 0 ? -1 : Math.round(100.0 * nat / ops)).append("\">")
                    .append(esc(Qualify.Report.percent(nat, ops))).append("</td><td>").append(esc(String.join("; ", rs)))
                    .append("</td><td class=\"gains\">").append(esc(r.gainsOf(q))).append("</td></tr>\n");
        }
        b.append("</tbody>\n</table>\n");
        b.append("<script>\n")
                .append("(function(){var t=document.getElementById('queries');var dir={};\n")
                .append("t.querySelectorAll('th').forEach(function(th,i){th.title='sort';th.addEventListener('click',function(){\n")
                .append(" var rows=Array.from(t.tBodies[0].rows);dir[i]=!dir[i];\n")
                .append(" rows.sort(function(a,b){var x=a.cells[i],y=b.cells[i];\n")
                .append("  var u=x.dataset.v!==undefined?+x.dataset.v:x.textContent,v=y.dataset.v!==undefined?+y.dataset.v:y.textContent;\n")
                .append("  return (u<v?-1:u>v?1:0)*(dir[i]?1:-1);});\n")
                .append(" rows.forEach(function(row){t.tBodies[0].appendChild(row);});});});\n")
                .append("document.documentElement.setAttribute('data-rendered',\n")
                .append(" document.querySelectorAll('#operators-chart rect.native, #operators-chart rect.fallback').length+' bars, '+\n")
                .append(" t.tBodies[0].rows.length+' rows');})();\n")
                .append("</script>\n</body>\n</html>\n");
        return b.toString();
    }

    private static void card(StringBuilder b, String id, String value, String label) {
        b.append("<div class=\"card\" id=\"").append(id).append("\"><b>").append(esc(value)).append("</b><span>")
                .append(esc(label)).append("</span></div>");
    }

    /** One row per query: a bar per stateful operator count, the native part first. */
    private static void operatorsChart(StringBuilder b, Qualify.Report r) {
        int labelWidth = 330;
        int unit = 0;
        int max = 1;
        for (Qualify.Query q : r.queries) {
            max = Math.max(max, q.operators());
        }
        unit = Math.max(12, Math.min(90, 560 / max));
        int row = 20;
        int height = r.queries.size() * row + 30;
        int width = labelWidth + max * unit + 160;
        b.append("<svg id=\"operators-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"").append(width)
                .append("\" height=\"").append(height).append("\" role=\"img\" aria-label=\"stateful operators per query\">\n");
        int y = 10;
        for (Qualify.Query q : r.queries) {
            b.append("<text x=\"").append(labelWidth - 8).append("\" y=\"").append(y + 13)
                    .append("\" text-anchor=\"end\">").append(esc(FerryCli.oneLine(q.shortLabel(), 50))).append("<title>")
                    .append(esc(Qualify.Report.title(q))).append("</title></text>");
            int x = labelWidth;
            if (q.isFailed()) {
                b.append("<text x=\"").append(x).append("\" y=\"").append(y + 13).append("\" fill=\"#b00\">")
                        .append(q.failure()).append("</text>\n");
                y += row;
                continue;
            }
            int nat = q.nativeOperators();
            int fb = q.operators() - nat;
            for (int i = 0; i < nat; i++, x += unit) {
                b.append("<rect class=\"native\" x=\"").append(x).append("\" y=\"").append(y + 2).append("\" width=\"")
                        .append(unit - 2).append("\" height=\"").append(row - 5).append("\" rx=\"2\" fill=\"").append(NATIVE_COLOR)
                        .append("\"><title>native</title></rect>");
            }
            for (int i = 0; i < fb; i++, x += unit) {
                b.append("<rect class=\"fallback\" x=\"").append(x).append("\" y=\"").append(y + 2).append("\" width=\"")
                        .append(unit - 2).append("\" height=\"").append(row - 5).append("\" rx=\"2\" fill=\"").append(FALLBACK_COLOR)
                        .append("\"><title>").append(esc(String.join("; ", q.reasons().keySet()))).append("</title></rect>");
            }
            String note = q.operators() == 0 ? "no stateful operators" : Qualify.Report.percent(nat, q.operators()) + " native";
            b.append("<text x=\"").append(x + 6).append("\" y=\"").append(y + 13).append("\" fill=\"#555\">")
                    .append(esc(note)).append("</text>\n");
            y += row;
        }
        b.append("</svg>\n");
    }

    /** One bar per fallback reason, its length the number of queries it blocks. */
    private static void reasonsChart(StringBuilder b, Qualify.Report r) {
        if (r.reasons.isEmpty()) {
            b.append("<p id=\"reasons-chart\">None: every stateful operator would run natively.</p>\n");
            return;
        }
        int labelWidth = 520;
        int max = r.reasons.get(0).queries().size();
        double unit = 420.0 / Math.max(1, max);
        int row = 22;
        b.append("<svg id=\"reasons-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"").append(labelWidth + 620)
                .append("\" height=\"").append(r.reasons.size() * row + 20).append("\" role=\"img\" aria-label=\"fallback reasons\">\n");
        int y = 8;
        for (Qualify.Reason reason : r.reasons) {
            int n = reason.queries().size();
            b.append("<text x=\"").append(labelWidth - 8).append("\" y=\"").append(y + 14).append("\" text-anchor=\"end\">")
                    .append(esc(FerryCli.oneLine(reason.text(), 84))).append("<title>").append(esc(reason.text()))
                    .append("</title></text><rect class=\"reason\" x=\"").append(labelWidth).append("\" y=\"").append(y + 3)
                    .append("\" width=\"").append(String.format(Locale.ROOT, "%.1f", Math.max(2, n * unit)))
                    .append("\" height=\"").append(row - 6).append("\" rx=\"2\" fill=\"").append(FALLBACK_COLOR)
                    .append("\"></rect><text x=\"").append(String.format(Locale.ROOT, "%.1f", labelWidth + Math.max(2, n * unit) + 6))
                    .append("\" y=\"").append(y + 14).append("\">").append(n).append(n == 1 ? " query" : " queries")
                    .append(reason.nodes() != n ? ", " + reason.nodes() + " operators" : "").append("</text>\n");
            y += row;
        }
        b.append("</svg>\n");
    }

    static String esc(String s) {
        StringBuilder b = new StringBuilder(s.length());
        for (char c : s.toCharArray()) {
            switch (c) {
                case '<' -> b.append("&lt;");
                case '>' -> b.append("&gt;");
                case '&' -> b.append("&amp;");
                case '"' -> b.append("&quot;");
                default -> b.append(c);
            }
        }
        return b.toString();
    }
}
