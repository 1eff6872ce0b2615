#!/usr/bin/env bash
# Regenerates docs/img/group-aggregate-rows-per-second.png from docs/data (see plot.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=build/plotenv
[ -x "$VENV/bin/python" ] || { python3 -m venv "$VENV" && "$VENV/bin/pip" install -q matplotlib; }
"$VENV/bin/python" tests/perf/plot.py
