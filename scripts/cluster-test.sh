#!/usr/bin/env bash
# Ferry in a real Flink 2.3.0 standalone cluster (scripts/cluster.sh): a JobManager and a
# TaskManager in their own JVMs, Ferry installed by the distribution's installer, SQL submitted by
# Flink's SQL Client. Run by ./build.sh cluster-test after ./build.sh dist. Checks, in order:
#   0. install.sh's edit of conf/config.yaml in each form, undone by uninstall.sh;
#   1. install.sh swaps the planner loader for the planner jar and puts Ferry's two jars in lib/;
#   2. a GROUP BY and a two-phase mini-batch GROUP BY run natively (EXPLAIN says ferry=[native],
#      the TaskManager's log names the opened native operators), and give the results of the same
#      statements with ferry.enabled = false: the GROUP BY's changelog row for row (each key's rows
#      in order), the mini-batch one's final table (its batches end on timers, so its changelog
#      differs from run to run, Flink's own too);
#   3. kill -9 of the TaskManager while a checkpointed GROUP BY runs: a new TaskManager starts, the
#      job restores from its last checkpoint, and the SQL Client's exactly-once result equals the
#      crash-free run;
#   4. uninstall.sh restores the distribution byte for byte.
# Everything runs under a temporary directory, removed at the end unless the test fails.
. "$(dirname "$0")/common.sh"

fail() { echo "cluster test FAILED: $*" >&2; echo "logs: $work/flink/log" >&2; exit 1; }

[ -f "$DIST_DIR/install.sh" ] || fail "$DIST_DIR is missing; run ./build.sh dist first"
work=$(mktemp -d "${TMPDIR:-/tmp}/ferry-cluster.XXXXXX")
home=$work/flink
trap 'scripts/cluster.sh stop "$home" >/dev/null 2>&1 || true' EXIT

log "0. install.sh and uninstall.sh on conf/config.yaml's forms (distributions of empty jars)"
# NAME CONFIG EXPECTED: EXPECTED is the config.yaml install.sh leaves, or "refused"
installer_case() {
  local fake=$work/fake-$1
  mkdir -p "$fake"/{lib,opt,conf}
  touch "$fake/lib/flink-runtime-2.3.0.jar" "$fake/lib/flink-table-planner-loader-2.3.0.jar" "$fake/opt/flink-table-planner_2.12-2.3.0.jar"
  printf '%b' "$2" > "$fake/conf/config.yaml"
  cp -a "$fake" "$fake.before"
  if ! "$DIST_DIR/install.sh" "$fake" > /dev/null 2> "$fake.err"; then
    [ "$3" = refused ] && grep -q "nested 'env:'" "$fake.err" && diff -r "$fake.before" "$fake" > /dev/null ||
      fail "install.sh on the $1 config: $(cat "$fake.err")"
    echo "$1: refused, nothing changed"
    return
  fi
  [ "$(cat "$fake/conf/config.yaml")" = "$(printf '%b' "$3")" ] || fail "install.sh on the $1 config left: $(cat "$fake/conf/config.yaml")"
  "$DIST_DIR/uninstall.sh" "$fake" > /dev/null
  diff -r "$fake.before" "$fake" > /dev/null || fail "uninstall.sh did not restore the $1 distribution"
  echo "$1: installed and removed"
}
NIO=--add-opens=java.base/java.nio=ALL-UNNAMED
installer_case flat 'a: 1\nenv.java.opts.all: -Dx=1\nb: 2\n' "a: 1\nenv.java.opts.all: -Dx=1 $NIO\nb: 2"
installer_case absent 'a: 1\n' "a: 1\nenv.java.opts.all: $NIO"
installer_case nested-with-nio "env:\n  java:\n    opts:\n      all: $NIO\n" "env:\n  java:\n    opts:\n      all: $NIO"
installer_case nested-without-nio 'env:\n  java:\n    opts:\n      all: -Dx=1\n' refused

scripts/cluster.sh assemble "$home"
cp -a "$home" "$work/pristine"

log "1. $DIST_DIR/install.sh $home"
"$DIST_DIR/install.sh" "$home"
[ -f "$home/opt/flink-table-planner-loader-2.3.0.jar" ] && [ -f "$home/lib/flink-table-planner_2.12-2.3.0.jar" ] ||
  fail "the planner loader was not swapped for the planner jar"
