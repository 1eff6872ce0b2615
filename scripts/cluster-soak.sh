#!/usr/bin/env bash
# A soak of Ferry's GROUP BY in a real standalone cluster (scripts/cluster.sh, Ferry installed by
# its installer): an unbounded datagen source at a steady rate, keys drawn at random from a fixed
# key space, so the state stops growing once every key has come (about 30 s), checkpoints every 10 s, for MINUTES minutes. Every 10 s it
# samples the TaskManager process's RSS (/proc), its JVM heap in use, the GROUP BY's
# ferryStateKeys, ferryStateBytes, ferryMemoryBudgetBytes, ferryGoMemoryBytes and
# ferryGoMemoryLimitBytes gauges and the TaskManager's managed memory in use (REST), and
# checkpoints completed and failed.
#   scripts/cluster-soak.sh MINUTES CSV   run after ./build.sh dist; writes the samples to CSV
# Fails when a checkpoint fails (after the first sample), when the state's keys or bytes change once every key exists,
# when the RSS of the second half of the run grows by more than 5 % of its first sample there (no
# leak per batch or per checkpoint), when the operator has no managed-memory budget, Flink's
# managed memory in use does not count it, its state outgrows it or the Go runtime's memory
# passes its soft limit (the budget plus 64 MiB: docs/state.md#memory). docs/install.md#the-soak; ./build.sh cluster-test runs a
# 2-minute form, docs/data/cluster-soak.csv holds a 30-minute one.
CALLER_DIR=$PWD
. "$(dirname "$0")/common.sh"

