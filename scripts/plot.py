#!/usr/bin/env python3
"""Plots throughput against sequence length from an sdpabench jsonl report (P or CP mode).

One line per (name, dir, dt, mask) series, x = S_q (from the descriptor), y = GFLOP/s at the
median time (TFLOP/s when the best rate exceeds 1000 GFLOP/s); one PNG. Needs matplotlib, installed
by scripts/setup.sh into /opt/sdpabench-deps/py:

  /opt/sdpabench-deps/py/bin/python scripts/plot.py sweep.jsonl sweep.png [--title TEXT]
"""
import argparse
import json
import re
import sys
from collections import defaultdict

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("report")
    ap.add_argument("png")
    ap.add_argument("--title", default=None)
    a = ap.parse_args()

    series = defaultdict(list)
    with open(a.report, encoding="utf-8") as f:
        for line in f:
            if not line.strip():
                continue
            rec = json.loads(line)
            perf = rec.get("perf")
            m = re.search(r"sq(\d+)", rec.get("prb", ""))
            if not perf or not m or perf.get("gflops") is None:
                continue
            key = (rec.get("name") or rec["prb"], rec["dir"], rec["dt"], rec["mask"])
            series[key].append((int(m.group(1)), perf["gflops"]))
    if not series:
        sys.exit(f"plot.py: no timed case in {a.report} (run sdpabench with --mode=P and --report=jsonl:PATH)")

    tflops = max(g for pts in series.values() for _, g in pts) > 1000
    scale, unit = (1e-3, "TFLOP/s") if tflops else (1.0, "GFLOP/s")
    fig, ax = plt.subplots(figsize=(8, 5))
    for (name, d, dt, mask), pts in sorted(series.items()):
        pts.sort()
        ax.plot([s for s, _ in pts], [g * scale for _, g in pts], marker="o", label=f"{name} {d} {dt} {mask}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("sequence length S_q")
    ax.set_ylabel(f"{unit} (median time, cuDNN FLOP convention)")
    ax.set_title(a.title or f"sdpabench: {a.report}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.png, dpi=120)
    print(f"plot.py: {sum(len(p) for p in series.values())} point(s) in {len(series)} series -> {a.png}")


main()
