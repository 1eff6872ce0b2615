#!/usr/bin/env bash
# Installs Ferry into a Flink 2.3.0 distribution: ./install.sh FLINK_HOME
#   1. swaps the planner loader (lib/) for the planner jar (opt/), as Flink documents for jars that
#      must reach the planner;
#   2. copies lib/00-ferry-flink-shim.jar (sorts first, so its planner factory wins) and
#      lib/ferry-flink-VERSION.jar (Ferry with its Arrow Java relocated inside) into lib/;
#   3. adds --add-opens=java.base/java.nio=ALL-UNNAMED to env.java.opts.all in conf/config.yaml.
# Every step is recorded in FLINK_HOME/.ferry-install, which ./uninstall.sh FLINK_HOME replays
# backwards to restore the distribution as it was. Run it on every machine of the cluster, then
# restart the cluster. Reference: docs/install.md.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
FLINK_VERSION=2.3.0
OPEN_NIO=--add-opens=java.base/java.nio=ALL-UNNAMED

die() { echo "ferry install: $*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: $0 FLINK_HOME"
home=$(cd "$1" 2>/dev/null && pwd) || die "$1 is not a directory"
[ -d "$home/lib" ] && [ -d "$home/conf" ] || die "$home has no lib/ and conf/: not a Flink distribution"
manifest=$home/.ferry-install
[ ! -e "$manifest" ] || die "Ferry is already installed in $home ($manifest); run uninstall.sh first"
[ -f "$home/lib/flink-dist-$FLINK_VERSION.jar" ] || [ -f "$home/lib/flink-runtime-$FLINK_VERSION.jar" ] ||
  die "$home/lib holds neither flink-dist-$FLINK_VERSION.jar nor flink-runtime-$FLINK_VERSION.jar: Ferry supports Flink $FLINK_VERSION only"
config=$home/conf/config.yaml
[ -f "$config" ] || die "$config is missing (Flink 2.x reads conf/config.yaml)"

loader=lib/flink-table-planner-loader-$FLINK_VERSION.jar
planner=flink-table-planner_2.12-$FLINK_VERSION.jar
if [ -f "$home/lib/$planner" ]; then
  planner_step=""   # the planner jar is already in lib/: nothing to swap
elif [ -f "$home/$loader" ] && [ -f "$home/opt/$planner" ]; then
  planner_step=swap
else
  die "found neither lib/$planner nor $loader with opt/$planner in $home"
fi

# The JVM option. Flink 2.3.0's own conf/config.yaml already opens java.nio (env: java: opts: all:);
# otherwise a flat 'env.java.opts.all:' line is extended, a missing one appended. The nested form
# without the option is not edited: the user adds it there.
if grep -v '^[[:space:]]*#' "$config" | grep -q -- "$OPEN_NIO"; then
  opts_step=""
elif grep -q '^env\.java\.opts\.all:' "$config"; then
  opts_line=$(grep -n '^env\.java\.opts\.all:' "$config" | tail -n 1)   # Flink reads the last one
  opts_step=extend
elif grep -q '^env:' "$config"; then
  die "$config sets options under a nested 'env:' key; add '$OPEN_NIO' to env.java.opts.all there, or write it as one 'env.java.opts.all: ...' line, then run again"
else
  opts_step=add
fi

: > "$manifest"
record() { printf '%s\n' "$*" >> "$manifest"; }
record "# Ferry $(cat "$HERE/VERSION") installed $(date -u +%Y-%m-%dT%H:%M:%SZ); uninstall.sh replays these lines backwards"
if [ "$planner_step" = swap ]; then
  mv "$home/$loader" "$home/opt/" && record "moved $loader opt/$(basename "$loader")"
  mv "$home/opt/$planner" "$home/lib/" && record "moved opt/$planner lib/$planner"
fi
for jar in "$HERE"/lib/*.jar; do
  name=lib/$(basename "$jar")
  [ ! -e "$home/$name" ] || die "$home/$name exists already"
  cp "$jar" "$home/$name" && record "copied $name"
done
case $opts_step in
  add)
    printf 'env.java.opts.all: %s\n' "$OPEN_NIO" >> "$config"
    record "option-added" ;;
  extend)
    line=${opts_line%%:*}
    record "option-extended $line"
    sed -i "${line}s|\$| $OPEN_NIO|" "$config" ;;
esac
echo "Ferry installed into $home; restart the cluster, the SQL Client and the SQL Gateway"
