#!/usr/bin/env python3
"""What changed across revisions and machines, from sdpabench's results store (docs/tracking.md).

Run it as scripts/history (which finds the Python of scripts/setup.sh's venv). Every subcommand
reads the store given by --db (sqlite:PATH or postgresql:URL, as --report takes them), prints a
table (or with --json a JSON list) and exits 1 when it flags something, 0 when not, 2 for bad
usage or an unreadable store.

  ingest FILE.jsonl...  store JSONL reports (runs build/release/sdpabench-store, or
                        $SDPABENCH_STORE): each file is a run or one shard of a run
  runs                  the runs: key, order value, machines, start, cases, complete or not
  changes               change points in each timing series, by Apache Otava's analysis
                        (otava.series.Series.analyze: E-divisive split, t-test merge); each says
                        the series, the revision where it starts, the direction (slower, faster)
                        and size, the p-value, what else changed in the run context there
                        (libraries, sdpabench's commit, threads, ... : Otava's attributes), which
                        machines saw it ("this machine only" when others did not), the noisy runs
                        around it, and "and less accurate" when an output's margin got worse at
                        the same revision; flags slower changes and less accurate ones
  margins               steps in each output's worst_ratio (|err|/bound of its worst element) over
                        the passing runs, ranked by how close the new margin is to 1, with the
                        case's repro line; flags the steps that got worse
  flaky                 cases whose status differs between runs at one revision, or goes back
                        and forth across revisions; flags every one
  plot --out=DIR        one PNG per flagged series (revisions on the x axis, one line per
                        machine, the change marked) and DIR/index.html listing them

A series is (case id, backend, machine, metric). The machine is the run's --tags=machine:NAME, else
"HOST (CPU[; GPU]; N threads)" from its context. Runs are ordered by the tag --order-by names
(default rev when any run has one, else the start time), numerically when every value is a
number; runs without that tag are left out (said on stderr). Incomplete runs (killed, or a shard
missing) are left out unless --include-incomplete.

Margins: with fixed seeds a deterministic backend gives the same worst_ratio every run, so every
change between two consecutive runs is a step (rule "exact", p null). A series is taken as
non-deterministic when one revision holds two different values, or when more than half of its
consecutive runs differ (atomics, a cuDNN backward without --deterministic); its steps are Otava's
change points, as for timings (rule "otava").
"""
import argparse
import fnmatch
import json
import logging
import math
import os
import sqlite3
import statistics
import subprocess
import sys
import urllib.parse
from collections import defaultdict
from dataclasses import dataclass, field

SCHEMA_VERSIONS = (1,)  # the store schema versions this reader knows (reports/results_store.hpp)
TIMING_METRICS = {"median_ms": "median time, ms", "tflops": "TFLOP/s at the median time"}
NOISE_WINDOW = 3  # runs on each side of a change whose noisy flag is reported with it
MIN_POINTS = 4    # a series needs this many runs before any change is looked for


class Unusable(Exception):
    """A store that cannot be read, or bad usage: exit 2 with the message."""


# --- the store ----------------------------------------------------------------------------------

def connect(db):
    """A DB-API connection to the store `db` ("sqlite:PATH" or "postgresql:URL"), read-only."""
    kind, sep, target = db.partition(":")
    if not sep or not target or kind not in ("sqlite", "postgresql"):
        # Not the text itself: a URL may hold a password (docs/tracking.md#passwords).
        raise Unusable(f"--db: expects sqlite:PATH or postgresql:URL, got {'kind ' + repr(kind) if sep else 'no KIND:'}")
    if kind == "sqlite":
        if not os.path.isfile(target):
            raise Unusable(f"--db: no store at {target} (sdpabench --report=sqlite:{target} makes one)")
        # mode=rw, not ro: a reader must be able to roll back the journal a killed writer left.
        return sqlite3.connect(f"file:{urllib.parse.quote(target)}?mode=rw", uri=True, timeout=60)
    try:
        import psycopg
    except ImportError:
        raise Unusable("postgresql stores need psycopg: run scripts/history (the venv of scripts/setup.sh has it)")
    try:
        return psycopg.connect(target, autocommit=True)
    except psycopg.Error as e:
        raise Unusable(f"--db: cannot connect to the PostgreSQL store: {e}".strip())


