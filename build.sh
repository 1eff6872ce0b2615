#!/usr/bin/env bash
# Ferry build and test entry point.
#   ./build.sh            build build/libferry.so (and check its exports against include/ferry.h),
#                         then the JNI glue into build/native/linux-x86_64/ when a JDK is found;
#                         and the test build (tag ferrytest: test hooks, test operator kinds) into
#                         build/test/libferry.so and build/test/native/linux-x86_64/
#   ./build.sh test       vet, Go tests (race on pure packages, cgocheck2 on capi with the ferrytest
#                         tag), C harness under valgrind (against the ferrytest library), short
#                         fuzz runs (FuzzProcess, FuzzRestore), the JVM wrapper's Maven tests, the
#                         planner shim's tests, the fast subset of `flink-suites`
#   ./build.sh jar        build, then the wrapper jar (jni/target) and the classpath ./ferry uses,
#                         and the planner shim (shim/target/ferry-flink-shim.jar, docs/install.md)
#   ./build.sh demo       build everything and run examples/nexmark-groupby.sql in compare mode
#   ./build.sh bench      Go benchmarks of the group aggregate (direct and through the C ABI)
#   ./build.sh perf       the perf harness (tests/perf): rows/s tables against a limit baseline
#   ./build.sh bench-jvm  Flink's group aggregate (heap, RocksDB) against Ferry's in one JVM:
#                         operators side by side, SQL jobs on a MiniCluster, Ferry's per-stage
#                         split; `bench-jvm jfr` profiles Ferry's operator with JFR
#   ./build.sh jni        build, then the JVM wrapper's tests (cd jni && mvn test)
#   ./build.sh flink-suites  Flink 2.3.0's own stream aggregate test suites, unmodified, with Ferry
#                         injected by the planner shim (flink-suites/, docs/flink-suite.md);
#                         prints tests run/passed/failed/skipped and how many ran Ferry natively;
#                         `flink-suites fast` runs the subset ./build.sh test runs
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

# build_lib OUT [go build flags...]: the c-shared library; its exports must be exactly the
# functions of include/ferry.h (test builds too: their test support is unexported).
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

# build_jni_glue LIB DIR: the JNI glue of jni/ (jni/src/main/c/ferry_jni.c) next to a copy of
# LIB in DIR, in the layout the jar carries as resources: DIR/linux-x86_64/{libferry.so,
# libferry_jni.so}. The glue finds libferry.so through its $ORIGIN rpath. Needs a JDK: JAVA_HOME,
# or javac on PATH.
build_jni_glue() {
  local lib=$1 root=$2
  local java_home=${JAVA_HOME:-}
  if [ -z "$java_home" ] && command -v javac >/dev/null 2>&1; then
    java_home=$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")
  fi
  if [ -z "$java_home" ] || [ ! -f "$java_home/include/jni.h" ]; then
    echo "no JDK (JAVA_HOME or javac on PATH): skipping the JNI glue"
    return 0
  fi
  local dir=$root/linux-x86_64
  mkdir -p "$dir"
  # copy and rename: a JVM that still maps the old file keeps its inode
  cp "$lib" "$dir/.libferry.so.tmp" && mv -f "$dir/.libferry.so.tmp" "$dir/libferry.so"
  gcc -std=c11 -fPIC -shared -O2 -Wall -Werror -fvisibility=hidden \
    -Iinclude -I"$java_home/include" -I"$java_home/include/linux" \
    jni/src/main/c/ferry_jni.c -o "$dir/libferry_jni.so" \
    -L"$dir" -l:libferry.so -Wl,-rpath,'$ORIGIN'
  echo "${dir#"$ROOT"/}/libferry_jni.so (JDK $java_home)"
}

cmd_build() {
  log "build/libferry.so"
  build_lib "$OUT/libferry.so"
  echo "exports match include/ferry.h ($(abi_functions | wc -l) functions)"
  log "build/native/linux-x86_64 (JNI glue)"
  build_jni_glue "$OUT/libferry.so" "$OUT/native"
  log "build/test/libferry.so (tag ferrytest) and build/test/native/linux-x86_64"
  mkdir -p "$OUT/test"
  build_lib "$OUT/test/libferry.so" -tags ferrytest
  build_jni_glue "$OUT/test/libferry.so" "$OUT/test/native"
}

