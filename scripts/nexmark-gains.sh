#!/usr/bin/env bash
# The Nexmark gains ferry qualify prints next to each query (docs/cli.md#nexmark-gains): derives
# them from a Nexmark run's output directory (runs.csv, summary.csv, summary.md, as
# scripts/nexmark.sh writes them) into the command's resource
# cli/src/main/resources/io/ferrystream/ferry/cli/nexmark-gains.csv, which carries the run's commit
# and start time and SOURCE, what run it is. Expects the ferry command built (./build.sh jar).
#   scripts/nexmark-gains.sh RUN_DIR SOURCE
# e.g. scripts/nexmark-gains.sh docs/data/published-abc1234/nexmark 'published run docs/data/published-abc1234'
[ $# -eq 2 ] && [ -d "$1" ] || { echo "usage: scripts/nexmark-gains.sh RUN_DIR SOURCE" >&2; exit 2; }
run=$(realpath "$1")
. "$(dirname "$0")/common.sh"

[ -f "$CLI_JAR" ] && [ -f "$ROOT/cli/target/classpath.txt" ] ||
  { echo "nexmark-gains: $CLI_JAR is missing; run ./build.sh jar first" >&2; exit 2; }
java -cp "$CLI_JAR:$(cat "$ROOT/cli/target/classpath.txt")" io.ferrystream.ferry.cli.NexmarkGains \
  "$run" "$ROOT/cli/src/main/resources/io/ferrystream/ferry/cli/nexmark-gains.csv" "$2"
