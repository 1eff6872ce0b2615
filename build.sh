#!/usr/bin/env bash
# Ferry build and test entry point.
#   ./build.sh            build build/libferry.so (and check its exports against include/ferry.h),
#                         then the JNI glue into build/native/linux-x86_64/ when a JDK is found
#   ./build.sh test       vet, Go tests (race on pure packages, cgocheck2 on capi), C harness
#                         under valgrind, short fuzz runs, the JVM wrapper's Maven tests
#   ./build.sh jar        build, then the wrapper jar (jni/target) and the classpath ./ferry uses
#   ./build.sh demo       build everything and run examples/nexmark-groupby.sql in compare mode
#   ./build.sh bench      Go benchmarks of the group aggregate (direct and through the C ABI)
#   ./build.sh perf       the perf harness (tests/perf): rows/s tables against a limit baseline
#   ./build.sh bench-jvm  Flink's group aggregate (heap, RocksDB) against Ferry's in one JVM:
#                         operators side by side, SQL jobs on a MiniCluster, Ferry's per-stage
#                         split; `bench-jvm jfr` profiles Ferry's operator with JFR
#   ./build.sh jni        build, then the JVM wrapper's tests (cd jni && mvn test)
set -euo pipefail
cd "$(dirname "$0")"
ROOT=$PWD
OUT=$ROOT/build
mkdir -p "$OUT"
export CGO_ENABLED=1

log() { printf '\n== %s\n' "$*"; }

# Public functions of the ABI: every prototype of include/ferry.h.
abi_functions() {
  grep -E '^[A-Za-z].*\bferry_[a-z0-9_]+\(' include/ferry.h | grep -oE '\bferry_[a-z0-9_]+\(' | tr -d '(' | sort -u
}

build_lib() {
  local out=$1; shift
  { echo "{ global:"; abi_functions | sed 's/.*/  &;/'; echo "local: *; };"; } > "$OUT/exports.map"
  go build -buildmode=c-shared -trimpath "$@" \
    -ldflags "-extldflags -Wl,--version-script=$OUT/exports.map" -o "$out" ./capi
  rm -f "${out%.so}.h" # the cgo-generated header is not the contract; include/ferry.h is
  local exported
  exported=$(nm -D --defined-only "$out" | awk '$2 ~ /^[TtWw]$/ {print $3}' | sort -u)
  if [ "$exported" != "$(abi_functions)" ]; then
    echo "exported symbols of $out differ from include/ferry.h:" >&2
    diff <(echo "$exported") <(abi_functions) >&2 || true
    exit 1
  fi
}