def rows(conn, sql):
    cur = conn.cursor()
    cur.execute(sql)
    return cur.fetchall()


def flag(v):
    """A stored flag or JSON boolean (1/0 from SQLite, 'true'/'false' text from PostgreSQL's ->>)."""
    return v in (1, True, "1", "true")


def number(v):
    """A stored number or JSON number as float (PostgreSQL's ->> gives text), None when absent."""
    if v is None or v == "":
        return None
    x = float(v)
    return x if math.isfinite(x) else None


@dataclass
class Point:
    """One case in one run: a point of each of its series."""
    run: str
    case: str
    backend: str
    machine: str
    rev: str            # the order tag's value (or the start time), as text
    order: tuple        # the sort key
    status: str
    noisy: bool
    repro: str
    median_ms: float = None
    tflops: float = None
    cv: float = None
    attributes: dict = field(default_factory=dict)  # the context facts "what else changed" compares
    outputs: dict = field(default_factory=dict)     # output -> (pass, worst_ratio or None)


def machine_of(ctx):
    tags = ctx.get("tags") or {}
    if tags.get("machine"):
        return tags["machine"]
    gpu = f"; {ctx['gpu']}" if ctx.get("gpu") else ""
    return f"{ctx.get('host', '?')} ({ctx.get('cpu', '?')}{gpu}; {ctx.get('threads', '?')} threads)"


def attributes_of(ctx, order_by):
    """The context facts whose change "changes" reports: versions, commit, machine, threads, tags."""
    out = {k: str(ctx.get(k, "")) for k in ("sdpabench", "git_commit", "host", "cpu", "gpu", "threads")}
    for name, version in (ctx.get("libraries") or {}).items():
        out[f"libraries.{name}"] = str(version)
    for k, v in (ctx.get("tags") or {}).items():
        if k not in ("run", "machine", order_by):
            out[f"tags.{k}"] = str(v)
    return out


def load(db, order_by=None, include_incomplete=False, notes=None):
    """Every case point of the store's complete runs (all runs with include_incomplete), ordered.
    `notes` gets a line for each thing left out. Returns (points, order_by used)."""
    notes = notes if notes is not None else []
    conn = connect(db)
    try:
        try:
            version = rows(conn, "SELECT MAX(version) FROM store_schema")[0][0]
        except Exception as e:  # sqlite3.Error, psycopg.Error
            raise Unusable(f"--db: {db} is not an sdpabench results store ({str(e).strip()})")
        if version not in SCHEMA_VERSIONS:
            raise Unusable(f"--db: the store has schema version {version}; this scripts/history reads "
                           f"{', '.join(map(str, SCHEMA_VERSIONS))}: use the sdpabench checkout that wrote it")
        complete = {k: flag(c) for k, c in rows(conn, "SELECT run_key, complete FROM run_state")}
        # psycopg decodes JSON columns itself; sqlite3 gives the text.
        contexts = {(k, p): c if isinstance(c, dict) else json.loads(c)
                    for k, p, c in rows(conn, "SELECT run_key, part, context FROM run_parts")}
        cases = rows(conn, "SELECT run_key, case_id, part, status, backend, noisy, record ->> 'repro', "
                           "record -> 'perf' ->> 'median_ms', record -> 'perf' ->> 'tflops', "
                           "record -> 'perf' ->> 'cv' FROM cases")
        outputs = defaultdict(dict)
        for k, c, o, p, w in rows(conn, "SELECT run_key, case_id, output, pass, worst_ratio FROM case_outputs"):
            outputs[(k, c)][o] = (flag(p), number(w))
    finally:
        conn.close()
    left = sorted(k for k, c in complete.items() if not c)
    if left and not include_incomplete:
        notes.append(f"{len(left)} incomplete run(s) left out (--include-incomplete takes them): {', '.join(left)}")
    if order_by is None:
        order_by = "rev" if any("rev" in (c.get("tags") or {}) for c in contexts.values()) else "start"
    orders, missing = {}, set()
    for key, ctx in contexts.items():
        if not include_incomplete and not complete.get(key[0], False):
            continue
        v = ctx.get("start") if order_by == "start" else (ctx.get("tags") or {}).get(order_by)
        if v is None:
            missing.add(key[0])
        else:
            orders[key] = str(v)
    if missing:
        notes.append(f"{len(missing)} run(s) without a {order_by} tag left out: {', '.join(sorted(missing))}")
    numeric = all(_is_number(v) for v in orders.values())
    points = []
    for run, case, part, status, backend, noisy, repro, median, tflops, cv in cases:
        if (run, part) not in orders:
            continue
        ctx = contexts[(run, part)]
        rev = orders[(run, part)]
        points.append(Point(run=run, case=case, backend=backend, machine=machine_of(ctx), rev=rev,
                            order=(float(rev) if numeric else rev, ctx.get("start", ""), run),
                            status=status, noisy=flag(noisy), repro=repro or "", median_ms=number(median),
                            tflops=number(tflops), cv=number(cv), attributes=attributes_of(ctx, order_by),
                            outputs=outputs.get((run, case), {})))
    points.sort(key=lambda p: p.order)
    return points, order_by