[ "$(ls "$home/lib" | sort | head -n 1)" = 00-ferry-flink-shim.jar ] || fail "the planner shim does not come first in lib/"
if unzip -l "$home/lib/ferry-flink-$FERRY_VERSION.jar" | awk '{print $4}' | grep '^org/apache/arrow/.*\.class$' | grep -v -E '^org/apache/arrow/c/(jni/|ArrayStreamExporter)' | grep -q .; then
  fail "the wrapper jar carries Arrow classes outside io.ferrystream.ferry.shaded"
fi
ls "$home/lib" | grep -q -i arrow && fail "an Arrow jar is in lib/: Ferry's Arrow must come from its own jar"

scripts/cluster.sh start "$home" 1

# The SQL Client's changelog rows of a tableau result, as printed ("| +I | ... |")
rows() { grep -E '^\| [-+][IUD] \|' "$1" | tr -s ' ' || true; }

# sql NAME FERRY SETTINGS QUERY: runs QUERY (and its EXPLAIN) through the SQL Client with
# ferry.enabled = FERRY and SETTINGS (SET statements); output in $work/NAME.out
sql() {
  local name=$1 ferry=$2 settings=$3 query=$4
  cat > "$work/$name.sql" <<EOF
SET 'sql-client.execution.result-mode' = 'TABLEAU';
SET 'ferry.enabled' = '$ferry';
$settings
CREATE TABLE bids (id BIGINT, price BIGINT) WITH ('connector' = 'datagen', 'scan.parallelism' = '1',
  'number-of-rows' = '$ROWS', 'rows-per-second' = '$RATE',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '$ROWS',
  'fields.price.kind' = 'sequence', 'fields.price.start' = '1', 'fields.price.end' = '$ROWS');
EXPLAIN $query;
$query;
EOF
  scripts/cluster.sh sql "$home" "$work/$name.sql" > "$work/$name.out" 2>&1 || fail "the SQL Client failed on $name: $(tail -n 20 "$work/$name.out")"
  grep -q 'Received a total of' "$work/$name.out" || fail "$name printed no result: $(grep -m 3 -A 3 ERROR "$work/$name.out")"
}

# Each key's last +I/+U row without its kind: the result table a changelog materializes to
final_rows() {
  awk -F '|' '$2 ~ /[+][IU]/ { row = $0; sub(/^\| [-+][IUD] /, "", row); last[$3] = row } END { for (k in last) print last[k] }' "$1" | sort
}

# compare NAME SETTINGS QUERY KIND OPENS [final]: QUERY with Ferry off, then on; the changelogs
# (with "final", the result tables they materialize to) must be equal and the run with Ferry on
# must have opened OPENS more native operators of KIND
compare() {
  local name=$1 settings=$2 query=$3 kind=$4 opens=$5 mode=${6:-changelog} before after
  sql "$name-stock" false "$settings" "$query"
  grep -q 'ferry=\[native\]' "$work/$name-stock.out" && fail "$name: ferry.enabled = false still planned natively"
  before=$(grep -c "Ferry operator $kind opened" "$home"/log/taskmanager-*.log || true)
  sql "$name-ferry" true "$settings" "$query"
  grep -q 'ferry=\[native\]' "$work/$name-ferry.out" || fail "$name: EXPLAIN shows no native node"
  after=$(grep -c "Ferry operator $kind opened" "$home"/log/taskmanager-*.log || true)
  [ $((after - before)) -eq "$opens" ] || fail "$name: $((after - before)) native $kind operators opened, expected $opens"
  rows "$work/$name-stock.out" > "$work/$name-stock.rows"
  rows "$work/$name-ferry.out" > "$work/$name-ferry.rows"
  [ -s "$work/$name-stock.rows" ] || fail "$name: no rows"
  for side in stock ferry; do
    if [ "$mode" = final ]; then
      final_rows "$work/$name-$side.rows"
    else
      # two aggregate subtasks interleave their rows at the client: each key's changelog, in order
      sort -s -t '|' -k 3,3 "$work/$name-$side.rows"
    fi > "$work/$name-$side.compared"
  done
  cmp -s "$work/$name-stock.compared" "$work/$name-ferry.compared" ||
    fail "$name: the ${mode}s differ: $(diff "$work/$name-stock.compared" "$work/$name-ferry.compared" | head -n 10)"
  echo "$name: $(wc -l < "$work/$name-ferry.compared") $mode rows, equal with Ferry off and on; $opens native $kind subtasks opened"
}

