"""Draws the Nexmark summary (scripts/nexmark.sh writes summary.csv): per query, Ferry's events/s
and events per core over stock Flink on the heap backend and on RocksDB, on a log scale; queries
where a native operator ran are marked with *. Usage: nexmark-plot.py SUMMARY.csv OUT.png COMMIT"""
import csv
import math
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator  # noqa: E402


def number(text):
    return float(text) if text else math.nan


def main(summary, out, commit):
    with open(summary, newline="") as f:
        rows = list(csv.DictReader(f))
    queries = [r["query"] + ("*" if r["ran_native"] == "true" else "") for r in rows]
    panels = [
        ("events/s", "ferry_over_heap", "ferry_over_rocksdb"),
        ("events per CPU second", "ferry_over_heap_per_core", "ferry_over_rocksdb_per_core"),
    ]
    fig, axes = plt.subplots(2, 1, figsize=(13, 8), sharex=True)
    x = range(len(rows))
    width = 0.4
    for ax, (what, heap, rocks) in zip(axes, panels):
        h = [number(r[heap]) for r in rows]
        k = [number(r[rocks]) for r in rows]
        ax.bar([i - width / 2 for i in x], h, width, label="Ferry ÷ stock Flink, heap", color="#2b8cbe")
        ax.bar([i + width / 2 for i in x], k, width,
               label="Ferry ÷ stock Flink, RocksDB (its state on disk, Ferry's in memory)", color="#f03b20")
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set_yscale("log")
        values = [v for v in h + k if v > 0 and not math.isnan(v)]
        low = min(values + [1.0]) / 1.2
        high = max(values + [1.0]) * 1.2
        ax.set_ylim(low, high)
        ticks = [2.0 ** e for e in range(math.floor(math.log2(low)), math.ceil(math.log2(high)) + 1)]
        ax.yaxis.set_major_locator(FixedLocator(ticks))
        ax.yaxis.set_minor_locator(NullLocator())
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _: "%g×" % v))
        ax.set_ylabel("Ferry ÷ stock, " + what)
        ax.grid(axis="y", which="both", alpha=0.3)
        ax.legend(loc="upper left", fontsize=8)
    axes[1].set_xticks(list(x))
    axes[1].set_xticklabels(queries)
    axes[0].set_title("Nexmark q0–q22 at commit %s (* a native operator ran; without *, the Ferry side runs"
                      " Flink's operators on the heap backend)" % commit, fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    main(*sys.argv[1:])
