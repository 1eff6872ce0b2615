#!/usr/bin/env bash
# The figures README.md and the top of docs/benchmarks.md publish, measured in one run at one
# commit on an otherwise idle machine: Nexmark q0-q22 on three sides (docs/nexmark.md), then the
# JVM harnesses whose earlier figures were not checked or not what they said (docs/benchmarks.md,
# "How to read the rest"): the group-aggregate operators with every pass checksummed, the SQL
# jobs into the checksum sink (single-phase, and two-phase under Nexmark's mini-batch
# configuration), the lookup join through the calibrated 1 ms proxy, the interval join on a quiet
# machine. Raw output goes to docs/data/published-COMMIT/ (or $1); the tables in the docs are
# transcribed from it. About 30 minutes on 2 idle cores. Expects ~/.m2 to hold the Maven
# dependencies (MVN_OFFLINE=1) or network access, and Debian's PostgreSQL (scripts/setup.sh lookup).
. "$(dirname "$0")/common.sh"

commit=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)
dir=${1:-$ROOT/docs/data/published-$commit}
mkdir -p "$dir"
start=$(date +%s)

# step NAME CMD...: runs CMD with stdout to NAME.md and stderr to NAME.log in $dir.
step() {
  local name=$1; shift
  log "$name: $*"
  "$@" > "$dir/$name.md" 2> "$dir/$name.log"
}

log "build: libferry.so, the jars"
"$ROOT/build.sh" jar
log "nexmark: ./build.sh nexmark --out $dir/nexmark"
NEXMARK_COMMAND="./build.sh nexmark" scripts/nexmark.sh --out "$dir/nexmark"
step operator scripts/bench-jvm.sh operator -keys 64,10K,1M
step sql scripts/bench-jvm.sh sql
step sql-2phase scripts/bench-jvm.sh sql-2phase
step lookup-pg scripts/bench-jvm.sh lookup-pg -rows 50K -reps 3
step interval-join scripts/bench-jvm.sh interval-join -variants heap,ferry
log "done in $(( $(date +%s) - start )) s: $dir"