minutes=${1:?usage: $0 MINUTES CSV}
csv=${2:?usage: $0 MINUTES CSV}
case $csv in /*) ;; *) csv=$CALLER_DIR/$csv ;; esac
RATE=20000
KEYS=50000

fail() { echo "soak FAILED: $*" >&2; echo "logs: $home/log" >&2; exit 1; }

[ -f "$DIST_DIR/install.sh" ] || fail "$DIST_DIR is missing; run ./build.sh dist first"
work=$(mktemp -d "${TMPDIR:-/tmp}/ferry-soak.XXXXXX")
home=$work/flink
trap 'scripts/cluster.sh stop "$home" >/dev/null 2>&1 || true' EXIT
scripts/cluster.sh assemble "$home"
"$DIST_DIR/install.sh" "$home" > /dev/null
scripts/cluster.sh start "$home" 1
rest=http://localhost:$(sed -n '/^rest:/,/^[a-z]/s/^  port: //p' "$home/conf/config.yaml")

cat > "$work/soak.sql" <<EOF
SET 'execution.checkpointing.interval' = '10 s';
SET 'parallelism.default' = '1';
CREATE TABLE bids (id BIGINT, price BIGINT) WITH ('connector' = 'datagen', 'rows-per-second' = '$RATE',
  'fields.id.min' = '0', 'fields.id.max' = '$((KEYS - 1))', 'fields.price.min' = '1', 'fields.price.max' = '1000000');
CREATE TABLE totals (k BIGINT, n BIGINT, s BIGINT, m BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO totals SELECT id AS k, COUNT(*) AS n, SUM(price) AS s, MAX(price) AS m FROM bids GROUP BY id;
EOF
scripts/cluster.sh sql "$home" "$work/soak.sql" > "$work/soak.out" 2>&1 || fail "the SQL Client failed: $(tail -n 20 "$work/soak.out")"
job=$(grep -o 'Job ID: [0-9a-f]*' "$work/soak.out" | cut -d' ' -f3 || true)
[ -n "$job" ] || fail "no job submitted: $(grep -m 3 -A 3 ERROR "$work/soak.out")"

tm_pid=$(cat "$home/run/taskmanager-1.pid")
tm_id=$(curl -sfg "$rest/taskmanagers" | grep -o '"id":"[^"]*"' | head -n 1 | cut -d'"' -f4 || true)
[ -n "$tm_id" ] || fail "no TaskManager registered"
# the GROUP BY's vertex, and the ids of its Ferry gauges ("0.<operator>.ferryStateBytes")
vertex=""
for _ in $(seq 60); do
  vertex=$(curl -sfg "$rest/jobs/$job" | grep -oE '"id":"[0-9a-f]{32}"[^}]*"name":"[^"]*GroupAggregate' |
    head -n 1 | cut -d'"' -f4 || true)
  [ -n "$vertex" ] && curl -sfg "$rest/jobs/$job/vertices/$vertex/metrics" | grep -q ferryStateBytes && break
  sleep 1
done
[ -n "$vertex" ] || fail "no GroupAggregate vertex in job $job"
metric_id() { curl -sfg "$rest/jobs/$job/vertices/$vertex/metrics" | grep -o "\"id\":\"[^\"]*\\.$1\"" | head -n 1 | cut -d'"' -f4 || true; }
keys_id=$(metric_id ferryStateKeys)
bytes_id=$(metric_id ferryStateBytes)
budget_id=$(metric_id ferryMemoryBudgetBytes)
go_id=$(metric_id ferryGoMemoryBytes)
limit_id=$(metric_id ferryGoMemoryLimitBytes)
[ -n "$keys_id" ] && [ -n "$bytes_id" ] && [ -n "$budget_id" ] && [ -n "$go_id" ] && [ -n "$limit_id" ] ||
  fail "the GROUP BY reports no Ferry gauges: is it native?"
value() { grep -o '"value":"[^"]*"' | head -n 1 | cut -d'"' -f4 || true; }

echo "seconds,rss_bytes,heap_used_bytes,state_keys,state_bytes,checkpoints_completed,checkpoints_failed,budget_bytes,managed_used_bytes,go_bytes,go_limit_bytes" > "$csv"
start=$(date +%s)
end=$((start + minutes * 60))
log "soak: job $job for $minutes min at $RATE rows/s over $KEYS keys; samples every 10 s into $csv"
while [ "$(date +%s)" -lt "$end" ]; do
  sleep 10
  [ "$(curl -sfg "$rest/jobs/$job" | grep -c '"state":"RUNNING"' || true)" -gt 0 ] || fail "job $job is not RUNNING"
  rss=$(($(awk '/^VmRSS:/ { print $2 }' "/proc/$tm_pid/status") * 1024))
  heap=$(curl -sfg "$rest/taskmanagers/$tm_id/metrics?get=Status.JVM.Memory.Heap.Used" | value)
  keys=$(curl -sfg "$rest/jobs/$job/vertices/$vertex/metrics?get=$keys_id" | value)
  bytes=$(curl -sfg "$rest/jobs/$job/vertices/$vertex/metrics?get=$bytes_id" | value)
  counts=$(curl -sfg "$rest/jobs/$job/checkpoints" | grep -o '"counts":{[^}]*}' || true)
  done_=$(echo "$counts" | grep -o '"completed":[0-9]*' | cut -d: -f2)
  failed=$(echo "$counts" | grep -o '"failed":[0-9]*' | cut -d: -f2)
  budget=$(curl -sfg "$rest/jobs/$job/vertices/$vertex/metrics?get=$budget_id" | value)
  managed=$(curl -sfg "$rest/taskmanagers/$tm_id/metrics?get=Status.Flink.Memory.Managed.Used" | value)
  go=$(curl -sfg "$rest/jobs/$job/vertices/$vertex/metrics?get=$go_id" | value)
  limit=$(curl -sfg "$rest/jobs/$job/vertices/$vertex/metrics?get=$limit_id" | value)
  echo "$(($(date +%s) - start)),$rss,$heap,$keys,$bytes,$done_,$failed,$budget,$managed,$go,$limit" | tee -a "$csv"
  [ "${budget:-0}" -gt 0 ] && [ "${managed:-0}" -ge "$budget" ] ||
    fail "the operator's budget ($budget bytes) is not in Flink's managed memory in use ($managed bytes)"
  [ "${bytes:-0}" -le "$budget" ] || fail "the state ($bytes bytes) is over its budget ($budget bytes): the soak sizes its keys to fit"
  [ "$limit" = $((budget + 64 * 1024 * 1024)) ] || fail "Go's soft limit is $limit bytes, not the budget $budget plus 64 MiB"
  [ "${go:-0}" -le "$limit" ] || fail "the Go runtime holds $go bytes, over its soft limit of $limit"
  # a checkpoint triggered before every task runs fails in Flink's own jobs too: count from the first sample
  failed_before=${failed_before:-$failed}
  [ "$failed" = "$failed_before" ] || fail "a checkpoint failed: $counts"
done

# Once every key exists (the first sample with all of them), the state must not change, and the
# RSS of the second half must stay within 5 % of its first sample.
awk -F, -v keys=$KEYS '
  NR == 1 { next }
  { n++; t[n] = $1; rss[n] = $2; k[n] = $4; b[n] = $5 }
  END {
    for (i = 1; i <= n && k[i] != keys; i++) {}
    if (i > n) { print "the state never held all " keys " keys"; exit 1 }
    for (j = i; j <= n; j++) if (k[j] != keys || b[j] != b[i]) { print "state changed at " t[j] " s: " k[j] " keys, " b[j] " bytes (was " b[i] ")"; exit 1 }
    h = int(n / 2) + 1
    for (j = h; j <= n; j++) if (rss[j] > rss[h] * 1.05) { print "RSS grew from " rss[h] " at " t[h] " s to " rss[j] " at " t[j] " s"; exit 1 }
    printf "state flat from %d s: %d keys, %d bytes; RSS in the second half %d..%d bytes\n", t[i], keys, b[i], rss[h], rss[n]
  }' "$csv" || fail "see $csv"
scripts/cluster.sh stop "$home"
rm -rf "$work"
log "soak passed"
