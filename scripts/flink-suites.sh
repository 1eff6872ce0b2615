#!/usr/bin/env bash
# Flink's own test suites with Ferry injected through the shim (flink-suites/pom.xml runs the
# classes of flink-table-planner_2.12-2.3.0-tests.jar; docs/flink-suite.md), then their report.
#   scripts/flink-suites.sh [fast] [MAVEN ARGS]
# One reactor builds the wrapper and shim jars (their own tests skipped) from build/native and the
# sources, and runs the suites against them: the full selection, or with `fast` the subset
# ./build.sh test runs. Other arguments pass through to Maven (e.g. -Dsuite.batched=...
# -Dsuite.unbatched=...). Needs build/native (./build.sh builds it). Fails when a test fails that
# flink-suites/expected-failures.tsv does not list or a test it lists passes, when the shim was not
# the factory the tests loaded, or when no test ran a native operator (scripts/flink-suites-report.sh).
. "$(dirname "$0")/common.sh"

# The fast subset ./build.sh test runs (a minute or two on 2 cores): the native-heavy suites of
# the full selection, the group aggregate harness tests, and (suite.restore, not overridden here)
# Flink's group aggregate restore tests.
FLINK_SUITES_FAST_BATCHED='org.apache.flink.table.planner.runtime.stream.table.AggregateITCase,org.apache.flink.table.planner.runtime.stream.table.RetractionITCase'
FLINK_SUITES_FAST_UNBATCHED='org.apache.flink.table.planner.runtime.harness.GroupAggregateHarnessTest'

args=()
if [ "${1:-}" = fast ]; then
  shift
  args=("-Dsuite.batched=$FLINK_SUITES_FAST_BATCHED" "-Dsuite.unbatched=$FLINK_SUITES_FAST_UNBATCHED")
fi
rm -rf "$ROOT/flink-suites/target/ferry-suite" "$ROOT/flink-suites/target/surefire-reports"
log "flink-suites: Flink 2.3.0's planner tests with Ferry injected ${args[*]:-(full selection)} $*"
start=$SECONDS
# -DskipTests skips the wrapper's and the shim's own tests; the suites' executions ignore it.
mvn_ -P flink-suites -pl flink-suites -am -DskipTests verify "${args[@]}" "$@" ||
  { echo "flink-suites: Maven failed" >&2; exit 1; }
"$ROOT/scripts/flink-suites-report.sh" "$ROOT/flink-suites/target/ferry-suite" "$((SECONDS - start))"
