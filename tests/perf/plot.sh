#!/usr/bin/env bash
# Regenerates docs/img/group-aggregate-rows-per-second.png and docs/img/cluster-soak.png from
# docs/data (see plot.py and plot_soak.py).
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=build/plotenv
[ -x "$VENV/bin/python" ] || { python3 -m venv "$VENV" && "$VENV/bin/pip" install -q matplotlib; }
"$VENV/bin/python" tests/perf/plot.py
"$VENV/bin/python" tests/perf/plot_soak.py
