#!/usr/bin/env bash
# scripts/flink-suites-report.sh DIR SECONDS: prints the counts of every execution's report in DIR
# (written by flink-suites' FerrySuiteListener) and their totals, the fallback-reason histogram,
# and checks them: exits 1 when a test failed that flink-suites/expected-failures.tsv does not
# list or a listed test passed, when the shim was not the factory the tests loaded, or when no
# test ran a native operator. SECONDS is the run's duration, for the heading.
. "$(dirname "$0")/common.sh"

flink_suites_report() {
  local dir=$1 secs=$2 expected=$ROOT/flink-suites/expected-failures.tsv status=0 label
  local labels=()
  for label in "$dir"/*/summary.properties; do
    [ -f "$label" ] && labels+=("$(basename "$(dirname "$label")")")
  done
  if [ ${#labels[@]} -eq 0 ]; then
    echo "flink-suites: no report in $dir (did the test JVM crash? see flink-suites/target/surefire-reports)" >&2
    exit 1
  fi
  log "flink-suites report (${secs}s)"
  for label in "${labels[@]}"; do
    awk -F= -v label="$label" '
      { v[$1] = substr($0, length($1) + 2) }
      END { print label, v["tests.run"], v["tests.passed"], v["tests.failed"], v["tests.skipped"],
              v["tests.native.opened"], v["tests.passed.native.opened"], v["native.planned"],
              v["native.opened"], v["fallback.nodes"] }' "$dir/$label/summary.properties"
  done > "$dir/counts.txt"
  awk '
    function row(a, b, c, d, e, f, g, h, i, j) { printf "%-10s %5s %6s %6s %7s %12s %13s %11s %10s %14s\n", a, b, c, d, e, f, g, h, i, j }
    BEGIN { row("execution", "run", "passed", "failed", "skipped", "native-tests", "native-passed",
                "native-plan", "native-ops", "fallback-nodes") }
    { row($1, $2, $3, $4, $5, $6, $7, $8, $9, $10); for (i = 2; i <= 10; i++) t[i] += $i }
    END { row("total", t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10]) }' "$dir/counts.txt"
  echo "native-tests: tests that ran at least one native operator (native-passed: and passed);"
  echo "native-plan: nodes of native kinds (GROUP BY, interval, window and lookup joins, deduplication) planned native (EXPLAIN included); native-ops: native operators"
  echo "opened (one per parallel subtask); fallback-nodes: candidate nodes that stayed Flink's, by reason:"
  cat "$dir"/*/fallbacks.tsv | awk -F'\t' '$1 != "nodes" { n[$2] += $1 } END { for (r in n) printf "%6d  %s\n", n[r], r }' |
    sort -k1,1nr -k2 | tee "$dir/fallback-histogram.txt"

  for label in "${labels[@]}"; do
    local props=$dir/$label/summary.properties
    if ! grep -qx 'shim.loaded=true' "$props" || ! grep -q '^shim.location=.*ferry-flink-shim\.jar$' "$props"; then
      echo "flink-suites[$label]: the shim's DefaultPlannerFactory was not the one loaded:" >&2
      grep '^shim\.' "$props" >&2
      status=1
    elif [ "$(sed -n 's/^shim.planners=//p' "$props")" -le 0 ]; then
      echo "flink-suites[$label]: the shim created no planner" >&2
      status=1
    fi
  done
  if [ "$(awk '{ s += $6 } END { print s + 0 }' "$dir/counts.txt")" -le 0 ]; then
    echo "flink-suites: no test ran a native operator: a pass would prove nothing" >&2
    status=1
  fi

  # Each test's outcome against flink-suites/expected-failures.tsv (execution, test pattern with *,
  # category, reason; tab separated): a failure it does not list, and a listed test that passed,
  # both fail the run, so the list (and docs/flink-suite.md) stays exact.
  local verdicts
  verdicts=$(for label in "${labels[@]}"; do
    awk -F'\t' -v label="$label" '
      FNR == NR { if ($0 !~ /^#/ && NF >= 4 && ($1 == label || $1 == "*")) {
                    re = $2; gsub(/[][().+?^$|{}\\]/, "\\\\&", re); gsub(/\*/, ".*", re); pat[++n] = "^" re "$" }
                  next }
      FNR == 1 { next }
      { listed = 0; for (i = 1; i <= n; i++) if ($4 ~ pat[i]) { listed = 1; break }
        failed = $1 == "FAILED" || $1 == "CONTAINER_FAILED"
        if (failed && listed) print "KNOWN"
        else if (failed) printf "UNEXPECTED FAILURE [%s] %s (native %s/%s)\n    %s\n", label, $4, $2, $3, $6
        else if (listed && $1 == "PASSED") printf "UNEXPECTED PASS [%s] %s: listed in expected-failures.tsv\n", label, $4 }
    ' "$expected" "$dir/$label/tests.tsv"
  done)
  echo
  echo "failures listed in flink-suites/expected-failures.tsv (docs/flink-suite.md): $(grep -c '^KNOWN$' <<<"$verdicts")"
  if grep -v '^KNOWN$' <<<"$verdicts" | grep -q .; then
    grep -v '^KNOWN$' <<<"$verdicts" >&2
    status=1
  fi
  echo "per-test detail: flink-suites/target/ferry-suite/<execution>/tests.tsv"
  [ "$status" -eq 0 ] || { echo "flink-suites: FAILED" >&2; exit 1; }
}

[ $# -eq 2 ] || { echo "usage: $0 DIR SECONDS" >&2; exit 2; }
flink_suites_report "$1" "$2"
