"""scripts/history plot: DIR/index.html, an interactive page of what changed, and one PNG per finding
that has a chart (docs/tracking.md, "What the page shows").

write_page(a, points, findings, notes) takes the analysis's findings by kind ("changes", "margins",
"flaky", "outliers", "context", "noisy_runs"; docs/tracking.md) and draws each one that has a chart
twice from one description of it (chart()): with Plotly into index.html (hover a point for its run,
revision, value and repro line; click a machine in the legend to hide it), and with matplotlib into
NNN-KIND.png for mail and links; context changes and noisy runs are short tables. The description holds every fact once: the series (one per machine that ran the
case, a line through each revision's median and a marker per run), the y range (fitted to the
flagged machine's points: other machines are drawn faint and may leave the chart, so that another
machine's spike never sets the scale), the title ("slower at rev 7: 3.36 → 5.77 ms (x1.72) — this
machine only"), the change line, the bound of a margin, a light band behind each noisy run and a
small ring on each outlier. Plotly's own plotly.min.js is written next to the page and loaded from
there: the page needs no network. Needs matplotlib and plotly (scripts/setup.sh's venv has both).
"""
import html
import math
import os
import re
import statistics
import sys
import textwrap
from collections import defaultdict
from datetime import datetime, timezone

from sdpabench_tables import TableError, statuses as status_table

from .store import TIMING_METRICS  # the metrics' units and labels


UNITS = {k: m["unit"] for k, m in TIMING_METRICS.items()}
AXIS_LABELS = {**{k: m["what"] for k, m in TIMING_METRICS.items()}, "status": "status"}
# (key in findings, kind, section title); the page's order.
SECTIONS = [("changes", "change", "Timing changes"), ("margins", "margin", "Margin steps"),
            ("flaky", "flaky", "Flaky cases"), ("outliers", "outlier", "Outliers"),
            ("context", "context", "Context changes"), ("noisy_runs", "noisy run", "Noisy runs")]
CHARTED = ("change", "margin", "flaky", "outlier")
FLAGGED_COLOR = "#1f4e9c"
OTHER_COLORS = ["#8c8c8c", "#b07aa1", "#59a14f", "#e49444", "#76b7b2", "#9c755f", "#edc948", "#ff9da7"]
NOISY_COLOR = "#f2b134"
OUTLIER_COLOR = "#c0392b"
CHANGE_COLOR = "#333333"


# --- the facts, once ----------------------------------------------------------------------------

def flagged(kind, f):
    """Whether finding f makes scripts/history plot exit 1: a slower or less accurate change, a
    worse margin, a flaky case."""
    if kind == "change":
        return f.get("direction") == "slower" or bool(f.get("margins_worse"))
    if kind == "margin":
        return f.get("direction") == "worse"
    return kind == "flaky"


def status_order(exe=None):
    """sdpabench's status names in the order a status chart stacks them from the bottom: its
    table's order (--list-statuses=json of `exe`, default sdpabench_tables.executable()), the
    statuses that are errors (they fail a run) after the others, so that the worst is on top.
    Raises sdpabench_tables.TableError when sdpabench cannot say."""
    rows = status_table(exe)
    return [r["name"] for r in rows if not r.get("error")] + [r["name"] for r in rows if r.get("error")]


def _num(v, digits=3):
    return "?" if v is None else f"{v:.{digits}g}"


def value_of(metric, statuses):
    """The function giving a point's y value in the series of `metric` (median_ms, tflops,
    worst_ratio:OUTPUT of a passing output, or status as its index in `statuses`, status_order());
    None: the point is not in the series."""
    if metric == "status":
        return lambda p: statuses.index(p.status) if p.status in statuses else len(statuses)
    if metric.startswith("worst_ratio:"):
        out = metric.split(":", 1)[1]

        def ratio(p):
            passed, r = (tuple(p.outputs.get(out) or ()) + (False, None))[:2]
            return r if passed else None
        return ratio
    return lambda p: getattr(p, metric, None)


def metric_of(kind, f):
    if kind == "margin":
        return f.get("metric") or f"worst_ratio:{f['output']}"
    if kind == "flaky":
        return "status"
    return f["metric"]


