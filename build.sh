#!/usr/bin/env bash
# Ferry build and test entry point: each command calls the scripts in scripts/.
#   ./build.sh            build build/libferry.so (and check its exports against include/ferry.h),
#                         then the JNI glue into build/native/linux-x86_64/ when a JDK is found
#   ./build.sh test       installs what is missing (scripts/setup.sh test), then vet, Go tests
#                         (race on pure packages, cgocheck2 on capi), C harness under valgrind,
#                         short fuzz runs, the Maven tests of the JVM wrapper, the ferry command
#                         (its HTML report in headless Chromium among them) and the planner shim,
#                         the Nexmark smoke (q0-q22 on three sides over 5,000 events, results
#                         compared), the fast subset of `flink-suites`
#   ./build.sh jar        build, then the wrapper jar (jni/target), the ferry command with the
#                         classpath ./ferry uses (cli/target) and the planner shim
#                         (shim/target/ferry-flink-shim.jar, docs/install.md)
#   ./build.sh dist       build, then what a Flink 2.3.0 distribution needs (dist/target/ferry-VERSION
#                         and its .tar.gz): lib/ with the planner shim and the one wrapper jar (Arrow
#                         relocated inside), install.sh FLINK_HOME and uninstall.sh FLINK_HOME
#   ./build.sh cluster-test  dist, then a real Flink 2.3.0 standalone cluster from Maven Central
#                         (JobManager and TaskManager processes, Ferry installed by install.sh, SQL
#                         through the SQL Client): native and stock results equal, a TaskManager
#                         killed mid-job and restored, uninstall.sh (scripts/cluster-test.sh); a
#                         2-minute soak (scripts/cluster-soak.sh)
#   ./build.sh demo       installs what is missing (scripts/setup.sh demo), builds everything, then
#                         ./ferry sql examples/nexmark-groupby.sql --mode compare (parity) and
#                         ./ferry bench examples/demo-throughput.sql (throughput, about a minute)
#   ./build.sh demo-lookup  a lookup join against a real PostgreSQL it starts (scripts/demo-lookup.sql),
#                         Ferry off and on compared
#   ./build.sh nexmark [QUERIES] [--events N] [--parallelism P] [...]
#                         Nexmark q0-q22 end to end (docs/nexmark.md): per query stock Flink on the
#                         heap backend, on RocksDB and Ferry, interleaved after a warm-up each, every
#                         final table checksummed and compared; events/s, per core, native share,
#                         checkpoints, state; build/nexmark/ (summary.md, runs.csv, nexmark.png)
#   ./build.sh bench      Go benchmarks of the group aggregate (direct and through the C ABI)
#   ./build.sh perf       the perf harness (tests/perf): rows/s tables against a limit baseline
#   ./build.sh bench-jvm  Flink's group aggregate (heap, RocksDB) against Ferry's in one JVM:
#                         operators side by side, SQL jobs on a MiniCluster, Ferry's per-stage
#                         split; `bench-jvm interval-join` the row-time interval join likewise,
#                         `bench-jvm window-join` the tumbling-window join,
#                         `bench-jvm dedup` the deduplication;
#                         `bench-jvm jfr` profiles Ferry's operator with JFR
#   ./build.sh jni        build, then the JVM wrapper's tests (mvn -pl jni test)
#   ./build.sh flink-suites  Flink 2.3.0's own stream aggregate test suites, unmodified, with Ferry
#                         injected by the planner shim (flink-suites/, docs/flink-suite.md);
#                         prints tests run/passed/failed/skipped and how many ran Ferry natively;
#                         `flink-suites fast` runs the subset ./build.sh test runs
# The Go and C steps are scripts/native.sh; Maven runs the reactor of pom.xml (MVN_OFFLINE=1 for
# an offline ~/.m2); the project version is pom.xml's <revision> (scripts/version.sh).
. "$(dirname "$0")/scripts/common.sh"

cmd_build() {
  scripts/native.sh build
}

cmd_test() {
  scripts/setup.sh test
  scripts/native.sh test
  log "JVM wrapper, ferry command and planner shim: Maven tests against Flink 2.3.0, then ${WRAPPER_JAR#"$ROOT/"}, ${CLI_JAR#"$ROOT/"} and ${SHIM_JAR#"$ROOT/"}"
  mvn_ package
  cmd_flink_suites fast
  log "all tests passed"
}

# The wrapper jar, the ferry command with the classpath ./ferry uses (cli/target/classpath.txt), and
# the planner shim (docs/install.md), from the reactor without their tests.
cmd_jar() {
  cmd_build
  log "${WRAPPER_JAR#"$ROOT/"}, ${CLI_JAR#"$ROOT/"}, ${SHIM_JAR#"$ROOT/"}"
  mvn_ -DskipTests package
}

