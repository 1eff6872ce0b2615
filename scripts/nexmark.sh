#!/usr/bin/env bash
# Nexmark q0-q22 end to end: stock Flink on the heap backend, stock Flink on RocksDB and Ferry, in
# one JVM on a MiniCluster (or on a standalone cluster with --cluster), every job's final table
# checksummed (docs/nexmark.md). Expects the nexmark jar and its class path (./build.sh nexmark
# builds them first). Arguments pass to the runner (io.ferrystream.ferry.nexmark.runner.NexmarkRunner):
#   scripts/nexmark.sh [QUERIES] [--events N] [--parallelism P] [--rounds N] [--warmup-events N]
#                      [--rate N] [--seed N] [--checkpoint-interval 10s] [--sides heap,rocksdb,ferry]
#                      [--out DIR] [--long] [--flink-home HOME] [-D key=value]...
# --flink-home HOME runs the jobs on the standalone cluster of HOME (scripts/cluster.sh assemble and
# start, Ferry installed by install.sh): the runner runs on HOME's lib/ (the planner and Ferry the
# cluster runs) with the nexmark jar as the jobs' user jar, reads the REST address from HOME's
# configuration and the TaskManagers' CPU from the processes HOME/run names (docs/nexmark.md).
# Progress goes to stderr and OUT/run.log, the summary to stdout and OUT/summary.md (OUT: --out,
# default build/nexmark), every job to OUT/runs.csv; then the plot, OUT/nexmark.png
# (scripts/nexmark-plot.py, matplotlib in build/plotenv). FERRY_NEXMARK_HEAP sets the JVM's heap
# (default 4g); NEXMARK_PLOT=0 skips the plot.
. "$(dirname "$0")/common.sh"

jar=$ROOT/nexmark/target/ferry-nexmark-$FERRY_VERSION.jar
[ -f "$jar" ] && [ -f "$ROOT/nexmark/target/classpath.txt" ] ||
  { echo "nexmark: $jar is missing; run ./build.sh nexmark (or ./build.sh jar) first" >&2; exit 2; }

out=build/nexmark
home=
args=()
while [ $# -gt 0 ]; do
  case $1 in
    --flink-home) home=$(realpath "${2:?--flink-home needs a directory}"); shift 2 ;;
    --out) out=${2:-$out}; args+=("$1" "${2:-}"); shift $(($# > 1 ? 2 : 1)) ;;
    *) args+=("$1"); shift ;;
  esac
done
mkdir -p "$out"
classpath="$jar:$(cat "$ROOT/nexmark/target/classpath.txt")"
if [ -n "$home" ]; then
  [ -f "$home/lib/ferry-flink-$FERRY_VERSION.jar" ] ||
    { echo "nexmark: $home has no Ferry in lib/: run dist/target/ferry-$FERRY_VERSION/install.sh $home" >&2; exit 2; }
  pids=$(cat "$home"/run/taskmanager-*.pid 2>/dev/null | paste -sd, -)
  [ -n "$pids" ] || { echo "nexmark: no TaskManager runs in $home (scripts/cluster.sh start $home)" >&2; exit 2; }
  classpath="$jar:$(ls "$home"/lib/*.jar | sort | paste -sd: -)"
  args+=(--cluster "$("$ROOT/scripts/cluster.sh" rest-url "$home")" --jar "$jar" --tm-pids "$pids")
fi

heap=${FERRY_NEXMARK_HEAP:-4g}
# Flink's JDK 17 module openings (JDK17_OPENS); a heap touched at startup, so the first use
# of each page does not land in whichever side happens to run.
opts=(
  "${JDK17_OPENS[@]}"
  "-Xms$heap" "-Xmx$heap" -XX:+AlwaysPreTouch
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dorg.slf4j.simpleLogger.logFile=System.err
  -Dorg.slf4j.simpleLogger.log.org.apache.flink=error
  -Dferry.commit="$(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)"
  -Dnexmark.command="${NEXMARK_COMMAND:-scripts/nexmark.sh} $*"
)
status=0
java "${opts[@]}" -cp "$classpath" \
  io.ferrystream.ferry.nexmark.runner.NexmarkRunner "${args[@]}" 2> >(tee "$out/run.log" >&2) || status=$?
# The plot: a failure to draw it is reported, and leaves the run's exit status as it was.
plot() {
  local venv=$ROOT/build/plotenv
  [ -x "$venv/bin/python" ] || { python3 -m venv "$venv" && "$venv/bin/pip" install -q matplotlib; } || return 1
  "$venv/bin/python" "$ROOT/scripts/nexmark-plot.py" "$out/summary.csv" "$out/nexmark.png" \
    "$(sed -n 's/^Commit `\([^`]*\)`.*/\1/p' "$out/summary.md")" && echo "nexmark: plot in $out/nexmark.png" >&2
}
if [ "$status" -le 1 ] && [ "${NEXMARK_PLOT:-1}" != 0 ] && [ -f "$out/summary.csv" ]; then
  plot || echo "nexmark: the plot could not be drawn (python3 -m venv and pip install matplotlib into build/plotenv)" >&2
fi
exit "$status"