def headline(kind, f, order_by, statuses):
    """The chart's title: what happened, where, and how much (a flaky case's statuses in the order
    of `statuses`, status_order())."""
    at = f"at {order_by} {f.get('rev')}"
    if f.get("first_rev") not in (None, f.get("rev")):
        at = f"at {order_by} {f['first_rev']} or {f['rev']}"
    if kind == "change":
        unit = UNITS.get(f["metric"], f["metric"])
        return (f"{f.get('finding') or f['direction']} {at}: {_num(f['before'])} → {_num(f['after'])} {unit} "
                f"(x{_num(f.get('ratio'))}) — {f.get('scope', '')}").rstrip(" —")
    if kind == "margin":
        rule = "exact" if f.get("p") is None else f"p = {f['p']:.2g}"
        return (f"{f['output']} margin {f['direction']} {at}: worst_ratio {_num(f['before'])} → "
                f"{_num(f['after'])} ({rule})")
    if kind == "flaky":
        seen = sorted({s for _, s in f["statuses"]}, key=lambda s: statuses.index(s) if s in statuses else 99)
        return f"flaky: {f['flips']} flip(s) between {', '.join(seen)}"
    if kind == "outlier":
        unit = UNITS.get(f["metric"], "")
        latest = " — the latest: a change if it stays" if f.get("latest") else ""
        return (f"outlier {at}: {_num(f['value'])} {unit}, typical {_num(f['typical'])} {unit} "
                f"(x{_num(f.get('ratio'))}){latest}").replace("  ", " ")
    raise ValueError(f"no chart for a finding of kind {kind}")


def subtitle(f):
    return f"{f['case']}  [{f['backend']}]  on {f['machine']}"


def y_range(values, margin=False):
    """The scale rule: the y range that fits `values` (the flagged machine's points) with a margin
    of 12% of their spread, the spread at least 10% of their size (a flat series is not zoomed into
    its noise). Margins start at 0 and show the bound (1) once a value is past 0.5."""
    lo, hi = min(values), max(values)
    if margin:
        top = max(hi, 1.0) if hi > 0.5 else hi
        return 0.0, (top * 1.12 if top > 0 else 1.0)
    floor = 0.1 * max(abs(lo), abs(hi)) or 1.0
    if hi - lo < floor:
        mid = (lo + hi) / 2
        lo, hi = mid - floor / 2, mid + floor / 2
    pad = 0.12 * (hi - lo)
    bottom = lo - pad
    if min(values) >= 0 and bottom < 0:
        bottom = 0.0
    return bottom, hi + pad