build_harness() {
  local lib=$1 exe=$2
  gcc -std=c11 -Wall -Wextra -Werror -O1 -g -Iinclude tests/c/*.c -o "$exe" \
    -L"$(dirname "$lib")" -l:"$(basename "$lib")" -Wl,-rpath,"$(dirname "$lib")"
}

# The JNI glue of jni/ (jni/src/main/c/ferry_jni.c) next to a copy of libferry.so, in the layout
# the jar carries as resources: build/native/linux-x86_64/{libferry.so,libferry_jni.so}. The glue
# finds libferry.so through its $ORIGIN rpath. Needs a JDK: JAVA_HOME, or javac on PATH.
build_jni_glue() {
  local java_home=${JAVA_HOME:-}
  if [ -z "$java_home" ] && command -v javac >/dev/null 2>&1; then
    java_home=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
  fi
  if [ -z "$java_home" ] || [ ! -f "$java_home/include/jni.h" ]; then
    echo "no JDK (JAVA_HOME or javac on PATH): skipping the JNI glue"
    return 0
  fi
  local dir=$OUT/native/linux-x86_64
  mkdir -p "$dir"
  # copy and rename: a JVM that still maps the old file keeps its inode
  cp "$OUT/libferry.so" "$dir/.libferry.so.tmp" && mv -f "$dir/.libferry.so.tmp" "$dir/libferry.so"
  gcc -std=c11 -fPIC -shared -O2 -Wall -Werror -fvisibility=hidden \
    -Iinclude -I"$java_home/include" -I"$java_home/include/linux" \
    jni/src/main/c/ferry_jni.c -o "$dir/libferry_jni.so" \
    -L"$OUT" -l:libferry.so -Wl,-rpath,'$ORIGIN'
  echo "build/native/linux-x86_64/libferry_jni.so (JDK $java_home)"
}

cmd_build() {
  log "build/libferry.so"
  build_lib "$OUT/libferry.so"
  echo "exports match include/ferry.h ($(abi_functions | wc -l) functions)"
  log "build/native/linux-x86_64 (JNI glue)"
  build_jni_glue
}

cmd_test() {
  cmd_build
  log "gofmt + go vet"
  unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
  if [ -n "$unformatted" ]; then echo "gofmt needed: $unformatted" >&2; exit 1; fi
  go vet ./...
  log "go test (race) on pure-Go packages"
  go test -race -count=1 ./engine/... ./agg/... ./ttl/... ./snapshot/...
  log "go test capi (GOEXPERIMENT=cgocheck2)"
  GOEXPERIMENT=cgocheck2 go test -count=1 ./capi/
  log "C harness against a cgocheck2 build, under valgrind"
  GOEXPERIMENT=cgocheck2 build_lib "$OUT/cgocheck2/libferry.so"
  build_harness "$OUT/cgocheck2/libferry.so" "$OUT/ferry_harness_cgocheck2"
  "$OUT/ferry_harness_cgocheck2"
  build_harness "$OUT/libferry.so" "$OUT/ferry_harness"
  # Go's async preemption signals confuse valgrind's stack tracking; they change nothing else.
  GODEBUG=asyncpreemptoff=1 valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect \
    --show-leak-kinds=definite,indirect --suppressions=tests/c/go-runtime.supp -q \
    "$OUT/ferry_harness"
  log "fuzz (short)"
  GOEXPERIMENT=cgocheck2 go test -run '^$' -fuzz FuzzProcess -fuzztime "${FUZZTIME:-20s}" ./capi/
  log "JVM wrapper: Maven test suite against Flink 2.3.0"
  mvn_ test
  log "all tests passed"
}

# Maven, online unless MVN_OFFLINE is set (for machines whose ~/.m2 already holds everything).
mvn_() {
  (cd jni && mvn -B -q $( [ -n "${MVN_OFFLINE:-}" ] && echo -o ) "$@")
}

cmd_jar() {
  cmd_build
  log "jni/target/ferry-flink-0.1.0.jar"
  mvn_ -DskipTests package
  mvn_ dependency:build-classpath -Dmdep.outputFile=target/classpath.txt -Dmdep.includeScope=compile
}

cmd_demo() {
  cmd_jar
  log "./ferry sql examples/nexmark-groupby.sql --mode compare"
  ./ferry sql examples/nexmark-groupby.sql --mode compare --max-rows 8
}

cmd_bench() {
  go test -run '^$' -bench . -benchmem ./agg/ ./capi/
}

# The perf harness (tests/perf): the group aggregate through Go directly and through the C ABI,
# against a limit baseline; markdown tables on stdout, build/perf.csv. Arguments pass through:
# ./build.sh perf -quick, -keys 64,1M -batch 4096 -mode go, -h for the rest.
cmd_perf() {
  cmd_build
  log "go run ./tests/perf $*"
  go run ./tests/perf "$@"
}

# The JVM side-by-side benchmark (jni/src/test/java/io/ferrystream/ferry/bench, run from the test
# classpath): markdown tables on stdout, progress on stderr. Arguments pass through: a section
# (all, operator, sql, split, ferry-only) and flags (-quick, -rows, -keys, -reps, -batch,
# -sql-rows, -sql-keys, -variants; -h lists them). `./build.sh bench-jvm jfr [SECTION] [flags]`
# runs Ferry's operator alone (ferry-only, the default), only the Ferry-on SQL jobs (sql-ferry) or
# only one-row-batch calls (one-row) under JFR (build/bench-jvm-SECTION.jfr) and prints the
# hottest methods.
cmd_bench_jvm() {
  cmd_build
  log "jni: test classes and the test classpath"
  mvn_ -DskipTests test-compile
  mvn_ dependency:build-classpath -Dmdep.outputFile=target/test-classpath.txt -Dmdep.includeScope=test
  local cp="$ROOT/jni/target/test-classes:$ROOT/jni/target/classes:$(cat "$ROOT/jni/target/test-classpath.txt")"
  # The JDK 17 module openings of ./ferry (Flink's and Arrow's); a heap that holds 1 M keys of
  # Flink heap state next to the input rows without GC thrashing, touched at startup: otherwise
  # the first use of each heap page (a 2 MiB clear with transparent huge pages) lands in whichever
  # variant happens to be running, slowing it several times over for seconds.
  local opts=(
    --add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.net=ALL-UNNAMED
    --add-opens=java.base/java.io=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED
    --add-opens=java.base/sun.nio.ch=ALL-UNNAMED --add-opens=java.base/java.lang.reflect=ALL-UNNAMED
    --add-opens=java.base/java.text=ALL-UNNAMED --add-opens=java.base/java.time=ALL-UNNAMED
    --add-opens=java.base/java.util=ALL-UNNAMED --add-opens=java.base/java.util.concurrent=ALL-UNNAMED
    --add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED
    --add-opens=java.base/java.util.concurrent.locks=ALL-UNNAMED
    --add-opens=java.base/java.nio=org.apache.arrow.memory.core,ALL-UNNAMED
    -Xms6g -Xmx6g -XX:+AlwaysPreTouch -Dlog4j2.level=WARN
  )
  if [ "${1:-}" = jfr ]; then
    shift
    local section=ferry-only
    case "${1:-}" in ferry-only|sql-ferry|one-row) section=$1; shift ;; esac
    local rec=$OUT/bench-jvm-$section.jfr
    log "JFR: bench-jvm $section $* ($rec)"
    java "${opts[@]}" -XX:StartFlightRecording=filename="$rec",settings=profile \
      -cp "$cp" io.ferrystream.ferry.bench.Bench "$section" "$@"
    case $section in
      ferry-only) jfr_top "$rec" 'FerryGroupAggregateOperator[.]processElement' ;; # the operator only
      one-row) jfr_top "$rec" 'NativeOperator[.]process' ;;
      *) jfr_top "$rec" ;;
    esac
    return
  fi
  log "bench-jvm $*"
  java "${opts[@]}" -cp "$cp" io.ferrystream.ferry.bench.Bench "$@"
}

# Hottest methods of a JFR recording: the top frame of every jdk.ExecutionSample (Java code), and
# of every jdk.NativeMethodSample (threads inside native code, e.g. in libferry.so). With a second
# argument, only samples whose stack has a frame matching that awk regex count, and the frames the
# matching one called (its callee in each sample) are counted too.
jfr_top() {
  local rec=$1 filter=${2:-} event
  for event in jdk.ExecutionSample jdk.NativeMethodSample; do
    jfr print --stack-depth 128 --events "$event" "$rec" > "$rec.$event.txt"
    log "$event: top frames${filter:+ (stacks through $filter)}"
    jfr_frames "$rec.$event.txt" "$filter" top
    if [ -n "$filter" ]; then
      log "$event: callees of $filter"
      jfr_frames "$rec.$event.txt" "$filter" callee
    fi
    rm -f "$rec.$event.txt"
  done
}

# jfr_frames FILE FILTER top|callee: counts the top frame, or the callee of the frame matching
# FILTER, of every stack of a `jfr print` listing (stacks printed innermost frame first).
jfr_frames() {
  awk -v filter="$2" -v what="$3" '
    /stackTrace = \[/ { in_stack = 1; depth = 0; key = ""; prev = "(top)"; next }
    in_stack && /^[ \t]*\]/ {
      in_stack = 0
      if (depth > 0 && (filter == "" || key != "")) { n[what == "top" ? top : key]++; total++ }
      next
    }
    in_stack {
      f = $0; sub(/^[ \t]+/, "", f); sub(/[ \t]+line:.*$/, "", f)
      if (++depth == 1) top = f
      if (filter != "" && key == "" && f ~ filter) key = prev
      prev = f
    }
    END { for (f in n) printf "%7d %5.1f%%  %s\n", n[f], 100 * n[f] / total, f; printf "%7d total\n", total }' "$1" |
    sort -rn | head -20
}

case "${1:-build}" in
  build) cmd_build ;;
  test) cmd_test ;;
  jar) cmd_jar ;;
  demo) cmd_demo ;;
  bench) cmd_bench ;;
  perf) shift; cmd_perf "$@" ;;
  bench-jvm) shift; cmd_bench_jvm "$@" ;;
  jni) cmd_build; mvn_ test ;;
  *) echo "usage: $0 [build|test|jar|demo|bench|perf|bench-jvm|jni]" >&2; exit 2 ;;
esac
