#!/usr/bin/env bash
# Ferry build and test entry point.
#   ./build.sh            build build/libferry.so (and check its exports against include/ferry.h)
#   ./build.sh test       vet, Go tests (race on pure packages, cgocheck2 on capi), C harness
#                         under valgrind, short fuzz runs
#   ./build.sh demo       run the C harness demo scenario
#   ./build.sh bench      Go benchmarks of the group aggregate (direct and through the C ABI)
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

cmd_build() {
  log "build/libferry.so"
  build_lib "$OUT/libferry.so"
  echo "exports match include/ferry.h ($(abi_functions | wc -l) functions)"
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
  log "all tests passed"
}

cmd_demo() {
  cmd_build
  build_harness "$OUT/libferry.so" "$OUT/ferry_harness"
  "$OUT/ferry_harness" demo
}

cmd_bench() {
  go test -run '^$' -bench . -benchmem ./agg/ ./capi/
}

case "${1:-build}" in
  build) cmd_build ;;
  test) cmd_test ;;
  demo) cmd_demo ;;
  bench) cmd_bench ;;
  *) echo "usage: $0 [build|test|demo|bench]" >&2; exit 2 ;;
esac
