#!/usr/bin/env bash
# Every figure of the group aggregate's performance goals (docs/benchmarks.md, "Against the
# goals") in one run at one commit, each by the harness that measured it before, then profiles of
# the paths that miss a goal and the rows/s plot. Raw output goes to docs/data/goals-COMMIT/
# (or $1); the table in benchmarks.md is transcribed from it. About 12 minutes on 2 cores (profiles included); run it
# on an otherwise idle machine. Expects ~/.m2 to hold the Maven dependencies (MVN_OFFLINE=1) or
# network access.
. "$(dirname "$0")/common.sh"

commit=$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)
dir=${1:-$ROOT/docs/data/goals-$commit}
mkdir -p "$dir"
scripts/native.sh build
start=$(date +%s)

# step NAME CMD...: runs CMD with stdout to NAME.md (or .txt) and stderr to NAME.log in $dir.
step() {
  local name=$1; shift
  log "$name: $*"
  "$@" > "$dir/$name" 2> "$dir/${name%.*}.log"
}

go build -o "$OUT/perf" ./tests/perf
# Go kernel, Go path and through the C ABI, with the limit baseline (first optimization round's table).
step kernel.md "$OUT/perf" -keys 64,10K,1M,10M -batch 1,1024,4096 -mode go,cabi -csv "$dir/kernel.csv"
# Snapshot and restore of 1 M keys through session.Session (MB/s of the uncompressed payload).
step snapshot.txt go test -run '^$' -bench 'BenchmarkSnapshot' -benchtime 5x ./session/

# The JVM side by side: operators (heap, RocksDB, Ferry), SQL q17 and q4, the per-stage split.
step jvm-all.md scripts/bench-jvm.sh all -keys 64,10K,100K,1M -csv "$dir/group-aggregate-rows-per-second.csv"
step call-cost.md scripts/bench-jvm.sh call-cost -keys 10K -reps 10
step state-size.md scripts/bench-jvm.sh state-size -keys 1M
step checkpoint.md scripts/bench-jvm.sh checkpoint -keys 1M -reps 5
log "measured in $(( $(date +%s) - start )) s"

# Profiles, after the timed runs (a profiler slows what it watches): the Go kernel at 64 and 1 M
# keys, the restore of 1 M keys (its calls only), Ferry's operator under JFR at 10 K keys and the
# Ferry-on SQL jobs under JFR.
"$OUT/perf" -keys 64,1M -batch 4096 -mode go -time 5s -reps 1 -max-rows 1000000000 -csv "" \
  -cpuprofile "$dir/kernel" > /dev/null 2>&1
for k in 64 1000000; do
  go tool pprof -top -nodecount=30 "$OUT/perf" "$dir/kernel-go-k$k-b4096.pprof" > "$dir/kernel-profile-k$k.txt" 2>/dev/null
done
go test -c -o "$OUT/session.test" ./session
"$OUT/session.test" -test.run '^$' -test.bench 'BenchmarkSnapshot/restore' -test.benchtime 20x \
  -test.cpuprofile "$dir/restore.pprof" > /dev/null
go tool pprof -top -nodecount=30 -focus 'Session\)\.Restore' "$OUT/session.test" "$dir/restore.pprof" \
  > "$dir/restore-profile.txt" 2>/dev/null
rm -f "$dir"/*.pprof
step jfr-10K.txt scripts/bench-jvm.sh jfr ferry-only -keys 10K -rows 4M -reps 8
step jfr-sql-ferry.txt scripts/bench-jvm.sh jfr sql-ferry
rm -f "$OUT"/bench-jvm-*.jfr

cp "$dir/group-aggregate-rows-per-second.csv" "$ROOT/docs/data/group-aggregate-rows-per-second.csv"
tests/perf/plot.sh
log "done in $(( $(date +%s) - start )) s: $dir"
