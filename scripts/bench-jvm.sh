#!/usr/bin/env bash
# The JVM side-by-side benchmark (jni/src/test/java/io/ferrystream/ferry/bench, run from the test
# classpath): markdown tables on stdout, progress on stderr. Expects build/native (./build.sh
# bench-jvm builds it first). Arguments pass through: a section (all, operator, sql, sql-2phase, exchange, split, call-cost,
# interval-join, window-join, dedup: the deduplication's last row on row time (q18) and first row on processing time, top-n: q19's Top-10 by price with the rank and the top 1, ferry-only, state-size: bytes per key of the GROUP BY state, checkpoint: its checkpoint and restore durations, lookup-pg: its -rows are probe rows, a tenth of them through the delaying proxy) and flags (-quick, -rows, -keys, -reps, -batch, -sql-rows, -sql-keys, -variants; -h
# lists them). `scripts/bench-jvm.sh jfr [SECTION] [flags]` runs Ferry's operator alone
# (ferry-only, the default), only the Ferry-on SQL jobs (sql-ferry), the two-phase SQL jobs of both
# sides (sql-2phase, also printing the mini-batch assigner's share), only one-row-batch calls
# (one-row) or only Ferry's interval or window join (interval-join-ferry, window-join-ferry) under JFR (build/bench-jvm-SECTION.jfr) and prints the hottest methods
# (scripts/jfr-top.sh).
. "$(dirname "$0")/common.sh"

log "jni: test classes and the test classpath"
mvn_ -pl jni -DskipTests test-compile dependency:build-classpath \
  -Dmdep.outputFile="$ROOT/jni/target/test-classpath.txt" -Dmdep.includeScope=test \
  -DexcludeArtifactIds=slf4j-simple
cp="$ROOT/jni/target/test-classes:$ROOT/jni/target/classes:$(cat "$ROOT/jni/target/test-classpath.txt")"

# Flink's JDK 17 module openings (JDK17_OPENS); a heap that holds 1 M keys of
# Flink heap state next to the input rows without GC thrashing, touched at startup: otherwise
# the first use of each heap page (a 2 MiB clear with transparent huge pages) lands in whichever
# variant happens to be running, slowing it several times over for seconds.
opts=(
  "${JDK17_OPENS[@]}"
  -Xms6g -Xmx6g -XX:+AlwaysPreTouch -Dlog4j2.level=WARN
  -Dferry.commit="$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)"
)

if [ "${1:-}" = jfr ]; then
  shift
  section=ferry-only
  case "${1:-}" in ferry-only|sql-ferry|sql-2phase|one-row|call-cost|interval-join-ferry|window-join-ferry) section=$1; shift ;; esac
  rec=$OUT/bench-jvm-$section.jfr
  log "JFR: bench-jvm $section $* ($rec)"
  java "${opts[@]}" -XX:StartFlightRecording=filename="$rec",settings=profile \
    -cp "$cp" io.ferrystream.ferry.bench.Bench "$section" "$@"
  case $section in
    ferry-only) "$ROOT/scripts/jfr-top.sh" "$rec" 'OneInputNativeOperator[.]processElement' ;; # the operator only
    one-row|call-cost) "$ROOT/scripts/jfr-top.sh" "$rec" 'NativeOperator[.]process' ;;
    interval-join-ferry|window-join-ferry) "$ROOT/scripts/jfr-top.sh" "$rec" 'IntervalJoinBench[$]Driver[.]run' ;;
    sql-2phase) # every sample, then those through the mini-batch assigner (its share of the jobs)
      "$ROOT/scripts/jfr-top.sh" "$rec"
      "$ROOT/scripts/jfr-top.sh" "$rec" 'MiniBatchAssignerOperator[.]processElement' ;;
    *) "$ROOT/scripts/jfr-top.sh" "$rec" ;;
  esac
  exit 0
fi
log "bench-jvm $*"
java "${opts[@]}" -cp "$cp" io.ferrystream.ferry.bench.Bench "$@"