# dist/target/ferry-VERSION/ and its tarball (docs/install.md).
cmd_dist() {
  cmd_jar
  rm -rf "$DIST_DIR"
  mkdir -p "$DIST_DIR/lib"
  cp "$SHIM_JAR" "$DIST_DIR/lib/00-ferry-flink-shim.jar"
  cp "$DIST_JAR" "$DIST_DIR/lib/"
  cp dist/src/main/sh/install.sh dist/src/main/sh/uninstall.sh "$DIST_DIR/"
  echo "$FERRY_VERSION" > "$DIST_DIR/VERSION"
  tar -C "$(dirname "$DIST_DIR")" -czf "$DIST_DIR.tar.gz" "$(basename "$DIST_DIR")"
  log "${DIST_DIR#"$ROOT/"}.tar.gz: ./install.sh FLINK_HOME installs it, ./uninstall.sh FLINK_HOME removes it"
}

# Parity (every changelog row equal, every GROUP BY native), then throughput side by side.
cmd_demo() {
  scripts/setup.sh demo
  cmd_jar
  log "parity: ./ferry sql examples/nexmark-groupby.sql --mode compare --require-native"
  ./ferry sql examples/nexmark-groupby.sql --mode compare --require-native --max-rows 5
  log "throughput: ./ferry bench examples/demo-throughput.sql (4 M rows, 100 K keys; about a minute on 2 cores)"
  ./ferry bench examples/demo-throughput.sql --runs 3
}

# A lookup join against a real PostgreSQL (scripts/postgres.sh starts one, removed at the end):
# ./ferry sql scripts/demo-lookup.sql --mode compare --require-native with the server filled in.
cmd_demo_lookup() {
  scripts/setup.sh lookup
  cmd_jar
  local dir
  dir=$(mktemp -d)
  trap 'rm -rf "'"$dir"'"' EXIT
  FERRY_PG_OWNER=$$ scripts/postgres.sh start > "$dir/env"
  set -a; . "$dir/env"; set +a
  trap 'scripts/postgres.sh stop "$FERRY_PG_DIR" >/dev/null; rm -rf "'"$dir"'"' EXIT
  log "PostgreSQL on $PGHOST:$PGPORT: table products (1,000 rows)"
  psql -q -v ON_ERROR_STOP=1 -h "$PGHOST" -p "$PGPORT" -U "$PGUSER" -d "$PGDATABASE" <<'SQL'
CREATE TABLE products (id BIGINT PRIMARY KEY, name VARCHAR(40), price NUMERIC(10, 2), category VARCHAR(20), added TIMESTAMP(3));
INSERT INTO products SELECT i, 'product ' || i, (i * 37 % 5000) / 100.0,
  (ARRAY['books', 'toys', 'garden', 'music'])[1 + i % 4], TIMESTAMP '2026-01-01 00:00:00' + i * INTERVAL '1 hour'
  FROM generate_series(1, 1000) AS i;
SQL
  sed -e "s|@URL@|jdbc:postgresql://$PGHOST:$PGPORT/$PGDATABASE|" -e "s|@USER@|$PGUSER|" -e "s|@PASSWORD@|$PGPASSWORD|" \
    scripts/demo-lookup.sql > "$dir/lookup.sql"
  log "parity: ./ferry sql scripts/demo-lookup.sql --mode compare --require-native"
  ./ferry sql "$dir/lookup.sql" --mode compare --require-native --max-rows 5
}

# The nexmark module's jar and class path (and the wrapper jar it needs), then the runner.
cmd_nexmark() {
  scripts/setup.sh nexmark
  cmd_build
  log "nexmark/target: the runner, the generator and the checksum sink"
  mvn_ -pl nexmark -am -DskipTests package
  log "nexmark $*"
  NEXMARK_COMMAND="./build.sh nexmark" scripts/nexmark.sh "$@"
}

cmd_jni() {
  cmd_build
  mvn_ -pl jni test
}

cmd_bench_jvm() {
  cmd_build
  scripts/bench-jvm.sh "$@"
}

# `flink-suites` builds libferry.so, then the jars and the full selection in one reactor;
# `flink-suites fast` builds libferry.so only when a jar is missing (the jars themselves are always
# brought up to date by the reactor). Other arguments pass through (scripts/flink-suites.sh).
cmd_flink_suites() {
  if [ "${1:-}" != fast ] || [ ! -f "$WRAPPER_JAR" ] || [ ! -f "$SHIM_JAR" ]; then
    cmd_build
  fi
  scripts/flink-suites.sh "$@"
}

case "${1:-build}" in
  build) cmd_build ;;
  test) cmd_test ;;
  jar) cmd_jar ;;
  dist) cmd_dist ;;
  cluster-test) cmd_dist; scripts/cluster-test.sh; scripts/cluster-soak.sh 2 "$OUT/cluster-soak.csv" ;;
  demo) cmd_demo ;;
  demo-lookup) cmd_demo_lookup ;;
  nexmark) shift; cmd_nexmark "$@" ;;
  bench) scripts/native.sh bench ;;
  perf) shift; scripts/native.sh perf "$@" ;;
  bench-jvm) shift; cmd_bench_jvm "$@" ;;
  jni) cmd_jni ;;
  flink-suites) shift; cmd_flink_suites "$@" ;;
  *) echo "usage: $0 [build|test|jar|dist|cluster-test|demo|demo-lookup|nexmark|bench|perf|bench-jvm|jni|flink-suites]" >&2; exit 2 ;;
esac