cmd_test() {
  cmd_build
  log "gofmt + go vet"
  unformatted=$(gofmt -l $(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))
  if [ -n "$unformatted" ]; then echo "gofmt needed: $unformatted" >&2; exit 1; fi
  go vet ./...
  go vet -tags ferrytest ./capi/ ./engine/...
  log "go test (race) on pure-Go packages"
  go test -race -count=1 ./engine/... ./agg/... ./session/... ./snapshot/...
  log "go test capi (production build; then tag ferrytest, GOEXPERIMENT=cgocheck2)"
  go test -count=1 ./capi/
  GOEXPERIMENT=cgocheck2 go test -tags ferrytest -count=1 ./capi/
  log "C harness against a cgocheck2 ferrytest build, then under valgrind"
  GOEXPERIMENT=cgocheck2 build_lib "$OUT/cgocheck2/libferry.so" -tags ferrytest
  build_harness "$OUT/cgocheck2/libferry.so" "$OUT/ferry_harness_cgocheck2"
  "$OUT/ferry_harness_cgocheck2"
  build_harness "$OUT/test/libferry.so" "$OUT/ferry_harness"
  # Go's async preemption signals confuse valgrind's stack tracking; they change nothing else.
  GODEBUG=asyncpreemptoff=1 valgrind --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite,indirect \
    --show-leak-kinds=definite,indirect --suppressions=tests/c/go-runtime.supp -q \
    "$OUT/ferry_harness"
  log "fuzz (short)"
  local fuzzlog="$PWD/build/fuzz-stderr.log" target
  for target in FuzzProcess FuzzRestore; do
    rm -f "$fuzzlog"
    if ! FERRY_FUZZ_STDERR="$fuzzlog" GOEXPERIMENT=cgocheck2 go test -tags ferrytest -run '^$' \
        -fuzz "^$target\$" -fuzztime "${FUZZTIME:-20s}" ./capi/; then
      echo "== fuzz workers' standard error (the crash trace, if a worker died):" >&2
      tail -n 200 "$fuzzlog" >&2 || true
      echo "== new failing inputs:" >&2
      git ls-files --others --exclude-standard capi/testdata/fuzz | xargs -r tail -n +1 >&2
      return 1
    fi
  done
  log "JVM wrapper: Maven test suite against Flink 2.3.0"
  mvn_ test
  log "jni/target/ferry-flink-0.1.0.jar"
  mvn_ -DskipTests package
  build_shim
  cmd_flink_suites fast
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
  build_shim -DskipTests
}

# Maven in another project directory of this repository (shim, flink-suites), online unless
# MVN_OFFLINE is set, like mvn_.
mvn_at() {
  local dir=$1; shift
  (cd "$ROOT/$dir" && mvn -B -q $( [ -n "${MVN_OFFLINE:-}" ] && echo -o ) "$@")
}

# The planner shim (shim/target/ferry-flink-shim.jar, docs/install.md): one class that shadows
# Flink 2.3.0's DefaultPlannerFactory and installs Ferry into every streaming planner. Its tests
# need jni/target/ferry-flink-0.1.0.jar; pass -DskipTests to build the jar alone.
build_shim() {
  log "shim/target/ferry-flink-shim.jar"
  mvn_at shim package "$@"
}

# Flink's own test suites with Ferry injected through the shim (flink-suites/pom.xml runs the
# classes of flink-table-planner_2.12-2.3.0-tests.jar; docs/flink-suite.md). `./build.sh
# flink-suites` runs the full selection; `./build.sh flink-suites fast` the subset ./build.sh test
# runs, with the jars it has just built (built here only when missing). Other arguments pass
# through to Maven (e.g. -Dsuite.batched=... -Dsuite.unbatched=...). Fails when a test fails that
# flink-suites/expected-failures.tsv does not list or a test it lists passes, when the shim was not
# the factory the tests loaded, or when no test ran a native operator.
cmd_flink_suites() {
  local args=()
  if [ "${1:-}" = fast ]; then
    shift
    args=("-Dsuite.batched=$FLINK_SUITES_FAST_BATCHED" "-Dsuite.unbatched=$FLINK_SUITES_FAST_UNBATCHED")
    [ -f jni/target/ferry-flink-0.1.0.jar ] && [ -f shim/target/ferry-flink-shim.jar ] || cmd_jar
  else
    cmd_jar
  fi
  rm -rf "$ROOT/flink-suites/target/ferry-suite" "$ROOT/flink-suites/target/surefire-reports"
  log "flink-suites: Flink 2.3.0's planner tests with Ferry injected ${args[*]:-(full selection)} $*"
  local start=$SECONDS
  mvn_at flink-suites test "${args[@]}" "$@" || { echo "flink-suites: Maven failed" >&2; exit 1; }
  flink_suites_report "$ROOT/flink-suites/target/ferry-suite" "$((SECONDS - start))"
}

# The fast subset ./build.sh test runs (a minute or two on 2 cores): the native-heavy suites of
# the full selection, and the group aggregate harness tests.
FLINK_SUITES_FAST_BATCHED='org.apache.flink.table.planner.runtime.stream.table.AggregateITCase,org.apache.flink.table.planner.runtime.stream.table.RetractionITCase'
FLINK_SUITES_FAST_UNBATCHED='org.apache.flink.table.planner.runtime.harness.GroupAggregateHarnessTest'

# Prints the counts of every execution's report (written by flink-suites' FerrySuiteListener)
# and their totals, the fallback-reason histogram, and checks them: see cmd_flink_suites.
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
  echo "native-plan: GROUP BY nodes planned native (EXPLAIN included); native-ops: native operators"
  echo "opened (one per parallel subtask); fallback-nodes: GROUP BY nodes that stayed Flink's, by reason:"
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

cmd_demo() {
  cmd_jar
  log "./ferry sql examples/nexmark-groupby.sql --mode compare"
  ./ferry sql examples/nexmark-groupby.sql --mode compare --max-rows 8
}

cmd_bench() {
  go test -run '^$' -bench . -benchmem ./agg/
  go test -tags ferrytest -run '^$' -bench . -benchmem ./capi/
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
      ferry-only) jfr_top "$rec" 'OneInputNativeOperator[.]processElement' ;; # the operator only
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
  flink-suites) shift; cmd_flink_suites "$@" ;;
  *) echo "usage: $0 [build|test|jar|demo|bench|perf|bench-jvm|jni|flink-suites]" >&2; exit 2 ;;
esac