def chart(kind, f, points, outliers, order_by, statuses):
    """Everything both renderers draw for finding f: a dict (see the module's docstring).
    `outliers`: the outlier findings keyed by (case, backend, machine, metric); `statuses`: the
    status names a status chart stacks (status_order())."""
    metric = metric_of(kind, f)
    value = value_of(metric, statuses)
    timing = metric in UNITS
    mine = [p for p in points if p.case == f["case"] and p.backend == f["backend"] and value(p) is not None]
    revs = []
    for p in mine:  # points are in run order
        if p.rev not in revs:
            revs.append(p.rev)
    x_of = {r: i for i, r in enumerate(revs)}
    by_machine = defaultdict(list)
    for p in mine:
        by_machine[p.machine].append(p)
    # The outliers of the flagged machine's series: its own on an outlier's chart, every one of the
    # series on a change's (where the revisions they are at set neither the line nor the scale).
    marks = [f] if kind == "outlier" else outliers.get((f["case"], f["backend"], f["machine"], metric), [])
    marks = [o for o in marks if o["rev"] in x_of]
    odd = {o["rev"] for o in marks} if kind != "outlier" else set()
    unit = UNITS.get(metric, "")

    def shown(y):
        return statuses[y] if metric == "status" and y < len(statuses) else f"{y:.4g} {unit}".strip()

    series = []
    for machine, pts in sorted(by_machine.items(), key=lambda kv: (kv[0] != f["machine"], kv[0])):
        own = machine == f["machine"]
        # The line: each revision's value as the analysis takes it: the median of its runs (of a
        # timing, of those not judged noisy; a status: the worst); without the outliers' revisions.
        line, spread = [], {}
        for rev in revs:
            at = [p for p in pts if p.rev == rev]
            kept = [p for p in at if not (timing and getattr(p, "noisy_run", False))]
            if kept and not (own and rev in odd):
                ys = [value(p) for p in kept]
                line.append((x_of[rev], max(ys) if metric == "status" else statistics.median(ys)))
            for k, p in enumerate(at):  # several runs at one revision side by side
                spread[id(p)] = x_of[rev] + 0.12 * (k - (len(at) - 1) / 2)
        series.append({
            "machine": machine, "flagged": own, "line": line,
            "runs": [{"x": spread[id(p)], "y": value(p), "run": p.run, "rev": p.rev, "repro": p.repro,
                      "value": shown(value(p)) + ("" if p.cv is None or not timing else f", cv {p.cv:.2g}")
                      + (", noisy run" if getattr(p, "noisy_run", False) else "")
                      + (", outlier" if own and p.rev in {o["rev"] for o in marks} else ""),
                      "noisy_run": bool(getattr(p, "noisy_run", False)), "odd": own and p.rev in odd} for p in pts]})
    own_runs = next((s["runs"] for s in series if s["flagged"]), [])
    c = {"kind": kind, "title": headline(kind, f, order_by, statuses), "subtitle": subtitle(f), "revs": revs,
         "xlabel": order_by, "ylabel": AXIS_LABELS.get(metric) or f"worst_ratio of {f.get('output', metric)} (|err|/bound)",
         "series": series, "yrange": None, "ycats": None, "change_x": None, "change_span": None, "change_label": None,
         "bound": None, "noisy_x": sorted({x_of[r["rev"]] for r in own_runs if r["noisy_run"]}),
         "marks": [{"x": x_of[o["rev"]], "y": o["value"]} for o in marks if o.get("value") is not None]}
    _y_axis(c, kind, f, metric, statuses)
    for s in series:  # the legend's name of each machine
        s["label"] = s["machine"] + (" (flagged)" if s["flagged"] else " (off the scale)" if s.get("off_scale") else "")
    _change_line(c, kind, f)
    return c


def _y_axis(c, kind, f, metric, statuses):
    """Sets chart c's y axis: a status chart's categories (of `statuses`), else the range by the
    scale rule, the flagged machine's points off it, the machines off it and a margin's bound."""
    series = c["series"]
    if metric == "status":
        used = sorted({r["y"] for s in series for r in s["runs"]})
        c["ycats"] = [statuses[i] if i < len(statuses) else "other" for i in used]
        c["ycat_values"] = used
        return
    # The scale rule: the flagged machine's points (on a change's chart without its outliers'
    # revisions, which are drawn at the edge when off it), and the change's levels.
    own_runs = next((s["runs"] for s in series if s["flagged"]), [])
    scale = ([r["y"] for r in own_runs if not r["odd"]] or [r["y"] for r in own_runs]
             or [r["y"] for s in series for r in s["runs"]] or [0.0])
    scale += [m["y"] for m in c["marks"] if kind == "outlier"]
    if kind == "change":
        scale += [v for v in (f.get("before"), f.get("after")) if v is not None]
    c["yrange"] = y_range(scale, margin=metric.startswith("worst_ratio:"))
    lo, hi = c["yrange"]
    for r in own_runs + c["marks"]:
        r["clipped"] = "above" if r["y"] > hi else "below" if r["y"] < lo else None
    for s in series:
        s["off_scale"] = not s["flagged"] and all(not lo <= r["y"] <= hi for r in s["runs"])
    if metric.startswith("worst_ratio:") and hi >= 1.0:
        c["bound"] = 1.0


def _change_line(c, kind, f):
    """Sets chart c's dashed line before the revision of a change or a margin step, and the span
    before it where the change may start already (outliers between)."""
    x_of = {r: i for i, r in enumerate(c["revs"])}
    if kind in ("change", "margin") and f.get("rev") in x_of:
        c["change_x"] = x_of[f["rev"]] - 0.5
        first = f.get("first_rev") or f["rev"]
        if first != f["rev"] and first in x_of:  # it may start at first_rev already: outliers between
            c["change_span"] = (x_of[first] - 0.5, c["change_x"])
        c["change_label"] = f"{f.get('finding') or f['direction']} at {f['rev']}"


