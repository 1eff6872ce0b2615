#!/usr/bin/env bash
# Removes Ferry from a Flink distribution: ./uninstall.sh FLINK_HOME. Replays the steps install.sh
# recorded in FLINK_HOME/.ferry-install backwards (jars removed, the planner loader back in lib/,
# conf/config.yaml's env.java.opts.all as it was), then removes the record.
set -euo pipefail
OPEN_NIO=--add-opens=java.base/java.nio=ALL-UNNAMED

die() { echo "ferry uninstall: $*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: $0 FLINK_HOME"
home=$(cd "$1" 2>/dev/null && pwd) || die "$1 is not a directory"
manifest=$home/.ferry-install
[ -f "$manifest" ] || die "Ferry is not installed in $home (no $manifest)"
config=$home/conf/config.yaml

tac "$manifest" | while IFS= read -r step; do
  case $step in
    "#"*) ;;
    "moved "*)
      set -- ${step#moved }
      mv "$home/$2" "$home/$1" ;;
    "copied "*)
      rm -f "$home/${step#copied }" ;;
    option-added)
      sed -i "\|^env\.java\.opts\.all: $OPEN_NIO\$|d" "$config" ;;
    "option-extended "*)
      line=${step#option-extended }   # the line install.sh added the option to, at its end
      sed -n "${line}p" "$config" | grep -q -- "^env\.java\.opts\.all:.* $OPEN_NIO\$" ||
        die "line $line of $config is no longer the env.java.opts.all that install.sh extended; restore it by hand"
      sed -i "${line}s| $OPEN_NIO\$||" "$config" ;;
    *) die "unknown step in $manifest: $step" ;;
  esac
done
rm -f "$manifest"
echo "Ferry removed from $home; restart the cluster, the SQL Client and the SQL Gateway"
