#!/usr/bin/env bash
# Installs what Ferry's build needs and the machine lacks, from Debian's packages (apt-get, through
# sudo when not root), and checks Go:
#   scripts/setup.sh demo    gcc and libc headers (cgo), binutils (nm: the export check), JDK 17,
#                            Maven: what ./build.sh demo needs
#   scripts/setup.sh lookup  the same, plus the PostgreSQL server: what ./build.sh demo-lookup needs
#   scripts/setup.sh nexmark the same as demo, plus Python's venv (the plot's matplotlib is installed
#                            into build/plotenv): what ./build.sh nexmark needs
#   scripts/setup.sh test    the same, plus valgrind (the C harness), Chromium (the HTML report's
#                            test), the PostgreSQL server (the lookup tests start their own,
#                            scripts/postgres.sh), curl and unzip (./build.sh cluster-test): what
#                            ./build.sh test and .ci/run need (the default)
# Go 1.26 or newer must be on PATH (Debian's Go is older): the script says so in one line and fails.
# ./build.sh demo, ./build.sh test and .ci/run call it first; with everything present it installs
# nothing and takes a moment.
set -euo pipefail

profile=${1:-test}
case $profile in
  demo|lookup|nexmark|test) ;;
  *) echo "usage: $0 [demo|lookup|nexmark|test]" >&2; exit 2 ;;
esac

need=()
command -v gcc >/dev/null 2>&1 || need+=(gcc libc6-dev)
command -v nm >/dev/null 2>&1 || need+=(binutils)
if ! command -v javac >/dev/null 2>&1 || ! javac -version 2>&1 | grep -qE 'javac (1[7-9]|[2-9][0-9])'; then
  need+=(openjdk-17-jdk-headless)
fi
command -v mvn >/dev/null 2>&1 || need+=(maven)
if [ "$profile" = test ]; then
  command -v valgrind >/dev/null 2>&1 || need+=(valgrind)
  command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || need+=(chromium)
  command -v curl >/dev/null 2>&1 || need+=(curl)
  command -v unzip >/dev/null 2>&1 || need+=(unzip)
fi
if [ "$profile" = nexmark ]; then
  python3 -c 'import ensurepip, venv' >/dev/null 2>&1 || need+=(python3-venv)
fi
if [ "$profile" != demo ] && [ "$profile" != nexmark ]; then
  # Debian keeps pg_ctl and initdb in /usr/lib/postgresql/VERSION/bin, off PATH.
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || command -v initdb >/dev/null 2>&1 || need+=(postgresql)
fi

if [ ${#need[@]} -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "setup: no apt-get here; install these yourself: ${need[*]}" >&2
    exit 1
  fi
  sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null 2>&1 || { echo "setup: not root and no sudo; install these yourself: ${need[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${need[@]}"
fi

# Go is not taken from Debian (too old): it must be on PATH already.
go_version=$(go env GOVERSION 2>/dev/null || true)
if ! [[ $go_version =~ ^go([0-9]+)\.([0-9]+) ]] || [ "${BASH_REMATCH[1]}" -lt 1 ] ||
  { [ "${BASH_REMATCH[1]}" -eq 1 ] && [ "${BASH_REMATCH[2]}" -lt 26 ]; }; then
  echo "setup: Go 1.26 or newer must be on PATH (https://go.dev/dl/); found: ${go_version:-no go}" >&2
  exit 1
fi
