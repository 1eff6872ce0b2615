#!/usr/bin/env bash
# Prints the project version: the <revision> property of the root pom.xml, the one place a release
# changes it (Maven versions every module with it; libferry.so embeds it, version.go).
set -euo pipefail
pom=$(dirname "$0")/../pom.xml
v=$(sed -n 's:^[[:space:]]*<revision>\([^<>${}[:space:]]\{1,\}\)</revision>[[:space:]]*$:\1:p' "$pom" | head -n 1)
if [ -z "$v" ]; then
  echo "$0: $pom has no <revision>VERSION</revision> line" >&2
  exit 1
fi
echo "$v"