def _is_number(v):
    try:
        return math.isfinite(float(v))
    except ValueError:
        return False


def select(points, a):
    """The points the --case, --backend and --machine filters (globs) keep."""
    return [p for p in points
            if fnmatch.fnmatchcase(p.case, a.case) and fnmatch.fnmatchcase(p.backend, a.backend)
            and fnmatch.fnmatchcase(p.machine, a.machine)]


def series(points, key):
    """Points grouped by key(point), each group in run order (points are sorted already)."""
    out = defaultdict(list)
    for p in points:
        k = key(p)
        if k is not None:
            out[k].append(p)
    return out


def moving_with_revision(pts):
    """Attributes that change at every new revision of a series (a commit time, a build number):
    they tell nothing about what else changed at one revision."""
    steps = [(a.attributes, b.attributes) for a, b in zip(pts, pts[1:]) if a.rev != b.rev]
    names = {k for p in pts for k in p.attributes}
    return {k for k in names if steps and all(x.get(k, "") != y.get(k, "") for x, y in steps)}


def context_changes(before, after, ignore=()):
    """[{field, before, after}] of the attributes that differ between two points."""
    return [{"field": k, "before": before.get(k, ""), "after": after.get(k, "")}
            for k in sorted(set(before) | set(after)) if k not in ignore and before.get(k, "") != after.get(k, "")]


# --- analyses -----------------------------------------------------------------------------------

def otava_options(a):
    from otava.series import AnalysisOptions
    o = AnalysisOptions()
    o.max_pvalue = a.max_pvalue
    o.min_magnitude = a.min_magnitude
    o.window_len = a.window
    return o


def revisions(pts):
    """[(rev, [points at that revision])] in run order: a series has one value per revision."""
    out = []
    for p in pts:
        if out and out[-1][0] == p.rev:
            out[-1][1].append(p)
        else:
            out.append((p.rev, [p]))
    return out


def timing_changes(points, a):
    """Otava's change points of every (case, backend, machine) series of metric a.metric, one
    value per revision: the median of its runs' values (statistics.median), so that a change
    always starts at a revision."""
    from otava.series import Metric, Series
    found = []
    by_series = series(points, lambda p: (p.case, p.backend, p.machine) if getattr(p, a.metric) is not None else None)
    for (case, backend, machine), pts in by_series.items():
        revs = revisions(pts)
        if len(revs) < MIN_POINTS:
            continue
        firsts = [group[0] for _, group in revs]  # the context of a revision: its first run's
        names = sorted({k for p in firsts for k in p.attributes})
        s = Series(case, None, list(range(len(revs))), {a.metric: Metric(1 if a.metric == "median_ms" else -1, 1.0)},
                   {a.metric: [statistics.median(getattr(p, a.metric) for p in group) for _, group in revs]},
                   {n: [p.attributes.get(n, "") for p in firsts] for n in names})
        for group in s.analyze(otava_options(a)).change_points_by_time:
            cp, k = group.changes[0], group.index
            before, after = float(cp.stats.mean_1), float(cp.stats.mean_2)
            up = after > before
            slower = up if a.metric == "median_ms" else not up
            around = [p for _, g in revs[max(0, k - NOISE_WINDOW):k + NOISE_WINDOW] for p in g]
            pval = float(cp.stats.pvalue)
            found.append({
                "case": case, "backend": backend, "machine": machine, "metric": a.metric,
                "rev": revs[k][0], "prev_rev": revs[k - 1][0],
                "direction": "slower" if slower else "faster",
                "before": before, "after": after, "ratio": after / before if before else None,
                "p": pval if math.isfinite(pval) else None,
                "context_changes": context_changes(group.prev_attributes, group.attributes, moving_with_revision(firsts)),
                "noisy": any(p.noisy for p in around),
                "noisy_revs": sorted({p.rev for p in around if p.noisy}, key=[r for r, _ in revs].index),
                "repro": revs[k][1][-1].repro, "index": k,
            })
    _scope(found, points, a.metric)
    return found