def _clip(y, c):
    lo, hi = c["yrange"]
    return min(max(y, lo), hi)


# --- PNG (matplotlib) ---------------------------------------------------------------------------

def draw_png(plt, c, path):
    fig, ax = plt.subplots(figsize=(10, 4.3), dpi=100)
    for i, x in enumerate(c["noisy_x"]):
        ax.axvspan(x - 0.45, x + 0.45, color=NOISY_COLOR, alpha=0.18, linewidth=0, zorder=0,
                   label="noisy run" if i == 0 else None)
    others = 0
    for s in c["series"]:  # the flagged machine first (its zorder puts it on top)
        xs, ys = zip(*s["line"]) if s["line"] else ((), ())
        rx, ry = [r["x"] for r in s["runs"]], [r["y"] for r in s["runs"]]
        if s["flagged"]:
            ax.plot(xs, ys, color=FLAGGED_COLOR, linewidth=2.4, zorder=4, label=s["label"])
            inside = [r for r in s["runs"] if not r.get("clipped")]
            ax.scatter([r["x"] for r in inside], [r["y"] for r in inside], s=16, color=FLAGGED_COLOR, zorder=5)
            for side, marker in (("above", "^"), ("below", "v")):
                off = [r for r in s["runs"] if r.get("clipped") == side]
                if off:
                    ax.scatter([r["x"] for r in off], [_clip(r["y"], c) for r in off], marker=marker, s=40,
                               color=FLAGGED_COLOR, zorder=5, clip_on=False, label=f"off the scale ({side})")
        else:
            color = OTHER_COLORS[others % len(OTHER_COLORS)]
            others += 1
            ax.plot(xs, ys, color=color, linewidth=1.0, alpha=0.45, zorder=2, label=s["label"])
            ax.scatter(rx, ry, s=6, color=color, alpha=0.45, zorder=2)
    if c["marks"]:
        ax.scatter([m["x"] for m in c["marks"]], [_clip(m["y"], c) if c["yrange"] else m["y"] for m in c["marks"]],
                   s=70, facecolors="none", edgecolors=OUTLIER_COLOR, linewidths=1.3, zorder=6, label="outlier",
                   clip_on=False)
    if c["change_span"]:
        ax.axvspan(*c["change_span"], color="grey", alpha=0.12, linewidth=0, zorder=0)
    if c["change_x"] is not None:
        ax.axvline(c["change_x"], color=CHANGE_COLOR, linestyle="--", linewidth=1, zorder=3)
    if c["bound"] is not None:
        ax.axhline(c["bound"], color="grey", linewidth=0.9, zorder=1)
        ax.annotate("bound (FAILED above)", xy=(0, c["bound"]), xycoords=("axes fraction", "data"), xytext=(3, 3),
                    textcoords="offset points", fontsize=8, color="grey")
    if c["yrange"]:
        ax.set_ylim(*c["yrange"])
    if c["ycats"]:
        ax.set_yticks(c["ycat_values"])
        ax.set_yticklabels(c["ycats"], fontsize=8)
        ax.set_ylim(min(c["ycat_values"]) - 0.5, max(c["ycat_values"]) + 0.5)
    n = len(c["revs"])
    step = max(1, math.ceil(n / 24))
    ax.set_xticks(range(0, n, step))
    ax.set_xticklabels(c["revs"][::step], rotation=45 if n > 12 else 0, ha="right" if n > 12 else "center", fontsize=8)
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_xlabel(c["xlabel"])
    ax.set_ylabel(c["ylabel"])
    fig.suptitle(c["title"], fontsize=11.5, fontweight="bold", x=0.01, ha="left")
    ax.set_title("\n".join(textwrap.wrap(c["subtitle"], 120)), fontsize=8, loc="left", color="#555")
    ax.grid(alpha=0.25)
    ax.legend(fontsize=7.5, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


# --- Plotly -------------------------------------------------------------------------------------

def _hover(text):
    return html.escape(str(text), quote=False)


def _wrap_hover(text, width=90):
    return "<br>".join(_hover(x) for x in textwrap.wrap(str(text), width)) or "(none)"


def plotly_figure(go, c):
    fig = go.Figure()
    hover = ("<b>%{customdata[0]}</b><br>run: %{customdata[1]}<br>" + _hover(c["xlabel"]) +
             ": %{customdata[2]}<br>repro: %{customdata[3]}<extra>%{fullData.name}</extra>")
    others = 0
    for s in c["series"]:
        name = _hover(s["label"])
        if s["flagged"]:
            color, width, size, opacity = FLAGGED_COLOR, 3, 7, 1.0
        else:
            color, width, size, opacity = OTHER_COLORS[others % len(OTHER_COLORS)], 1, 4, 0.45
            others += 1
        xs, ys = zip(*s["line"]) if s["line"] else ((), ())
        fig.add_trace(go.Scatter(x=list(xs), y=list(ys), mode="lines", name=name, legendgroup=name, showlegend=False,
                                 line={"color": color, "width": width}, opacity=opacity, hoverinfo="skip"))
        runs = s["runs"]
        ys = [_clip(r["y"], c) if s["flagged"] and c["yrange"] and r.get("clipped") else r["y"] for r in runs]
        symbols = [{"above": "triangle-up", "below": "triangle-down"}.get(r.get("clipped"), "circle") for r in runs]
        fig.add_trace(go.Scatter(
            x=[r["x"] for r in runs], y=ys, mode="markers", name=name, legendgroup=name, opacity=opacity,
            marker={"color": color, "size": size, "symbol": symbols}, cliponaxis=not s["flagged"],
            customdata=[[_hover(r["value"]) + (" (off the scale)" if r.get("clipped") else ""), _hover(r["run"]),
                         _hover(r["rev"]), _wrap_hover(r["repro"])] for r in runs],
            hovertemplate=hover))
    if c["marks"]:
        fig.add_trace(go.Scatter(
            x=[m["x"] for m in c["marks"]], y=[_clip(m["y"], c) if c["yrange"] else m["y"] for m in c["marks"]],
            mode="markers", name="outlier", cliponaxis=False, hoverinfo="skip",
            marker={"symbol": "circle-open", "size": 15, "color": OUTLIER_COLOR, "line": {"width": 2}}))
    shapes, notes = [], []
    for x in c["noisy_x"]:
        shapes.append({"type": "rect", "xref": "x", "yref": "paper", "x0": x - 0.45, "x1": x + 0.45, "y0": 0, "y1": 1,
                       "fillcolor": NOISY_COLOR, "opacity": 0.18, "line": {"width": 0}, "layer": "below"})
    if c["noisy_x"]:  # a legend entry for the bands
        fig.add_trace(go.Scatter(x=[None], y=[None], mode="markers", name="noisy run", hoverinfo="skip",
                                 marker={"symbol": "square", "size": 12, "color": NOISY_COLOR, "opacity": 0.4}))
    if c["change_span"]:
        shapes.append({"type": "rect", "xref": "x", "yref": "paper", "x0": c["change_span"][0], "x1": c["change_span"][1],
                       "y0": 0, "y1": 1, "fillcolor": "grey", "opacity": 0.12, "line": {"width": 0}, "layer": "below"})
    if c["change_x"] is not None:
        shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": c["change_x"], "x1": c["change_x"], "y0": 0,
                       "y1": 1, "line": {"color": CHANGE_COLOR, "width": 1.2, "dash": "dash"}})
        notes.append({"x": c["change_x"], "y": 1, "xref": "x", "yref": "paper", "text": _hover(c["change_label"]),
                      "showarrow": False, "xanchor": "left", "yanchor": "top", "xshift": 4, "font": {"size": 11}})
    if c["bound"] is not None:
        shapes.append({"type": "line", "xref": "paper", "yref": "y", "x0": 0, "x1": 1, "y0": c["bound"], "y1": c["bound"],
                       "line": {"color": "grey", "width": 1}})
        notes.append({"x": 0, "y": c["bound"], "xref": "paper", "yref": "y", "text": "bound (FAILED above)",
                      "showarrow": False, "xanchor": "left", "yanchor": "bottom", "font": {"size": 10, "color": "grey"}})
    n = len(c["revs"])
    step = max(1, math.ceil(n / 24))
    yaxis = {"title": {"text": _hover(c["ylabel"])}, "zeroline": False}
    if c["yrange"]:
        yaxis["range"] = list(c["yrange"])
    if c["ycats"]:
        yaxis.update(tickvals=c["ycat_values"], ticktext=c["ycats"],
                     range=[min(c["ycat_values"]) - 0.5, max(c["ycat_values"]) + 0.5])
    fig.update_layout(
        template="plotly_white", height=380, margin={"l": 60, "r": 20, "t": 56, "b": 50},
        title={"text": f"<b>{_hover(c['title'])}</b><br><span style='font-size:11px;color:#555'>"
                       f"{_hover(c['subtitle'])}</span>", "x": 0.01, "xanchor": "left", "font": {"size": 15}},
        xaxis={"title": {"text": _hover(c["xlabel"])}, "tickvals": list(range(0, n, step)),
               "ticktext": [_hover(r) for r in c["revs"][::step]], "range": [-0.6, n - 0.4], "zeroline": False},
        yaxis=yaxis, shapes=shapes, annotations=notes, hovermode="closest",
        legend={"orientation": "h", "y": -0.2, "x": 0, "font": {"size": 11}})
    return fig


