#!/usr/bin/env python3
"""Plots throughput against sequence length from sdpabench reports (P or CP mode; jsonl, or csv by
the .csv extension).

One line per series: the cases of one backend, shape (the descriptor without its sq and skv:
b, hq, hkv, d or dqk/dv), name, dir, dt and mask; x = S_q (from the descriptor), y = GFLOP/s at the
median time (TFLOP/s when the best rate exceeds 1000 GFLOP/s). A series is labelled by the parts
that differ between the series; the parts they all share are printed once ("common to all series").
One PNG (another extension, such as .svg or .pdf, picks that format; none gives a PNG). A report's
context record (its first line) is read for the host and never plotted.

Several reports are overlaid: each series is also labelled with its report, by the host of the
report's context record, or by the file's stem when it has none ("HOST (STEM)" when two reports
share a host); one colour per series, one line style per report. Prints "N point(s) in M series -> PNG"
and one line per series.

Backends side by side (--by=backend): one group of bars per case (its id without the --backend and
--mode knobs, the shared knobs printed once), one bar per backend: GFLOP/s (TFLOP/s past 1000) at
the median time, from one report that ran several backends or from several reports. Prints
"N case(s) x M backend(s) -> PNG" and one line per backend.

Needs matplotlib, installed by scripts/setup.sh into the venv /opt/sdpabench-deps/py
($SDPABENCH_DEPS/py when that is set):

  /opt/sdpabench-deps/py/bin/python scripts/plot.py sweep.jsonl sweep.png [--title TEXT]
  /opt/sdpabench-deps/py/bin/python scripts/plot.py base.jsonl new.jsonl both.png
  /opt/sdpabench-deps/py/bin/python scripts/plot.py --by=backend sweep.csv backends.png
"""
import argparse
import os
import re
import shlex
import sys
from collections import defaultdict

from sdpabench_report import ReportError, read_report

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


# The parts of a series key, in label order: backend, name, shape (the descriptor without sq/skv).
KEY_FIELDS = ("backend", "name", "shape", "dir", "dt", "mask")


def split_prb(prb):
    """(S_q, shape) of a descriptor such as b2hq32hkv8sq1024skv2048d128 -> (1024, "b2hq32hkv8d128");
    None when it has no sq. A trailing n=NAME is ignored."""
    if not isinstance(prb, str):
        return None
    parts = re.findall(r"([a-z]+)(\d+)", prb.split("n=", 1)[0])
    sq = [int(v) for k, v in parts if k == "sq"]
    if not sq:
        return None
    return sq[0], "".join(k + v for k, v in parts if k not in ("sq", "skv"))


def read_series(path):
    """(context dict or None, {(backend, name, shape, dir, dt, mask): [(S_q, gflops)]}) of one report."""
    series = defaultdict(list)
    try:
        context, cases = read_report(path)
    except ReportError as e:
        sys.exit(f"plot.py: {e}")
    for rec in cases:
        perf = rec.get("perf")
        sq_shape = split_prb(rec.get("prb"))
        if not isinstance(perf, dict) or not sq_shape or not isinstance(perf.get("gflops"), (int, float)):
            continue
        sq, shape = sq_shape
        fields = {"shape": shape, **{f: rec.get(f) for f in KEY_FIELDS if f != "shape"}}
        key = tuple("" if fields[f] is None else str(fields[f]) for f in KEY_FIELDS)
        series[key].append((sq, perf["gflops"]))
    return context, series


def case_key(rec):
    """The case of a record on any backend: its id without --backend and --mode (None without an id)."""
    cid = rec.get("id")
    if not isinstance(cid, str) or not cid:
        return None
    return re.sub(r"(^| )--(backend|mode)=\S+", "", cid).strip()


def read_backends(paths):
    """({case: {backend: gflops}}, [backends in order of appearance]) of the timed cases of `paths`."""
    rates, backends = defaultdict(dict), []
    for path in paths:
        try:
            _, cases = read_report(path)
        except ReportError as e:
            sys.exit(f"plot.py: {e}")
        for rec in cases:
            perf, key, backend = rec.get("perf"), case_key(rec), rec.get("backend")
            if not isinstance(perf, dict) or not isinstance(perf.get("gflops"), (int, float)) or not key or not backend:
                continue
            if backend not in backends:
                backends.append(backend)
            rates[key][backend] = perf["gflops"]
    return rates, backends


def common_knobs(keys):
    """(the knob tokens every case key shares, {key: its own tokens})."""
    toks = [k.split() for k in keys]
    shared = [t for t in toks[0] if t.startswith("--") and all(t in o for o in toks[1:])] if toks else []
    return shared, {k: " ".join(t for t in k.split() if t not in shared) for k in keys}