def _scope(found, points, metric):
    """Adds which machines saw each change at its revision, and "scope"."""
    seen = defaultdict(set)
    for f in found:
        seen[(f["case"], f["backend"], f["rev"], f["direction"])].add(f["machine"])
    spans = defaultdict(list)  # (case, backend, machine) -> run orders with the metric
    for p in points:
        if getattr(p, metric) is not None:
            spans[(p.case, p.backend, p.machine)].append(p)
    for f in found:
        changed = sorted(seen[(f["case"], f["backend"], f["rev"], f["direction"])])
        unchanged = []
        for (case, backend, machine), pts in spans.items():
            if case != f["case"] or backend != f["backend"] or machine in changed:
                continue
            at = [p for p in pts if p.rev == f["rev"]]
            if at and any(p.order < at[0].order for p in pts):  # it ran before and at that revision
                unchanged.append(machine)
        f["machines_changed"], f["machines_unchanged"] = changed, sorted(unchanged)
        f["scope"] = ("this machine only" if unchanged and len(changed) == 1 else
                      f"{len(changed)} of {len(changed) + len(unchanged)} machines" if unchanged else
                      f"every machine that ran it ({len(changed)})")


def margin_steps(points, a):
    """Steps in each (case, backend, machine, output) worst_ratio series of passing outputs."""
    from otava.analysis import compute_change_points
    found = []
    keyed = defaultdict(list)
    for p in points:
        for out, (passed, ratio) in p.outputs.items():
            if passed and ratio is not None:
                keyed[(p.case, p.backend, p.machine, out)].append((p, ratio))
    for (case, backend, machine, out), pr in keyed.items():
        pts, values = [p for p, _ in pr], [r for _, r in pr]
        if len(pts) < 2:
            continue
        per_rev = defaultdict(set)
        for p, v in pr:
            per_rev[p.rev].add(v)
        differ = sum(values[i] != values[i - 1] for i in range(1, len(values)))
        deterministic = all(len(v) == 1 for v in per_rev.values()) and differ <= (len(values) - 1) / 2
        if deterministic:
            steps = [(i, values[i - 1], values[i], None) for i in range(1, len(values)) if values[i] != values[i - 1]]
        else:
            # One value per revision (the median of its runs'), as for timings; a step is at a
            # revision's first run.
            revs = revisions(pts)
            at = {id(p): i for i, p in enumerate(pts)}
            firsts = [at[id(group[0])] for _, group in revs]
            per_rev = [statistics.median(values[at[id(p)]] for p in group) for _, group in revs]
            steps = []
            if len(revs) >= MIN_POINTS:
                cps, _ = compute_change_points(per_rev, window_len=a.window, max_pvalue=a.max_pvalue,
                                               min_magnitude=a.min_magnitude)
                steps = [(firsts[int(c.index)], float(c.stats.mean_1), float(c.stats.mean_2),
                          float(c.stats.pvalue) if math.isfinite(c.stats.pvalue) else None) for c in cps]
        for i, before, after, pval in steps:
            found.append({
                "case": case, "backend": backend, "machine": machine, "metric": f"worst_ratio:{out}", "output": out,
                "rev": pts[i].rev, "prev_rev": pts[i - 1].rev, "direction": "worse" if after > before else "better",
                "before": before, "after": after, "p": pval, "rule": "exact" if deterministic else "otava",
                "context_changes": context_changes(pts[i - 1].attributes, pts[i].attributes, moving_with_revision(pts)),
                "repro": pts[i].repro, "index": i,
            })
    # Worse steps first, the new margin closest to 1 first; then the better ones.
    found.sort(key=lambda f: (f["direction"] != "worse", -f["after"]))
    return found