# --- the page -----------------------------------------------------------------------------------

def _details(kind, f):
    """The finding in words, under its chart: (headline, [lines]), HTML."""
    e = html.escape
    if kind == "change":
        p = "" if f.get("p") is None else f", p = {f['p']:.2g}"
        head = (f"<b>{e(f.get('finding') or f['direction'])}</b>: {f['before']:.4g} &rarr; {f['after']:.4g} "
                f"{e(f['metric'])} (x{_num(f.get('ratio'))}){p}")
        extra = [f"scope: {e(f.get('scope', ''))}"]
        if f.get("noisy"):
            extra.append(f"<b>noisy</b> runs around it (at {e(', '.join(f.get('noisy_revs', [])))}): it may be the machine")
        for m in f.get("margins_worse", []):
            extra.append(f"margin of {e(m['output'])}: {m['before']:.4g} &rarr; {m['after']:.4g}")
    elif kind == "margin":
        rule = "exact (deterministic)" if f.get("p") is None else f"Otava, p = {f['p']:.2g}"
        head = (f"<b>{e(f['output'])} margin {e(f['direction'])}</b>: worst_ratio {f['before']:.4g} &rarr; "
                f"{f['after']:.4g} ({rule})")
        extra = []
    elif kind == "flaky":
        head = f"<b>flaky: {f['flips']} flip(s)</b>"
        extra = [_statuses(f["statuses"], e)]
        if f.get("same_rev"):
            extra.append(f"differs within revision(s) {e(', '.join(map(str, f['same_rev'])))}")
    else:  # outlier
        head = (f"<b>outlier</b>: {_num(f['value'], 4)} against a typical {_num(f['typical'], 4)} {e(f['metric'])} "
                f"(x{_num(f.get('ratio'))})")
        extra = [f"run {e(str(f['run']))}"]
        if f.get("latest"):
            extra.append("the latest revision: a change if it stays")
    if kind in ("change", "margin"):
        changed = "; ".join(f"{e(str(x['field']))} {e(str(x['before']))} &rarr; {e(str(x['after']))}"
                            for x in f.get("context_changes", []))
        extra.append(f"context changed at {e(str(f['rev']))}: {changed or 'nothing'}")
    where = f"rev {e(str(f['rev']))}: " if kind != "flaky" else ""
    return where + head, extra


