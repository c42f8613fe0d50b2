#!/usr/bin/env python3
"""What changed across revisions and machines, from sdpabench's results store (docs/tracking.md).

Run it as scripts/history (which finds the Python of scripts/setup.sh's venv). Every subcommand
reads the store given by --db (sqlite:PATH or postgresql:URL, as --report takes them), prints a
table (or with --json a JSON list) and exits 1 when it flags something, 0 when not, 2 for bad
usage or an unreadable store.

  ingest FILE.jsonl...  store JSONL reports (runs build/release/sdpabench-store, or
                        $SDPABENCH_STORE): each file is a run or one shard of a run
  runs                  the runs: key, order value, machines, start, cases, complete or not
  changes               what happened to each timing series, one finding per line: changes
                        (scripts/history_detect.py: outliers named, a robust step test, Otava's
                        change points as candidates; --method=otava: Otava's analysis alone),
                        each with its revision, direction, size, p-value, what else changed in
                        the run context there, which machines saw it ("this machine only" when
                        others did not), the noisy runs around it, and "and less accurate" when
                        an output's margin got worse at the same revision; outliers ("outlier
                        at rev N"); noisy runs, judged from each run's noise samples and its
                        cases moving together; and context changes of each machine. Flags
                        slower changes and less accurate ones
  margins               steps in each output's worst_ratio (|err|/bound of its worst element) over
                        the passing runs, ranked by how close the new margin is to 1, with the
                        case's repro line; flags the steps that got worse
  flaky                 cases whose status differs between runs at one revision, or goes back
                        and forth across revisions; flags every one
  bench                 the detection-power benchmark (scripts/history_bench.py: synthetic nightly
                        series; bench --help)
  plot --out=DIR        DIR/index.html: every finding, each charted on its machine's own
                        scale (Plotly, its JavaScript written beside the page: hover a point
                        for its run and repro line, click a machine to hide it), and one PNG
                        per charted finding

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
import re
import sqlite3
import statistics
import subprocess
import sys
import urllib.parse
from collections import defaultdict
from dataclasses import dataclass, field

SCHEMA_VERSIONS = (1, 2)  # the store schema versions this reader knows (reports/results_store.cpp migrations)
# The timing metrics a series may be of: what each is (its axis label on the page), its unit, and
# which way is better.
TIMING_METRICS = {"median_ms": {"what": "median time (ms)", "unit": "ms", "lower_is_better": True},
                  "tflops": {"what": "TFLOP/s at the median time", "unit": "TFLOP/s", "lower_is_better": False}}
NOISE_WINDOW = 3  # revisions on each side of a change whose noisy runs are reported with it
MIN_POINTS = 4    # a series needs this many revisions before any change is looked for
# The run context's fields whose change between two runs of a machine is a finding ("context")
# and is named with a change at that revision (reports/jsonl_reporter.cpp context_record).
CONTEXT_FIELDS = ("sdpabench", "git_commit", "build_type", "host", "cpu", "gpu", "threads", "cpus", "isa",
                  "cpu_governor")
# A run is noisy (judge_runs) from its context's noise samples (docs/output.md#the-machines-noise)
# when its calibration kernel's median ran CALIB_SLOW x the machine's median or moved that much
# between the run's start and end; when more than CALIB_CUT of its repetitions were interrupted
# (calib_slow: a few percent on a quiet machine, 28% with busy loops beside a run of one thread;
# the repetitions' spread calib_cv is no evidence: one interrupted repetition makes it 0.2-0.5);
# or when more than STEAL of the CPU time of the whole run (STEAL_JIFFIES or more) was stolen.
# The 1-minute load average is named with that evidence but is none itself: the minute before a
# run (a build, the run before it) is in it, and a minute after four busy loops per CPU had
# stopped it still read 3.2 on two CPUs.
CALIB_SLOW = 1.25
CALIB_CUT = 0.25
STEAL = 0.05
STEAL_JIFFIES = 100
MIN_TOGETHER = 3  # cases a run needs before its cases moving together says anything about it


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
    if target.startswith("//"):
        # "postgresql://..." read as KIND "postgresql" and target "//...": libpq would echo it.
        raise Unusable("--db: expects postgresql:URL, and the URL has its own scheme: "
                       "--db=postgresql:postgresql://USER@HOST:PORT/DATABASE")
    try:
        return psycopg.connect(target, autocommit=True)
    except psycopg.Error as e:
        # libpq's reason may quote the text, password and all (docs/tracking.md#passwords).
        secret = "@" in target or "password" in target.lower()
        why = "its reason is left out: the URL holds a password" if secret else str(e).strip()
        raise Unusable(f"--db: cannot connect to the PostgreSQL store ({why})")


def _json(v):
    """A stored JSON column: psycopg decodes it itself, sqlite3 gives the text (None: NULL or
    not JSON)."""
    if v is None or isinstance(v, (dict, list)):
        return v
    try:
        return json.loads(v)
    except (TypeError, ValueError):
        return None


def _dict(v):
    """v when it is a JSON object, else {} (a report written by hand may hold anything)."""
    return v if isinstance(v, dict) else {}


def rows(conn, sql):
    cur = conn.cursor()
    cur.execute(sql)
    return cur.fetchall()


def flag(v):
    """A stored flag or JSON boolean (1/0 from SQLite, 'true'/'false' text from PostgreSQL's ->>)."""
    return v in (1, True, "1", "true")


def number(v):
    """A stored number or JSON number as float (PostgreSQL's ->> gives text), None when absent,
    not finite or not a number (a boolean, a word)."""
    if v is None or isinstance(v, bool) or v in ("", "true", "false"):
        return None
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def positive(v):
    """number(v) when it is above 0 (a time, a rate), else None."""
    x = number(v)
    return x if x is not None and x > 0 else None


def share(v):
    """number(v) when it is in [0, 1] (a share of repetitions or of CPU time), else None."""
    x = number(v)
    return x if x is not None and 0 <= x <= 1 else None


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
    noise: dict = field(default_factory=dict)       # the run's noise samples: {"start": {...}, "end": {...}}
    threads: int = 0                                # the run's OpenMP threads
    cpus: int = 0                                   # the CPUs the run could use
    noisy_run: bool = False                         # the run was judged noisy (judge_runs)


def machine_of(ctx):
    """The machine of a run: its --tags=machine:, else "HOST (CPU[; GPU]; N threads)"."""
    tags = _dict(ctx.get("tags"))
    if tags.get("machine"):
        return tags["machine"]
    gpu = f"; {ctx['gpu']}" if ctx.get("gpu") else ""
    return f"{ctx.get('host', '?')} ({ctx.get('cpu', '?')}{gpu}; {ctx.get('threads', '?')} threads)"


def attributes_of(ctx, order_by):
    """The context facts whose change "changes" reports: versions, commit, machine, threads, tags."""
    out = {k: str(ctx.get(k, "")) for k in CONTEXT_FIELDS}
    for name, version in _dict(ctx.get("libraries")).items():
        out[f"libraries.{name}"] = str(version)
    for k, v in _dict(ctx.get("tags")).items():
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
        # Version 2 keeps each part's end record (with the noise sample at its end).
        ends = "end_record" if version >= 2 else "NULL"
        contexts, end_noise = {}, {}
        for k, p, c, e in rows(conn, f"SELECT run_key, part, context, {ends} FROM run_parts"):
            contexts[(k, p)] = _dict(_json(c))
            end_noise[(k, p)] = _dict(_dict(_dict(_json(e)).get("noise")).get("end"))
        cases = rows(conn, "SELECT run_key, case_id, part, status, backend, noisy, record ->> 'repro', "
                           "record -> 'perf' ->> 'median_ms', record -> 'perf' ->> 'tflops', "
                           "record -> 'perf' ->> 'cv' FROM cases")
        outputs = defaultdict(dict)
        for k, c, o, p, w in rows(conn, "SELECT run_key, case_id, output, pass, worst_ratio FROM case_outputs"):
            w = number(w)
            outputs[(k, c)][o] = (flag(p), w if w is not None and w >= 0 else None)
    finally:
        conn.close()
    left = sorted(k for k, c in complete.items() if not c)
    if left and not include_incomplete:
        notes.append(f"{len(left)} incomplete run(s) left out (--include-incomplete takes them): {', '.join(left)}")
    if order_by is None:
        order_by = "rev" if any("rev" in _dict(c.get("tags")) for c in contexts.values()) else "start"
    orders, missing = {}, set()
    for key, ctx in contexts.items():
        if not include_incomplete and not complete.get(key[0], False):
            continue
        v = ctx.get("start") if order_by == "start" else _dict(ctx.get("tags")).get(order_by)
        if v is None:
            missing.add(key[0])
        else:
            orders[key] = str(v)
    if contexts and not orders and order_by != "start":
        tags = sorted({t for c in contexts.values() for t in _dict(c.get("tags"))})
        raise Unusable(f"--order-by: no run has a {order_by} tag; the runs' tags: {', '.join(tags) or 'none'}")
    if missing:
        notes.append(f"{len(missing)} run(s) without a {order_by} tag left out: {', '.join(sorted(missing))}")
    numeric = all(_is_number(v) for v in orders.values())
    words = sorted({v for v in orders.values() if not _is_number(v)})
    if not numeric and len(words) < len(set(orders.values())):
        notes.append(f"{order_by} values that are not numbers ({', '.join(words[:5])}{', ...' if len(words) > 5 else ''}) "
                     "order every run as text, number runs of digits by value")
    points, bad = [], 0
    for run, case, part, status, backend, noisy, repro, median, tflops, cv in cases:
        if (run, part) not in orders:
            continue
        bad += (median is not None and positive(median) is None) + (tflops is not None and positive(tflops) is None)
        ctx = contexts[(run, part)]
        rev = orders[(run, part)]
        noise = {"start": _dict(_dict(ctx.get("noise")).get("start")), "end": end_noise.get((run, part))}
        points.append(Point(run=run, case=case, backend=backend, machine=machine_of(ctx), rev=rev,
                            order=(float(rev) if numeric else _natural(rev), str(ctx.get("start", "")), run),
                            status=status, noisy=flag(noisy), repro=repro or "", median_ms=positive(median),
                            tflops=positive(tflops), cv=number(cv), attributes=attributes_of(ctx, order_by),
                            outputs=outputs.get((run, case), {}), noise={k: v for k, v in noise.items() if v},
                            threads=int(number(ctx.get("threads")) or 0), cpus=int(number(ctx.get("cpus")) or 0)))
    if bad:
        notes.append(f"{bad} timing(s) that are not positive numbers left out")
    points.sort(key=lambda p: p.order)
    return points, order_by


def _natural(text):
    """A sort key of text that orders runs of digits by value ("v2" before "v10")."""
    return tuple((0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.findall(r"\d+|\D+", text))


def _is_number(v):
    try:
        return math.isfinite(float(v))
    except ValueError:
        return False


def select(points, a):
    """The points the --case and --backend filters (globs) keep. --machine filters what is shown
    (shown), never what is computed: which machines saw a change needs the others."""
    return [p for p in points if fnmatch.fnmatchcase(p.case, a.case) and fnmatch.fnmatchcase(p.backend, a.backend)]


def shown(findings, a):
    """The findings of machines matching --machine (a glob)."""
    return [f for f in findings if fnmatch.fnmatchcase(f["machine"], a.machine)]


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


def _levels(pts, metric):
    """[(rev, [points], value)]: each revision's value of `metric`, the median over its runs that
    were not judged noisy (a revision whose runs all were is left out)."""
    out = []
    for rev, group in revisions(pts):
        kept = [p for p in group if not p.noisy_run and getattr(p, metric) is not None]
        if kept:
            out.append((rev, group, statistics.median(getattr(p, metric) for p in kept)))
    return out


def series_changes(values, a):
    """Changes and outliers of one series of values (one per revision) by a.method: "robust"
    (history_detect.detect, with Otava's change points as candidates) or "otava" (Otava's
    analysis alone: E-divisive split, t-test merge, no outliers). ([Change], [Outlier])."""
    from history_detect import Change, detect
    options = {"window": a.window, "max_pvalue": a.max_pvalue, "min_magnitude": a.min_magnitude}
    if a.method == "robust":
        return detect(values, a.min_magnitude, options)
    from otava.analysis import compute_change_points
    cps, _ = compute_change_points(values, window_len=a.window, max_pvalue=a.max_pvalue, min_magnitude=a.min_magnitude)
    out = []
    for c in cps:
        pval = float(c.stats.pvalue)
        out.append(Change(index=int(c.index), first=int(c.index), before=float(c.stats.mean_1),
                          after=float(c.stats.mean_2), z=math.nan, p=pval if math.isfinite(pval) else None))
    return out, []


def timing_changes(points, a):
    """Changes and outliers of every (case, backend, machine) series of metric a.metric, one value
    per revision (_levels: the runs judged noisy left out). Returns (changes, outliers): finding
    dicts (docs/tracking.md#scriptshistory)."""
    found, outliers = [], []
    lower_better = TIMING_METRICS[a.metric]["lower_is_better"]
    by_series = series(points, lambda p: (p.case, p.backend, p.machine) if getattr(p, a.metric) is not None else None)
    for (case, backend, machine), pts in by_series.items():
        levels = _levels(pts, a.metric)
        if len(levels) < MIN_POINTS:
            continue
        revs = [r for r, _, _ in levels]
        every = [r for r, _ in revisions(pts)]  # noisy ones included
        firsts = [group[0] for _, group, _ in levels]  # the context of a revision: its first run's
        moving = moving_with_revision(firsts)
        changes, outs = series_changes([v for _, _, v in levels], a)
        for c in changes:
            k = c.index
            up = c.after > c.before
            first = every.index(revs[c.first - 1]) + 1
            near = every[max(0, first - NOISE_WINDOW):every.index(revs[k]) + NOISE_WINDOW]
            noisy_revs = sorted({p.rev for p in pts if p.noisy_run and p.rev in near}, key=every.index)
            found.append({
                "kind": "change", "case": case, "backend": backend, "machine": machine, "metric": a.metric,
                # The earliest revision it may start at: after the last one of the level before
                # (an outlier or a noisy run between leaves the start uncertain).
                "rev": revs[k], "first_rev": every[first], "prev_rev": revs[c.first - 1],
                "direction": "slower" if up == lower_better else "faster",
                "before": c.before, "after": c.after, "ratio": c.after / c.before if c.before else None,
                "p": c.p, "context_changes": context_changes(firsts[c.first - 1].attributes, firsts[k].attributes, moving),
                "noisy": bool(noisy_revs), "noisy_revs": noisy_revs,
                "repro": levels[k][1][-1].repro, "index": k,
            })
        for o in outs:
            rev, group, _ = levels[o.index]
            outliers.append({
                "kind": "outlier", "case": case, "backend": backend, "machine": machine, "metric": a.metric,
                "rev": rev, "run": group[0].run, "value": o.value, "typical": o.typical,
                "ratio": o.value / o.typical if o.typical else None, "latest": o.latest,
                "repro": group[-1].repro, "index": o.index,
            })
    _scope(found, points, a.metric)
    return found, outliers


def _load(load):
    return "" if load is None else f" (load average {load:.1f})"


def judge_runs(points, a):
    """Marks p.noisy_run on the points of each run judged noisy from evidence about the run, and
    returns a "noisy run" finding per such run: its calibration kernel (the context's noise
    samples at its start and end) slower than CALIB_SLOW x the machine's median or moving that
    much from start to end, or more than CALIB_CUT of its repetitions interrupted; more than
    STEAL of the run's CPU time stolen; or every case moving together (MIN_TOGETHER cases or
    more): the run's factor (the median over its cases of each case's value over that case's
    median on the machine) an outlier of the machine's series of run factors
    (history_detect.detect)."""
    from history_detect import detect
    timed = [p for p in points if getattr(p, a.metric) is not None]
    runs = series(timed, lambda p: p.run)
    by_machine = defaultdict(list)  # machine -> [run keys] in run order
    for p in timed:
        if p.run not in by_machine[p.machine]:
            by_machine[p.machine].append(p.run)
    typical = {k: statistics.median(getattr(p, a.metric) for p in pts)
               for k, pts in series(timed, lambda p: (p.case, p.backend, p.machine)).items()}
    found = []
    for machine, keys in by_machine.items():
        reasons = defaultdict(list)
        calib = {k: [positive(s.get("calib_ms")) for s in runs[k][0].noise.values() if positive(s.get("calib_ms"))]
                 for k in keys}
        known = [x for v in calib.values() for x in v]
        base = statistics.median(known) if known else None
        for k in keys:
            p0 = runs[k][0]
            for when, smp in sorted(p0.noise.items()):
                ms, cut, load = positive(smp.get("calib_ms")), share(smp.get("calib_slow")), number(smp.get("loadavg"))
                if ms is not None and base and ms > CALIB_SLOW * base:
                    reasons[k].append(f"calibration at its {when} x{ms / base:.2f} the machine's median{_load(load)}")
                if cut is not None and cut > CALIB_CUT:
                    reasons[k].append(f"{cut:.0%} of the calibration's repetitions interrupted at its {when}{_load(load)}")
            start, end = (p0.noise.get(w) or {} for w in ("start", "end"))
            both = [positive(start.get("calib_ms")), positive(end.get("calib_ms"))]
            if all(both) and max(both) > CALIB_SLOW * min(both):
                reasons[k].append(f"calibration x{both[1] / both[0]:.2f} from its start to its end")
            j0, j1 = _dict(start.get("jiffies")), _dict(end.get("jiffies"))
            if all(type(j.get(f)) is int for j in (j0, j1) for f in ("steal", "total")):
                total, steal = j1["total"] - j0["total"], j1["steal"] - j0["steal"]
                if total >= STEAL_JIFFIES and steal > STEAL * total:
                    reasons[k].append(f"{steal / total:.0%} of the CPU stolen over the run")
        factors = [statistics.median(getattr(p, a.metric) / typical[(p.case, p.backend, p.machine)] for p in runs[k])
                   for k in keys]
        if len(keys) >= MIN_POINTS:
            for o in detect(factors, a.min_magnitude)[1]:
                if not o.latest and len(runs[keys[o.index]]) >= MIN_TOGETHER:
                    reasons[keys[o.index]].append(f"its {len(runs[keys[o.index]])} case(s) moved together "
                                                  f"(x{factors[o.index] / o.typical:.2f})")
        for k in keys:
            if reasons[k]:
                for p in runs[k]:
                    p.noisy_run = True
                found.append({"kind": "noisy run", "machine": machine, "rev": runs[k][0].rev, "run": k,
                              "cases": len(runs[k]), "reasons": reasons[k]})
    return found


def context_findings(points):
    """A "context" finding for each revision of a machine whose run context differs from the
    previous revision's in a field other than those that change with every revision (a commit
    time): a library version, threads, ISA, governor, ... whether or not a timing moved."""
    found = []
    for machine, pts in series(points, lambda p: p.machine).items():
        firsts = [g[0] for _, g in revisions(pts)]
        moving = moving_with_revision(firsts)
        for before, after in zip(firsts, firsts[1:]):
            changed = context_changes(before.attributes, after.attributes, moving)
            if changed:
                found.append({"kind": "context", "machine": machine, "rev": after.rev, "prev_rev": before.rev,
                              "context_changes": changed, "cases": sum(p.run == after.run for p in pts)})
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


def changes_flagged(f):
    """`changes` flags a slower change, and one whose series also got less accurate."""
    return f["kind"] == "change" and (f["direction"] == "slower" or bool(f["margins_worse"]))


def analyze(points, a):
    """Every finding over `points`, by kind ("changes", "outliers", "noisy_runs", "context",
    "margins", "flaky"), of the cases and backends that --case and --backend select and the
    machines --machine shows. Runs are judged noisy over all their cases (judge_runs)."""
    noisy = judge_runs(points, a)
    mine = select(points, a)
    steps = margin_steps(mine, a)
    changes, outliers = timing_changes(mine, a)
    join_accuracy(changes, steps)
    return {"changes": shown(changes, a), "outliers": shown(outliers, a), "noisy_runs": shown(noisy, a),
            "context": shown(context_findings(mine), a), "margins": shown(steps, a),
            "flaky": shown(flaky_cases(mine), a)}


# --- output -------------------------------------------------------------------------------------

def fmt_num(v, digits=4):
    return "" if v is None else f"{v:.{digits}g}"


def table(items, columns, **options):
    """The items as a text table (tabulate), one column per (header, function of an item)."""
    from tabulate import tabulate
    return tabulate([[fn(i) for _, fn in columns] for i in items], headers=[h for h, _ in columns], **options)


def changed_text(f):
    return "; ".join(f"{c['field']} {c['before']} -> {c['after']}" for c in f["context_changes"]) or "nothing"


def finding_text(f):
    """The finding column of `changes`: what kind of thing happened at f's revision."""
    if f["kind"] == "change":
        return f["finding"] + (f" (from {f['first_rev']} to {f['rev']}: outliers or noisy runs between)"
                               if f["first_rev"] != f["rev"] else "")
    if f["kind"] == "outlier":
        return "outlier" + (" (the latest: a change if it stays)" if f["latest"] else "")
    return f["kind"]


def size_text(f):
    if f["kind"] == "change":
        return f"{fmt_num(f['before'])} -> {fmt_num(f['after'])} {f['metric']} (x{fmt_num(f['ratio'], 3)})"
    if f["kind"] == "outlier":
        return f"{fmt_num(f['value'])} {f['metric']}, typically {fmt_num(f['typical'])} (x{fmt_num(f['ratio'], 3)})"
    if f["kind"] == "noisy run":
        return "; ".join(f["reasons"])
    return ""


CHANGE_COLUMNS = [
    ("case", lambda f: {"noisy run": f"(run {f.get('run')}: {f.get('cases')} case(s))",
                        "context": "(run context)"}.get(f["kind"], f.get("case"))),
    ("backend", lambda f: f.get("backend", "")), ("machine", lambda f: f["machine"]),
    ("rev", lambda f: f["rev"]), ("finding", finding_text), ("size", size_text),
    ("p", lambda f: fmt_num(f.get("p"), 2)), ("scope", lambda f: f.get("scope", "")),
    ("noisy", lambda f: f"noisy runs at {', '.join(f['noisy_revs'])}" if f.get("noisy") else ""),
    ("context changed", lambda f: changed_text(f) if "context_changes" in f else ""),
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
    """The runs of the store (complete or not) in the order of the order tag (numerically when
    every value is a number, else as text with runs of digits by value), then start; those of
    machines matching --machine."""
    points, order_by = load(a.db, a.order_by, include_incomplete=True, notes=[])
    conn = connect(a.db)
    try:
        state = rows(conn, "SELECT run_key, complete, parts, shard_count, first_start FROM run_state")
        contexts = {}
        for k, c in rows(conn, "SELECT run_key, context FROM run_parts ORDER BY part"):
            contexts.setdefault(k, _dict(_json(c)))
    finally:
        conn.close()
    cases = defaultdict(int)
    for p in points:
        cases[p.run] += 1

    def order_of(key):
        ctx = contexts.get(key, {})
        return str(ctx.get("start", "")) if order_by == "start" else _dict(ctx.get("tags")).get(order_by)
    values = {k: order_of(k) for k, *_ in state}
    numeric = all(_is_number(v) for v in values.values() if v is not None)
    key_of = (lambda v: (float(v),)) if numeric else (lambda v: _natural(str(v)))
    machines = sorted({machine_of(c) for c in contexts.values()})
    if machines and not any(fnmatch.fnmatchcase(m, a.machine) for m in machines):
        raise Unusable(f"--machine={a.machine}: no machine matches; the machines: {', '.join(machines)}")
    items = []
    for key, complete, parts, shards, start in sorted(
            state, key=lambda r: (values[r[0]] is None, key_of(values[r[0]]) if values[r[0]] is not None else (), str(r[4]))):
        machine = machine_of(contexts.get(key, {}))
        if not fnmatch.fnmatchcase(machine, a.machine):
            continue
        item = {"run": key, order_by: values[key], "machines": [machine], "start": start, "cases": cases[key],
                "parts": f"{parts}/{shards}", "complete": flag(complete)}
        items.append(item)
    if a.json:
        print(json.dumps(items, indent=1))
    else:
        columns = list(dict.fromkeys(("run", order_by, "machines", "start", "cases", "parts", "complete")))
        print(table(items, [(k, (lambda k: lambda i: ", ".join(i[k]) if isinstance(i[k], list) else str(i[k]))(k))
                            for k in columns], disable_numparse=True))
    return 0


def _at_least(low, kind=float):
    """An argparse type: a finite number of `kind` >= low."""
    def parse(text):
        try:
            v = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expects a number, got {text!r}")
        if not math.isfinite(v) or v < low:
            raise argparse.ArgumentTypeError(f"expects a finite number >= {low}, got {text}")
        return v
    return parse


def _pvalue(text):
    """An argparse type: a p-value threshold in (0, 1]."""
    v = _at_least(0.0)(text)
    if not 0 < v <= 1:
        raise argparse.ArgumentTypeError(f"expects a p-value in (0, 1], got {text}")
    return v


def main(argv=None):
    logging.basicConfig(level=logging.WARNING)
    ap = argparse.ArgumentParser(prog="scripts/history", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    base = argparse.ArgumentParser(add_help=False)
    base.add_argument("--db", required=True, help="the store: sqlite:PATH or postgresql:URL")
    base.add_argument("--json", action="store_true", help="print a JSON list instead of a table")
    base.add_argument("--order-by", help="the tag that orders runs (default rev when present, else the start time); "
                                         "'start' orders by start time")
    base.add_argument("--machine", default="*", help="show only the findings (runs) of machines matching this glob "
                                                      "(the analysis reads every machine)")
    common = argparse.ArgumentParser(add_help=False, parents=[base])
    common.add_argument("--include-incomplete", action="store_true", help="also read runs that did not complete")
    common.add_argument("--case", default="*", help="only case ids matching this glob")
    common.add_argument("--backend", default="*", help="only backends matching this glob")
    otava = argparse.ArgumentParser(add_help=False)
    otava.add_argument("--metric", choices=sorted(TIMING_METRICS), default="median_ms", help="the timing metric")
    otava.add_argument("--max-pvalue", type=_pvalue, default=0.001,
                       help="Otava's max_pvalue, in (0, 1] (default %(default)s)")
    otava.add_argument("--min-magnitude", type=_at_least(0.0), default=0.05,
                       help="smaller relative changes are not reported, >= 0 (default %(default)s)")
    otava.add_argument("--window", type=_at_least(2, int), default=50,
                       help="Otava's window_len, >= 2 (default %(default)s)")
    otava.add_argument("--method", choices=("robust", "otava"), default="robust",
                       help="robust: outliers named, a robust step test with Otava's change points as candidates "
                            "(scripts/history_detect.py); otava: Otava's analysis alone (default %(default)s)")
    p = sub.add_parser("ingest", help="store JSONL reports")
    p.add_argument("--db", required=True, help="the store: sqlite:PATH or postgresql:URL")
    p.add_argument("files", nargs="+", help="JSONL reports (--report=jsonl:PATH)")
    sub.add_parser("runs", parents=[base], help="list the runs")
    sub.add_parser("changes", parents=[common, otava],
                   help="changes, outliers, noisy runs and context changes of the timing series")
    sub.add_parser("margins", parents=[common, otava], help="steps of the outputs' worst_ratio")
    sub.add_parser("flaky", parents=[common], help="cases whose status flips")
    p = sub.add_parser("plot", parents=[common, otava], help="index.html (interactive) and a PNG per charted finding")
    p.add_argument("--out", required=True, help="folder for the PNGs and index.html")
    a = ap.parse_args(argv)
    notes = []
    try:
        if a.cmd == "ingest":
            return ingest(a)
        if a.cmd == "runs":
            return list_runs(a, notes)
        points, a.order_by = load(a.db, a.order_by, a.include_incomplete, notes)
        for n in notes:
            print(f"history: note: {n}", file=sys.stderr)
        machines = sorted({p.machine for p in points})
        if points and not any(fnmatch.fnmatchcase(m, a.machine) for m in machines):
            raise Unusable(f"--machine={a.machine}: no machine matches; the machines: {', '.join(machines)}")
        if a.cmd == "flaky":
            return report(a, shown(flaky_cases(select(points, a)), a), FLAKY_COLUMNS, "flaky case", lambda f: True)
        findings = analyze(points, a)
        if a.cmd == "margins":
            return report(a, findings["margins"], MARGIN_COLUMNS, "margin step", lambda f: f["direction"] == "worse")
        if a.cmd == "changes":
            every = findings["changes"] + findings["outliers"] + findings["noisy_runs"] + findings["context"]
            return report(a, every, CHANGE_COLUMNS, "change", changes_flagged)
        from history_page import write_page
        try:
            os.makedirs(a.out, exist_ok=True)
        except OSError as e:
            raise Unusable(f"--out={a.out}: cannot make the folder: {e.strerror}")
        if not os.path.isdir(a.out) or not os.access(a.out, os.W_OK):
            raise Unusable(f"--out={a.out}: not a folder this process can write")
        return write_page(a, select(points, a), findings, notes)
    except Unusable as e:
        print(f"history: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