def flaky_cases(points):
    """Cases whose status differs within one revision, or goes back and forth across revisions."""
    found = []
    for (case, backend, machine), pts in series(points, lambda p: (p.case, p.backend, p.machine)).items():
        statuses = [p.status for p in pts]
        per_rev = defaultdict(set)
        for p in pts:
            per_rev[p.rev].add(p.status)
        same_rev = [r for r, s in per_rev.items() if len(s) > 1]
        runs = [s for i, s in enumerate(statuses) if i == 0 or s != statuses[i - 1]]  # consecutive repeats merged
        if same_rev or len(runs) != len(set(runs)):
            found.append({"case": case, "backend": backend, "machine": machine, "metric": "status",
                          "flips": sum(statuses[i] != statuses[i - 1] for i in range(1, len(statuses))),
                          "same_rev": same_rev, "statuses": [[p.rev, p.status] for p in pts],
                          "repro": pts[-1].repro})
    found.sort(key=lambda f: -f["flips"])
    return found


def join_accuracy(changes, steps):
    """A timing change and a worse margin step of the same series at the same revision are one
    finding: "faster, and less accurate" (or "slower, and less accurate")."""
    worse = defaultdict(list)
    for s in steps:
        if s["direction"] == "worse":
            worse[(s["case"], s["backend"], s["machine"], s["rev"])].append(
                {"output": s["output"], "before": s["before"], "after": s["after"]})
    for c in changes:
        m = worse.get((c["case"], c["backend"], c["machine"], c["rev"]), [])
        c["margins_worse"] = m
        c["finding"] = f"{c['direction']}, and less accurate" if m else c["direction"]


# --- output -------------------------------------------------------------------------------------

def fmt_num(v, digits=4):
    return "" if v is None else f"{v:.{digits}g}"


def table(items, columns):
    from tabulate import tabulate
    return tabulate([[fn(i) for _, fn in columns] for i in items], headers=[h for h, _ in columns])


def changed_text(f):
    return "; ".join(f"{c['field']} {c['before']} -> {c['after']}" for c in f["context_changes"]) or "nothing"


CHANGE_COLUMNS = [
    ("case", lambda f: f["case"]), ("backend", lambda f: f["backend"]), ("machine", lambda f: f["machine"]),
    ("rev", lambda f: f["rev"]), ("finding", lambda f: f["finding"]),
    ("size", lambda f: f"{fmt_num(f['before'])} -> {fmt_num(f['after'])} {f['metric']} (x{fmt_num(f['ratio'], 3)})"),
    ("p", lambda f: fmt_num(f["p"], 2)), ("scope", lambda f: f["scope"]),
    ("noisy", lambda f: f"noisy at {', '.join(f['noisy_revs'])}" if f["noisy"] else ""),
    ("context changed", changed_text),
]
MARGIN_COLUMNS = [
    ("case", lambda f: f["case"]), ("backend", lambda f: f["backend"]), ("machine", lambda f: f["machine"]),
    ("output", lambda f: f["output"]), ("rev", lambda f: f["rev"]), ("direction", lambda f: f["direction"]),
    ("worst_ratio", lambda f: f"{fmt_num(f['before'])} -> {fmt_num(f['after'])}"),
    ("rule", lambda f: f["rule"] if f["p"] is None else f"{f['rule']} p={fmt_num(f['p'], 2)}"),
    ("context changed", changed_text), ("repro", lambda f: f["repro"]),
]
FLAKY_COLUMNS = [
    ("case", lambda f: f["case"]), ("backend", lambda f: f["backend"]), ("machine", lambda f: f["machine"]),
    ("flips", lambda f: f["flips"]), ("same revision", lambda f: ", ".join(f["same_rev"])),
    ("statuses by revision", lambda f: " ".join(f"{r}:{s}" for r, s in f["statuses"])), ("repro", lambda f: f["repro"]),
]


def public(items):
    return [{k: v for k, v in i.items() if k != "index"} for i in items]


def report(a, items, columns, what, flagged):
    if a.json:
        print(json.dumps(public(items), indent=1))
    elif items:
        print(table(items, columns))
    else:
        print(f"no {what}")
    return 1 if any(flagged(i) for i in items) else 0


