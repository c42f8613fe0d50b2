"""scripts/history plot: one PNG per flagged series and a static index.html listing them (docs/tracking.md).

Each PNG shows one series' metric (median time or TFLOP/s, an output's worst_ratio, or the status)
against the revisions in run order on the x axis, one line per machine that ran the case (the
flagged machine's line thicker), the change marked by a dashed line between the last revision
before it and the first after it, noisy runs (cv above --noisy-cv) circled, and for margins the
bound (worst_ratio 1). index.html lists the findings, most important first (changes, then margins,
then flaky cases), each with its plot, what changed in the run context and its repro line.
Needs matplotlib (scripts/setup.sh's venv has it).
"""
import html
import os
import sys
import textwrap
from collections import defaultdict
from datetime import datetime, timezone

STATUS_ORDER = ["PASSED", "EXECUTED", "MISTRUSTED", "SKIPPED", "UNIMPLEMENTED", "INVALID_ARGUMENTS", "FAILED", "LISTED"]


def _value(kind, f):
    """The function giving a point's y value for finding f (None: not a point of the series)."""
    if kind == "change":
        return lambda p: getattr(p, f["metric"])
    if kind == "margin":
        return lambda p: p.outputs.get(f["output"], (False, None))[1] if p.outputs.get(f["output"], (False,))[0] else None
    return lambda p: STATUS_ORDER.index(p.status) if p.status in STATUS_ORDER else len(STATUS_ORDER)


