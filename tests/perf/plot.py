#!/usr/bin/env python3
"""Plots rows/s against key cardinality for Flink's group aggregate (heap and RocksDB backends)
and Ferry's, from the CSV that ./build.sh bench-jvm's operator section was transcribed into.

    tests/perf/plot.sh            # makes a venv with matplotlib, then runs this script

Input:  docs/data/group-aggregate-rows-per-second.csv  (variant,keys,rows_per_s)
Output: docs/img/group-aggregate-rows-per-second.png
"""
import csv
import os
import sys

import matplotlib
import matplotlib.ticker

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, "docs", "data", "group-aggregate-rows-per-second.csv")
DST = os.path.join(ROOT, "docs", "img", "group-aggregate-rows-per-second.png")

LABELS = {"ferry": "Ferry", "heap": "Flink, heap backend", "rocksdb": "Flink, RocksDB backend"}


def main():
    series = {}
    with open(SRC, newline="") as f:
        for row in csv.DictReader(f):
            series.setdefault(row["variant"], []).append((int(row["keys"]), float(row["rows_per_s"])))
    if not series:
        sys.exit(f"no data in {SRC}")
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    for variant in ("ferry", "heap", "rocksdb"):
        points = sorted(series.get(variant, []))
        if points:
            xs, ys = zip(*points)
            ax.plot(xs, [y / 1e6 for y in ys], marker="o", label=LABELS[variant])
    ax.set_xscale("log")
    ax.set_yscale("log")
    plain = matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}")
    ax.yaxis.set_major_formatter(plain)
    ax.yaxis.set_minor_formatter(
        matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:g}" if f"{v:g}".lstrip("0.")[:1] in "25" else ""))
    ax.set_xlabel("distinct keys (GROUP BY auction)")
    ax.set_ylabel("input rows per second (millions)")
    ax.set_title("Group aggregate operator, same input and driver, one JVM")
    ax.grid(True, which="both", linewidth=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(DST)
    print(DST)


if __name__ == "__main__":
    main()
