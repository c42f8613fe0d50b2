#!/usr/bin/env python3
"""Plots throughput against sequence length from sdpabench jsonl reports (P or CP mode).

One line per (name, dir, dt, mask) series, x = S_q (from the descriptor), y = GFLOP/s at the
median time (TFLOP/s when the best rate exceeds 1000 GFLOP/s); one PNG (another extension, such as
.svg or .pdf, picks that format). A report's context record (its first line) is read for the host
and never plotted.

Several reports are overlaid: each series is also labelled with its report, by the host of the
report's context record, or by the file's stem when it has none ("HOST (STEM)" when two reports
share a host); one colour per series, one line style per report. Prints "N point(s) in M series -> PNG"
and one line per series.

Needs matplotlib, installed by scripts/setup.sh into the venv /opt/sdpabench-deps/py
($SDPABENCH_DEPS/py when that is set):

  /opt/sdpabench-deps/py/bin/python scripts/plot.py sweep.jsonl sweep.png [--title TEXT]
  /opt/sdpabench-deps/py/bin/python scripts/plot.py base.jsonl new.jsonl both.png
"""
import argparse
import json
import os
import re
import shlex
import sys
from collections import defaultdict

LINE_STYLES = ["-", "--", ":", "-."]
MARKERS = ["o", "s", "^", "D", "v", "x"]


def no_matplotlib():
    """Exits with the command that runs this plot with a Python that has matplotlib."""
    deps = os.environ.get("SDPABENCH_DEPS", "/opt/sdpabench-deps")
    venv = os.path.join(deps, "py")
    py = os.path.join(venv, "bin", "python")
    rerun = shlex.join([py] + sys.argv)  # this script by the path it was run with, same arguments
    setup = shlex.quote(os.path.join(os.path.dirname(sys.argv[0]), "setup.sh"))
    msg = f"plot.py: needs matplotlib, which {sys.executable} does not have.\n"
    if os.path.realpath(sys.prefix) == os.path.realpath(venv) or os.path.abspath(sys.executable) == py:
        msg += (f"The venv {venv} lacks it: reinstall it with\n"
                f"  rm {os.path.join(venv, '.sdpabench-ok')} && {setup}\nthen run:\n  {rerun}")
    elif os.access(py, os.X_OK):
        msg += f"scripts/setup.sh installed it in the venv {venv}; run:\n  {rerun}"
    else:
        msg += (f"Install it (into the venv {venv}; SDPABENCH_DEPS moves it; needs root or sudo) with\n"
                f"  {setup}\nthen run:\n  {rerun}")
    sys.exit(msg)


def read_report(path):
    """(context dict or None, {(name, dir, dt, mask): [(S_q, gflops)]}) of one report."""
    context, series = None, defaultdict(list)
    try:
        f = open(path, encoding="utf-8")
    except OSError as e:
        sys.exit(f"plot.py: {path}: {e.strerror}")
    with f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"plot.py: {path}:{n}: not JSON ({e}); a killed run's last line may be cut")
            if not isinstance(rec, dict):
                sys.exit(f"plot.py: {path}:{n}: not a JSON object")
            if "context" in rec:
                context = rec["context"] if isinstance(rec["context"], dict) else {}
                continue
            perf = rec.get("perf")
            m = re.search(r"sq(\d+)", rec.get("prb") or "")
            if not isinstance(perf, dict) or not m or perf.get("gflops") is None:
                continue
            key = (rec.get("name") or rec["prb"], rec.get("dir"), rec.get("dt"), rec.get("mask"))
            series[key].append((int(m.group(1)), perf["gflops"]))
    return context, series


def report_labels(paths, contexts):
    """One label per report: its context's host, else its file stem (the path when two stems are
    the same); "HOST (STEM)" for reports that share a host."""
    stems = [os.path.splitext(os.path.basename(p))[0] for p in paths]
    if len(set(stems)) < len(stems):
        stems = list(paths)
    labels = []
    for stem, ctx in zip(stems, contexts):
        host = ctx.get("host") if ctx else None
        labels.append(host if isinstance(host, str) and host else stem)
    return [lab if labels.count(lab) == 1 else (stem if lab == stem else f"{lab} ({stem})")
            for lab, stem in zip(labels, stems)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reports", nargs="+", metavar="REPORT", help="sdpabench jsonl report(s), overlaid")
    ap.add_argument("png", metavar="PNG", help="the image written")
    ap.add_argument("--title", default=None)
    a = ap.parse_args()
    if a.png.endswith(".jsonl") or os.path.abspath(a.png) in map(os.path.abspath, a.reports):
        ap.error(f"the last argument is the image written, and {a.png} looks like a report")

    try:
        import matplotlib
    except ImportError:
        no_matplotlib()
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    reads = [read_report(p) for p in a.reports]
    for path, (_, s) in zip(a.reports, reads):
        if not s and len(a.reports) > 1:
            print(f"plot.py: warning: no timed case in {path}", file=sys.stderr)
    if not any(s for _, s in reads):
        sys.exit(f"plot.py: no timed case in {', '.join(a.reports)} "
                 "(run sdpabench with --mode=P and --report=jsonl:PATH)")
    overlay = len(a.reports) > 1
    labels = report_labels(a.reports, [c for c, _ in reads]) if overlay else [None]

    tflops = max(g for _, s in reads for pts in s.values() for _, g in pts) > 1000
    scale, unit = (1e-3, "TFLOP/s") if tflops else (1.0, "GFLOP/s")
    keys = sorted({k for _, s in reads for k in s}, key=lambda k: tuple(map(str, k)))
    colour = {k: f"C{i % 10}" for i, k in enumerate(keys)}
    fig, ax = plt.subplots(figsize=(8, 5))
    lines = []
    for r, ((_, s), rlabel) in enumerate(zip(reads, labels)):
        for key in sorted(s, key=lambda k: tuple(map(str, k))):
            pts = sorted(s[key])
            label = " ".join(map(str, key)) if rlabel is None else f"{rlabel}: {' '.join(map(str, key))}"
            ax.plot([x for x, _ in pts], [g * scale for _, g in pts], color=colour[key],
                    linestyle=LINE_STYLES[r % len(LINE_STYLES)], marker=MARKERS[r % len(MARKERS)], label=label)
            lines.append((label, len(pts)))
    ax.set_xscale("log", base=2)
    ax.set_xlabel("sequence length S_q")
    ax.set_ylabel(f"{unit} (median time, cuDNN FLOP convention)")
    ax.set_title(a.title or f"sdpabench: {' vs '.join(a.reports)}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(a.png, dpi=120)
    print(f"plot.py: {sum(n for _, n in lines)} point(s) in {len(lines)} series -> {a.png}")
    for label, n in lines:
        print(f"  {label}: {n} point(s)")


main()
