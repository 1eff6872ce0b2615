#!/usr/bin/env python3
"""Plots the cluster soak (scripts/cluster-soak.sh): the TaskManager's RSS, its JVM heap in use,
Ferry's state bytes, the Go runtime's memory and the operator's managed-memory budget against time.

    tests/perf/plot.sh            # makes a venv with matplotlib, then runs this script and plot.py

Input:  docs/data/cluster-soak.csv  (seconds,rss_bytes,heap_used_bytes,state_keys,state_bytes,
        checkpoints_completed,checkpoints_failed,budget_bytes,managed_used_bytes,go_bytes,
        go_limit_bytes)
Output: docs/img/cluster-soak.png
"""
import csv
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, "docs", "data", "cluster-soak.csv")
DST = os.path.join(ROOT, "docs", "img", "cluster-soak.png")


def main():
    with open(SRC, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"no data in {SRC}")
    minutes = [int(r["seconds"]) / 60 for r in rows]
    mib = lambda key: [int(r[key]) / 2**20 for r in rows]  # noqa: E731
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    ax.plot(minutes, mib("rss_bytes"), label="TaskManager RSS")
    ax.plot(minutes, mib("heap_used_bytes"), label="JVM heap in use", linewidth=0.6)
    ax.plot(minutes, mib("state_bytes"), label="Ferry state (ferryStateBytes)")
    ax.plot(minutes, mib("go_bytes"), label="Go runtime (ferryGoMemoryBytes)")
    ax.plot(minutes, mib("budget_bytes"), label="its managed-memory budget", linestyle="--")
    ax.set_ylim(bottom=0)
    ax.set_xlabel("minutes")
    ax.set_ylabel("MiB")
    ax.set_title("GROUP BY soak: 20,000 rows/s, 50,000 keys, checkpoint every 10 s")
    ax.grid(True, linewidth=0.3)
    ax.legend(loc="center right")
    fig.tight_layout()
    fig.savefig(DST)
    print(DST)


if __name__ == "__main__":
    main()
