"""scripts/history's analyses over the points of the store (docs/tracking.md): timing changes
and outliers of each series (detect.py's robust detection or Otava's analysis alone), noisy runs,
context changes, margin steps, flaky cases; each finding a dict (docs/tracking.md#scriptshistory)."""
import math
import statistics
from collections import defaultdict

from .detect import Change, detect
from .series import context_changes, moving_with_revision, revision_levels, revisions, select, series, shown
from .store import TIMING_METRICS, as_dict, number, positive, share

NOISE_WINDOW = 3  # revisions on each side of a change whose noisy runs are reported with it
MIN_POINTS = 4    # a series needs this many revisions before any change is looked for
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


def series_changes(values, a):
    """Changes and outliers of one series of values (one per revision) by a.method: "robust"
    (detect.detect, with Otava's change points as candidates) or "otava" (Otava's analysis
    alone: E-divisive split, t-test merge, no outliers). ([Change], [Outlier])."""
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
    per revision (revision_levels: the runs judged noisy left out). Returns (changes, outliers): finding
    dicts (docs/tracking.md#scriptshistory)."""
    found, outliers = [], []
    lower_better = TIMING_METRICS[a.metric]["lower_is_better"]
    by_series = series(points, lambda p: (p.case, p.backend, p.machine) if getattr(p, a.metric) is not None else None)
    for (case, backend, machine), pts in by_series.items():
        levels = revision_levels(pts, a.metric)
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
    (detect.detect)."""
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
            j0, j1 = as_dict(start.get("jiffies")), as_dict(end.get("jiffies"))
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