GROUP_BY="SELECT id % 100 AS k, COUNT(*) AS n, SUM(price) AS s, MAX(price) AS m FROM bids GROUP BY id % 100"
ROWS=20000 RATE=1000000
log "2. GROUP BY, Ferry off and on"
compare group-by "" "$GROUP_BY" group_aggregate 2
log "2. two-phase mini-batch GROUP BY, Ferry off and on"
compare two-phase "SET 'table.exec.mini-batch.enabled' = 'true';
SET 'table.exec.mini-batch.allow-latency' = '100 ms';
SET 'table.exec.mini-batch.size' = '500';
SET 'table.optimizer.agg-phase-strategy' = 'TWO_PHASE';" "$GROUP_BY" global_group_aggregate 2 final

log "3. kill -9 of the TaskManager during a checkpointed GROUP BY"
ROWS=30000 RATE=3000
CHECKPOINTED="SET 'execution.checkpointing.interval' = '1 s';
SET 'restart-strategy.type' = 'fixed-delay';
SET 'restart-strategy.fixed-delay.attempts' = '3';
SET 'restart-strategy.fixed-delay.delay' = '1 s';"
sql crash-free true "$CHECKPOINTED" "$GROUP_BY"
sql crash true "$CHECKPOINTED" "$GROUP_BY" &
client=$!
rest=$(sed -n '/^rest:/,/^[a-z]/s/^  port: //p' "$home/conf/config.yaml")
running_job() { curl -sf "http://localhost:$rest/jobs" | grep -o '"id":"[^"]*","status":"RUNNING"' | head -n 1 | cut -d'"' -f4; }
# the checkpoints job $1 completed so far
completed() {
  [ -n "$1" ] && curl -sf "http://localhost:$rest/jobs/$1/checkpoints" | grep -o '"completed":[0-9]*' | head -n 1 | cut -d: -f2
}
job=""
for _ in $(seq 60); do
  job=$(running_job || true)
  [ "$(completed "$job" || echo 0)" -ge 2 ] 2>/dev/null && break
  sleep 0.5
done
[ "$(completed "$job" || echo 0)" -ge 2 ] 2>/dev/null || fail "the job completed no two checkpoints"
victim=$(cat "$home/run/taskmanager-1.pid")
kill -9 "$victim"
echo "killed TaskManager $victim after $(completed "$job") checkpoints of job $job"
scripts/cluster.sh taskmanager "$home" > /dev/null
wait "$client" || fail "the SQL Client failed after the crash"
restored=$(curl -sf "http://localhost:$rest/jobs/$job/checkpoints" | grep -o '"restored":{"id":[0-9]*' | grep -o '[0-9]*$' || true)
[ -n "$restored" ] || fail "job $job restored from no checkpoint"
rows "$work/crash-free.out" | sort -s -t '|' -k 3,3 > "$work/crash-free.sorted"
rows "$work/crash.out" | sort -s -t '|' -k 3,3 > "$work/crash.sorted"
cmp -s "$work/crash-free.sorted" "$work/crash.sorted" ||
  fail "the changelog after the crash differs: $(diff "$work/crash-free.sorted" "$work/crash.sorted" | head -n 10)"
grep -q "Ferry operator group_aggregate opened" "$home/log/taskmanager-2.log" || fail "the new TaskManager ran no native operator"
echo "crash: restored from checkpoint $restored; $(wc -l < "$work/crash.sorted") changelog rows, equal to the crash-free run"

log "4. uninstall.sh $home"
scripts/cluster.sh stop "$home"
"$DIST_DIR/uninstall.sh" "$home"
diff -r -x log -x run -x checkpoints -x savepoints "$work/pristine" "$home" || fail "uninstall.sh left the distribution changed"
echo "the distribution is as before install.sh"
rm -rf "$work"
log "cluster test passed"