def _statuses(statuses, e):
    """[[rev, status], ...] in words: where each unusual status was seen, then the usual one."""
    usual = statistics.mode(s for _, s in statuses)
    where = defaultdict(list)
    for r, s in statuses:
        if s != usual and str(r) not in where[s]:
            where[s].append(str(r))
    return "; ".join([f"<b>{e(s)}</b> at {e(', '.join(rs))}" for s, rs in where.items()] + [f"{e(usual)} otherwise"])


def _card(kind, f, n, png, div):
    e = html.escape
    head, extra = _details(kind, f)
    state = "flagged" if flagged(kind, f) else "better" if f.get("direction") in ("faster", "better") else "info"
    return (f"<div class='finding {state}' id='f{n}' data-kind='{kind}' data-chart='{e(png)}' "
            f"data-case='{e(f['case'])}' data-machine='{e(f['machine'])}'>\n"
            f"<div class='chart'>{div}</div>\n<div class='words'><p>{head}</p>"
            f"<p class='case'>{e(f['case'])}<br>backend {e(f['backend'])}, machine <b>{e(f['machine'])}</b></p>"
            + "".join(f"<p>{x}</p>" for x in extra)
            + f"<p>repro: <code>{e(f['repro'])}</code></p><p class='png'><a href='{e(png)}'>PNG</a></p></div></div>\n")