def plot_finding(plt, kind, f, points, path):
    """Writes the PNG of finding f (kind change, margin or flaky) to path."""
    value = _value(kind, f)
    mine = [p for p in points if p.case == f["case"] and p.backend == f["backend"] and value(p) is not None]
    revs = []
    for p in mine:  # points are in run order
        if p.rev not in revs:
            revs.append(p.rev)
    x_of = {r: i for i, r in enumerate(revs)}
    by_machine = defaultdict(list)
    for p in mine:
        by_machine[p.machine].append(p)
    fig, ax = plt.subplots(figsize=(8, 4.2), dpi=100)
    for machine, pts in sorted(by_machine.items(), key=lambda kv: kv[0] != f["machine"]):
        xs, ys = [x_of[p.rev] for p in pts], [value(p) for p in pts]
        flagged = machine == f["machine"]
        ax.plot(xs, ys, marker="o", markersize=4, linewidth=2.4 if flagged else 1.0, alpha=1.0 if flagged else 0.7,
                label=machine + (" (flagged)" if flagged else ""))
        noisy = [(x, y) for x, y, p in zip(xs, ys, pts) if p.noisy]
        if noisy:
            ax.scatter(*zip(*noisy), s=110, facecolors="none", edgecolors="red", linewidths=1.2,
                       label="noisy run (cv above --noisy-cv)" if flagged else None, zorder=3)
    if kind != "flaky":
        at = x_of.get(f["rev"], 0) - 0.5
        ax.axvline(at, color="black", linestyle="--", linewidth=1)
        label = (f"{f['finding']} at {f['rev']} ({f['scope']})" if kind == "change"
                 else f"{f['output']} {f['direction']} at {f['rev']}")
        ax.annotate(label, xy=(at, 1), xycoords=("data", "axes fraction"), xytext=(4, -14),
                    textcoords="offset points", fontsize=9)
    if kind == "margin":
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.annotate("bound (FAILED above)", xy=(0, 1.0), xycoords=("axes fraction", "data"), xytext=(2, 2),
                    textcoords="offset points", fontsize=8, color="grey")
        ax.set_ylim(0, max(1.1, max(value(p) for p in mine) * 1.1))
    if kind == "flaky":
        ax.set_yticks(range(len(STATUS_ORDER)))
        ax.set_yticklabels(STATUS_ORDER, fontsize=8)
    ax.set_xticks(range(len(revs)))
    ax.set_xticklabels(revs, rotation=45 if len(revs) > 12 else 0, ha="right" if len(revs) > 12 else "center", fontsize=8)
    ax.set_xlabel(f"revision ({f.get('order_by', 'rev')})")
    ax.set_ylabel({"change": f["metric"], "margin": f"worst_ratio of {f.get('output')} (|err|/bound)",
                   "flaky": "status"}[kind])
    ax.set_title("\n".join(textwrap.wrap(f"{f['case']}  [{f['backend']}]", 90)), fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _row(kind, f, png):
    e = html.escape
    if kind == "change":
        p = "" if f["p"] is None else f", p = {f['p']:.2g}"
        head = f"<b>{f['finding']}</b>: {f['before']:.4g} &rarr; {f['after']:.4g} {e(f['metric'])} (x{f['ratio']:.3g}){p}"
        extra = [f"scope: {e(f['scope'])}"]
        if f["noisy"]:
            extra.append(f"<b>noisy</b> runs around it (at {e(', '.join(f['noisy_revs']))}): it may be the machine")
        for m in f["margins_worse"]:
            extra.append(f"margin of {e(m['output'])}: {m['before']:.4g} &rarr; {m['after']:.4g}")
    elif kind == "margin":
        rule = "exact (deterministic)" if f["p"] is None else f"Otava, p = {f['p']:.2g}"
        head = f"<b>{e(f['output'])} margin {f['direction']}</b>: worst_ratio {f['before']:.4g} &rarr; {f['after']:.4g} ({rule})"
        extra = []
    else:
        head = f"<b>flaky: {f['flips']} flip(s)</b>"
        extra = [" ".join(f"{e(r)}:{e(s)}" for r, s in f["statuses"])]
        if f["same_rev"]:
            extra.append(f"differs within revision(s) {e(', '.join(f['same_rev']))}")
    if kind != "flaky":
        changed = "; ".join(f"{e(c['field'])} {e(c['before'])} &rarr; {e(c['after'])}" for c in f["context_changes"])
        extra.append(f"context changed at {e(f['rev'])}: {changed or 'nothing'}")
    where = f"rev {e(f['rev'])}: " if kind != "flaky" else ""
    return (f"<tr><td><a href='{e(png)}'><img src='{e(png)}' width='480'></a></td><td><p>{where}{head}</p>"
            f"<p>{e(f['case'])}<br>backend {e(f['backend'])}, machine {e(f['machine'])}</p>"
            + "".join(f"<p>{x}</p>" for x in extra)
            + f"<p>repro: <code>{e(f['repro'])}</code></p></td></tr>\n")


def write_page(a, points, changes, steps, flaky, notes):
    """Writes a.out/NNN-KIND.png per finding and a.out/index.html; returns 1 when something is
    flagged (as changes, margins and flaky would), else 0."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("history plot: needs matplotlib: run scripts/history (the venv of scripts/setup.sh has it)", file=sys.stderr)
        return 2
    os.makedirs(a.out, exist_ok=True)
    sections = []
    n = 0
    for kind, title, items in (("change", f"Timing changes ({a.metric})", changes),
                               ("margin", "Margin steps (worst_ratio)", steps), ("flaky", "Flaky cases", flaky)):
        body = []
        for f in items:
            n += 1
            png = f"{n:03d}-{kind}.png"
            f["order_by"] = a.order_by
            plot_finding(plt, kind, f, points, os.path.join(a.out, png))
            body.append(_row(kind, f, png))
        sections.append(f"<h2>{html.escape(title)}: {len(items)}</h2>\n"
                        + (f"<table>\n{''.join(body)}</table>\n" if body else "<p>none</p>\n"))
    runs = len({p.run for p in points})
    page = ("<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>sdpabench history</title>\n"
            "<style>body{font-family:sans-serif;margin:1em 2em} td{vertical-align:top;padding:4px 12px 12px 0}"
            " code{background:#eee;padding:1px 3px;word-break:break-all} h2{border-bottom:1px solid #ccc}</style>"
            "</head><body>\n<h1>sdpabench: what changed</h1>\n"
            f"<p>{runs} run(s), ordered by {html.escape(a.order_by)}; generated "
            f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC by scripts/history plot (docs/tracking.md).</p>\n"
            + "".join(f"<p><i>note: {html.escape(x)}</i></p>\n" for x in notes)
            + "".join(sections) + "</body></html>\n")
    with open(os.path.join(a.out, "index.html"), "w", encoding="utf-8") as fh:
        fh.write(page)
    print(f"{n} plot(s) and index.html in {a.out}")
    flagged = (any(c["direction"] == "slower" or c["margins_worse"] for c in changes)
               or any(s["direction"] == "worse" for s in steps) or bool(flaky))
    return 1 if flagged else 0