def ingest(a):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    exe = os.environ.get("SDPABENCH_STORE") or os.path.join(root, "build", "release", "sdpabench-store")
    if not os.access(exe, os.X_OK):
        raise Unusable(f"ingest needs {exe} (scripts/build.sh builds it; $SDPABENCH_STORE names another)")
    return subprocess.run([exe, "ingest", f"--db={a.db}", *a.files]).returncode


def list_runs(a, notes):
    points, order_by = load(a.db, a.order_by, include_incomplete=True, notes=[])
    conn = connect(a.db)
    try:
        state = rows(conn, "SELECT run_key, complete, parts, shard_count, first_start FROM run_state")
    finally:
        conn.close()
    per_run = series(points, lambda p: p.run)
    items = []
    for key, complete, parts, shards, start in sorted(state, key=lambda r: str(r[4])):
        pts = per_run.get(key, [])
        items.append({"run": key, order_by: pts[0].rev if pts else None, "machines": sorted({p.machine for p in pts}),
                      "start": start, "cases": len(pts), "parts": f"{parts}/{shards}", "complete": flag(complete)})
    if a.json:
        print(json.dumps(items, indent=1))
    else:
        print(table(items, [(k, (lambda k: lambda i: i[k] if not isinstance(i[k], list) else ", ".join(i[k]))(k))
                            for k in ("run", order_by, "machines", "start", "cases", "parts", "complete")]))
    return 0


def main(argv=None):
    logging.basicConfig(level=logging.WARNING)
    ap = argparse.ArgumentParser(prog="scripts/history", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", required=True, help="the store: sqlite:PATH or postgresql:URL")
    common.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    common.add_argument("--order-by", help="the tag that orders runs (default rev when present, else the start time); "
                                           "'start' orders by start time")
    common.add_argument("--include-incomplete", action="store_true", help="also read runs that did not complete")
    common.add_argument("--case", default="*", help="only case ids matching this glob")
    common.add_argument("--backend", default="*", help="only backends matching this glob")
    common.add_argument("--machine", default="*", help="only machines matching this glob")
    otava = argparse.ArgumentParser(add_help=False)
    otava.add_argument("--metric", choices=sorted(TIMING_METRICS), default="median_ms", help="the timing metric")
    otava.add_argument("--max-pvalue", type=float, default=0.001, help="Otava's max_pvalue (default %(default)s)")
    otava.add_argument("--min-magnitude", type=float, default=0.05,
                       help="Otava's min_magnitude: smaller relative changes are not reported (default %(default)s)")
    otava.add_argument("--window", type=int, default=50, help="Otava's window_len (default %(default)s)")
    p = sub.add_parser("ingest", help="store JSONL reports")
    p.add_argument("--db", required=True, help="the store: sqlite:PATH or postgresql:URL")
    p.add_argument("files", nargs="+", help="JSONL reports (--report=jsonl:PATH)")
    sub.add_parser("runs", parents=[common], help="list the runs")
    sub.add_parser("changes", parents=[common, otava], help="change points of the timing series")
    sub.add_parser("margins", parents=[common, otava], help="steps of the outputs' worst_ratio")
    sub.add_parser("flaky", parents=[common], help="cases whose status flips")
    p = sub.add_parser("plot", parents=[common, otava], help="a PNG per flagged series and index.html")
    p.add_argument("--out", required=True, help="folder for the PNGs and index.html")
    a = ap.parse_args(argv)
    notes = []
    try:
        if a.cmd == "ingest":
            return ingest(a)
        if a.cmd == "runs":
            return list_runs(a, notes)
        points, a.order_by = load(a.db, a.order_by, a.include_incomplete, notes)
        points = select(points, a)
        for n in notes:
            print(f"history: note: {n}", file=sys.stderr)
        if a.cmd == "flaky":
            return report(a, flaky_cases(points), FLAKY_COLUMNS, "flaky case", lambda f: True)
        steps = margin_steps(points, a)
        if a.cmd == "margins":
            return report(a, steps, MARGIN_COLUMNS, "margin step", lambda f: f["direction"] == "worse")
        changes = timing_changes(points, a)
        join_accuracy(changes, steps)
        if a.cmd == "changes":
            return report(a, changes, CHANGE_COLUMNS, "change",
                          lambda f: f["direction"] == "slower" or bool(f["margins_worse"]))
        from history_page import write_page
        return write_page(a, points, changes, steps, flaky_cases(points), notes)
    except Unusable as e:
        print(f"history: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
