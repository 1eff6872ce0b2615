#!/usr/bin/env bash
# scripts/jfr-top.sh RECORDING.jfr [FILTER]: the hottest methods of a JFR recording: the top frame
# of every jdk.ExecutionSample (Java code), and of every jdk.NativeMethodSample (threads inside
# native code, e.g. in libferry.so). With FILTER, only samples whose stack has a frame matching
# that awk regex count, and the frames the matching one called (its callee in each sample) are
# counted too.
. "$(dirname "$0")/common.sh"

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
    sort -rn | awk 'NR <= 20' # reads everything: no SIGPIPE for sort under pipefail
}

[ $# -ge 1 ] && [ $# -le 2 ] || { echo "usage: $0 RECORDING.jfr [FILTER]" >&2; exit 2; }
jfr_top "$@"