def _context_table(items, order_by):
    e = html.escape
    if not items:
        return "<p class='none'>none</p>\n"
    body = "".join(
        f"<tr><td>{e(str(c['machine']))}</td><td>{e(str(c.get('prev_rev', '')))} &rarr; {e(str(c['rev']))}</td><td>"
        + "<br>".join(f"{e(str(x['field']))}: {e(str(x['before']))} &rarr; {e(str(x['after']))}"
                      for x in c.get("context_changes", []))
        + f"</td><td>{e(str(c.get('cases', '')))}</td></tr>\n" for c in items)
    return (f"<table class='context'><tr><th>machine</th><th>{e(order_by)}</th><th>what changed</th>"
            f"<th>cases in the run</th></tr>\n{body}</table>\n")


def _noisy_table(items):
    e = html.escape
    if not items:
        return "<p class='none'>none</p>\n"
    body = "".join(f"<tr><td>{e(str(r['machine']))}</td><td>{e(str(r['rev']))}</td><td>{e(str(r['run']))}</td>"
                   f"<td>{e(str(r.get('cases', '')))}</td><td>{e('; '.join(r.get('reasons', [])))}</td></tr>\n" for r in items)
    return ("<table class='context'><tr><th>machine</th><th>revision</th><th>run</th><th>cases</th><th>why</th></tr>\n"
            f"{body}</table>\n")


def _summary(findings):
    ch, mg = findings.get("changes") or [], findings.get("margins") or []
    bad = [(sum(c.get("direction") == "slower" for c in ch), "slower"),
           (sum(m.get("direction") == "worse" for m in mg), "less accurate"),
           (len(findings.get("flaky") or []), "flaky")]
    good = [(sum(c.get("direction") == "faster" for c in ch), "faster"),
            (sum(m.get("direction") == "better" for m in mg), "more accurate"),
            (len(findings.get("outliers") or []), "outlier(s)"), (len(findings.get("context") or []), "context change(s)"),
            (len(findings.get("noisy_runs") or []), "noisy run(s)")]
    flagged_text = ", ".join(f"{n} {w}" for n, w in bad if n) or "nothing"
    other = ", ".join(f"{n} {w}" for n, w in good if n) or "nothing else"
    cls = "flagged" if any(n for n, _ in bad) else "clean"
    return f"<p class='summary {cls}'>Flagged: <b>{flagged_text}</b>. Also: {other}.</p>\n"


CSS = """body{font-family:sans-serif;margin:1em 2em;color:#222}
h2{border-bottom:1px solid #ccc;margin-top:1.6em}
.summary{font-size:1.15em;padding:.5em .8em;border-radius:4px;background:#f4f4f4}
.summary.flagged{background:#fdecea}.summary.clean{background:#eaf6ec}
.finding{display:flex;gap:1.2em;align-items:flex-start;margin:0 0 1.2em 0;padding:.4em 0 .4em .8em;border-left:5px solid #bbb}
.finding.flagged{border-left-color:#c0392b}.finding.better{border-left-color:#3a8f4b}
.chart{flex:0 0 820px;width:820px;min-height:380px}
.words{flex:1 1 auto;min-width:0;font-size:.92em}.words p{margin:.3em 0 .5em 0}
.case{color:#444}code{background:#eee;padding:1px 3px;word-break:break-all}
.none{color:#777}table.context{border-collapse:collapse}
table.context td,table.context th{border:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}
"""