def plot_backends(a, plt):
    """--by=backend: grouped bars, one group per case, one bar per backend."""
    rates, backends = read_backends(a.reports)
    if not rates:
        sys.exit(f"plot.py: no timed case in {', '.join(a.reports)} (run sdpabench with --mode=P and "
                 "--report=jsonl:PATH or csv:PATH)")
    keys = list(rates)
    shared, short = common_knobs(keys)
    tflops = max(g for per in rates.values() for g in per.values()) > 1000
    scale, unit = (1e-3, "TFLOP/s") if tflops else (1.0, "GFLOP/s")
    width = 0.8 / max(len(backends), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 1.2 * len(keys) * max(len(backends), 1) * 0.5 + 3), 5))
    for j, b in enumerate(backends):
        xs = [i + (j - (len(backends) - 1) / 2) * width for i, k in enumerate(keys) if b in rates[k]]
        ys = [rates[k][b] * scale for k in keys if b in rates[k]]
        ax.bar(xs, ys, width=width, label=b, color=f"C{j % 10}")
    ax.set_xticks(range(len(keys)))
    ax.set_xticklabels([short[k] for k in keys], rotation=30, ha="right", fontsize=7)
    ax.set_ylabel(f"{unit} (median time, cuDNN FLOP convention)")
    ax.set_title(a.title or f"sdpabench backends: {' '.join(shared) or ', '.join(a.reports)}", fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    save(fig, a)
    print(f"plot.py: {len(keys)} case(s) x {len(backends)} backend(s) -> {a.png}")
    if shared:
        print(f"  common to all cases: {' '.join(shared)}")
    for b in backends:
        print(f"  {b}: {sum(b in rates[k] for k in keys)} case(s)")


def save(fig, a):
    """Writes the figure to a.png in the format of its extension (none: PNG)."""
    ext = os.path.splitext(a.png)[1][1:].lower()
    try:
        fig.savefig(a.png, dpi=120, format=ext or "png")  # no extension: a PNG, named as given
    except (OSError, ValueError) as e:
        sys.exit(f"plot.py: cannot write {a.png}: {getattr(e, 'strerror', None) or e}")


def series_labels(keys):
    """({key: label}, common): a label of the key parts that differ between the series (all parts
    when there is one series), and the parts all series share ("" when none)."""
    show = lambda v: v or "-"  # noqa: E731  (a case without a name, or a report without a backend)
    varying = [i for i in range(len(KEY_FIELDS)) if len({k[i] for k in keys}) > 1]
    if not varying:
        return {k: " ".join(v for v in k if v) or "-" for k in keys}, ""
    common = " ".join(keys[0][i] for i in range(len(KEY_FIELDS)) if i not in varying and keys[0][i])
    return {k: " ".join(show(k[i]) for i in varying) for k in keys}, common


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
    ap.add_argument("reports", nargs="+", metavar="REPORT", help="sdpabench jsonl or csv report(s), overlaid")
    ap.add_argument("png", metavar="PNG", help="the image written")
    ap.add_argument("--title", default=None)
    ap.add_argument("--by", choices=["series", "backend"], default="series",
                    help="series (default): throughput against S_q, one line per series; backend: bars per case, "
                         "one per backend")
    a = ap.parse_args()
    if a.png.endswith((".jsonl", ".csv")) or os.path.abspath(a.png) in map(os.path.abspath, a.reports):
        ap.error(f"the last argument is the image written, and {a.png} looks like a report")

    try:
        import matplotlib
    except ImportError:
        no_matplotlib()
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.backend_bases import FigureCanvasBase

    suffix = os.path.splitext(a.png)[1]
    ext = suffix[1:].lower()
    formats = FigureCanvasBase.get_supported_filetypes()
    if ext and ext not in formats:
        sys.exit(f"plot.py: {a.png}: unknown image extension {suffix} (known: {', '.join(sorted(formats))})")
    if a.by == "backend":
        return plot_backends(a, plt)

    reads = [read_series(p) for p in a.reports]
    for path, (_, s) in zip(a.reports, reads):
        if not s and len(a.reports) > 1:
            print(f"plot.py: warning: no timed case in {path}", file=sys.stderr)
    if not any(s for _, s in reads):
        sys.exit(f"plot.py: no timed case in {', '.join(a.reports)} "
                 "(run sdpabench with --mode=P and --report=jsonl:PATH or csv:PATH)")
    overlay = len(a.reports) > 1
    rlabels = report_labels(a.reports, [c for c, _ in reads]) if overlay else [None]

    tflops = max(g for _, s in reads for pts in s.values() for _, g in pts) > 1000
    scale, unit = (1e-3, "TFLOP/s") if tflops else (1.0, "GFLOP/s")
    keys = sorted({k for _, s in reads for k in s})
    colour = {k: f"C{i % 10}" for i, k in enumerate(keys)}
    klabel, common = series_labels(keys)
    fig, ax = plt.subplots(figsize=(8, 5))
    lines = []
    for r, ((_, s), rlabel) in enumerate(zip(reads, rlabels)):
        for key in sorted(s):
            pts = sorted(s[key])
            label = klabel[key] if rlabel is None else f"{rlabel}: {klabel[key]}"
            xs = [x for x, _ in pts]
            repeated = sorted({x for x in xs if xs.count(x) > 1})
            if repeated:
                print(f"plot.py: warning: {label}: several cases at S_q = {', '.join(map(str, repeated))} "
                      "(differing in skv, or repeated)", file=sys.stderr)
            ax.plot(xs, [g * scale for _, g in pts], color=colour[key],
                    linestyle=LINE_STYLES[r % len(LINE_STYLES)], marker=MARKERS[r % len(MARKERS)], label=label)
            lines.append((label, len(pts)))
    ax.set_xscale("log", base=2)
    ax.set_xlabel("sequence length S_q")
    ax.set_ylabel(f"{unit} (median time, cuDNN FLOP convention)")
    ax.set_title(a.title or f"sdpabench: {' vs '.join(a.reports)}")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, title=common or None, title_fontsize=8)
    fig.tight_layout()
    save(fig, a)
    print(f"plot.py: {sum(n for _, n in lines)} point(s) in {len(lines)} series -> {a.png}")
    if common:
        print(f"  common to all series: {common}")
    for label, n in lines:
        print(f"  {label}: {n} point(s)")


main()