def write_page(a, points, findings, notes):
    """Writes a.out/index.html, a.out/plotly.min.js and a.out/NNN-KIND.png for each finding with a
    chart. `findings`: {"changes", "margins", "flaky", "outliers", "context", "noisy_runs"}: lists
    of finding dicts (docs/tracking.md), any missing or empty; `points`: the cases' points (run,
    case, backend, machine, rev, status, repro, median_ms, tflops, cv, outputs, noisy_run), in run
    order. Returns 1 when something is flagged (a slower or less accurate change, a worse margin,
    a flaky case), else 0; 2 without matplotlib or plotly, or without an sdpabench that prints its
    status table ($SDPABENCH, else build/release/sdpabench: status_order())."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import plotly.graph_objects as go
        import plotly.io as pio
        import plotly.offline
    except ImportError as e:
        print(f"history plot: needs matplotlib and plotly ({e}): run scripts/history (the venv of scripts/setup.sh "
              "has them)", file=sys.stderr)
        return 2
    try:
        statuses = status_order()
    except TableError as e:
        print(f"history plot: {e}", file=sys.stderr)
        return 2
    order_by = getattr(a, "order_by", None) or "rev"
    os.makedirs(a.out, exist_ok=True)
    for name in os.listdir(a.out):  # an earlier page's plots: a folder published every night keeps none
        if re.fullmatch(r"[0-9]{3}-(%s)\.png" % "|".join(CHARTED), name):
            os.remove(os.path.join(a.out, name))
    with open(os.path.join(a.out, "plotly.min.js"), "w", encoding="utf-8") as fh:  # the venv's own: no network
        fh.write(plotly.offline.get_plotlyjs())
    outliers = defaultdict(list)
    for o in findings.get("outliers") or []:
        outliers[(o["case"], o["backend"], o["machine"], o["metric"])].append(o)
    sections, n = [], 0
    for key, kind, title in SECTIONS:
        items = findings.get(key) or []
        if kind == "change":
            title += f" ({getattr(a, 'metric', 'median_ms')})"
        if kind not in CHARTED:  # a short table
            table = _context_table(items, order_by) if kind == "context" else _noisy_table(items)
            sections.append(f"<h2>{html.escape(title)}: {len(items)}</h2>\n" + table)
            continue
        body = []
        for f in items:
            n += 1
            c = chart(kind, f, points, outliers, order_by, statuses)
            png = f"{n:03d}-{kind}.png"
            draw_png(plt, c, os.path.join(a.out, png))
            div = pio.to_html(plotly_figure(go, c), full_html=False, include_plotlyjs=False, div_id=f"chart-{n}",
                              default_height="380px", config={"displayModeBar": False, "responsive": True})
            body.append(_card(kind, f, n, png, div))
        sections.append(f"<h2>{html.escape(title)}: {len(items)}</h2>\n" + ("".join(body) or "<p class='none'>none</p>\n"))
    runs = len({p.run for p in points})
    page = ("<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>sdpabench history</title>\n"
            f"<style>{CSS}</style>\n<script src='plotly.min.js'></script>\n</head><body>\n"
            "<h1>sdpabench: what changed</h1>\n" + _summary(findings) +
            f"<p>{runs} run(s), ordered by {html.escape(order_by)}; generated "
            f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC by scripts/history plot (docs/tracking.md). "
            "Hover a point for its run and repro line; click a machine in a legend to hide it, drag to zoom, double-click "
            "to zoom back; the y axis fits "
            "the flagged machine (other machines faint, they may leave the chart).</p>\n"
            + "".join(f"<p><i>note: {html.escape(x)}</i></p>\n" for x in notes)
            + "".join(sections) + "</body></html>\n")
    with open(os.path.join(a.out, "index.html"), "w", encoding="utf-8") as fh:
        fh.write(page)
    print(f"{n} plot(s) and index.html in {a.out}")
    return 1 if any(flagged(kind, f) for key, kind, _ in SECTIONS for f in findings.get(key) or []) else 0
