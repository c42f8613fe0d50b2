"""How well scripts/history finds changes: a detection-power benchmark on synthetic nightly series.

Run it as scripts/history bench [--series=N] [--seed=S] [--methods=robust,otava] [--check] (with
the venv of scripts/setup.sh).

Each class below draws N stores from its seed (numpy's default_rng(seed + class index)): 1-4
machines, one case, 6-60 revisions, one run a night, noise of the given CV (Gaussian, or Student's
t with 3 degrees of freedom scaled to that CV for "heavy"), and what the class plants: steps of a
given size up or down on one machine or all, single outlier runs (one point 1.3-3x), slow drifts,
a run slowed on all its cases together (a CPU burner). The stores go through the same analysis
as `scripts/history changes` (findings.py's analyze), once with --method=robust (the default)
and once with --method=otava (Otava's analysis alone, as before), and the table says per class:

  found      the share of planted steps reported at their revision (or within the revisions a
             change names when an outlier lies between: "from 6 or 7")
  exact      reported exactly at their revision
  near       reported within one revision
  false      the share of stores with a change where none was planted (more than one revision
             from every planted step, or on a machine without one)
  outliers   the share of planted outliers named "outlier" at their revision
  as change  the share of planted outliers that became a change
  false out  the share of stores with an outlier named where none was planted
  scope      the share of found steps whose scope is right ("this machine only" for one machine
             of several, "every machine that ran it" for all)
  noisy      the share of burner runs judged noisy

With --check it exits 1 unless the targets of docs/tracking.md#detection hold for the robust
method: found >= 99% for steps >= 10% lasting >= 3 revisions at CV <= 2% (with and without an
outlier within two revisions), false <= 1% and as change 0 on flat series with one outlier, and
the real series of tests/data/history/ found at their revision with no other finding.
"""
import argparse
import json
import math
import os
import sys
from types import SimpleNamespace

import numpy as np

from .findings import analyze
from .options import at_least
from .store import Point

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "data", "history", "real_series.json")

# name, targeted (checked by --check), and the draw: cv range, noise kind, revisions range,
# machines range, step size range (None: no step), step on all machines or one, outlier (None,
# "any", "near": within two revisions of the step), drift range, burner.
CLASSES = [
    ("flat", False, dict(cv=(0.005, 0.02))),
    ("flat + outlier", True, dict(cv=(0.005, 0.02), outlier="any")),
    ("step >= 10%", True, dict(cv=(0.005, 0.02), step=(0.10, 2.0))),
    ("step >= 10% + outlier near", True, dict(cv=(0.005, 0.02), step=(0.10, 2.0), outlier="near")),
    ("step >= 10%, 2-4 machines", True, dict(cv=(0.005, 0.02), step=(0.10, 2.0), machines=(2, 4))),
    ("step >= 10%, all machines", False, dict(cv=(0.005, 0.02), step=(0.10, 2.0), machines=(2, 4), everywhere=True)),
    ("step 3-10%", False, dict(cv=(0.005, 0.02), step=(0.03, 0.10))),
    ("step >= 10%, 1 rev before", False, dict(cv=(0.005, 0.02), step=(0.10, 2.0), before=1)),
    ("step >= 10%, 2 revs after", False, dict(cv=(0.005, 0.02), step=(0.10, 2.0), after=2)),
    ("flat, CV 2-10%", False, dict(cv=(0.02, 0.10))),
    ("step >= 20%, CV 2-10%", False, dict(cv=(0.02, 0.10), step=(0.20, 2.0))),
    ("flat, heavy-tailed", False, dict(cv=(0.005, 0.02), noise="heavy")),
    ("step >= 10%, heavy-tailed", False, dict(cv=(0.005, 0.02), step=(0.10, 2.0), noise="heavy")),
    ("drift 10-30%", False, dict(cv=(0.005, 0.02), drift=(0.10, 0.30))),
    ("burner run, 6 cases", False, dict(cv=(0.005, 0.02), burner=True, cases=6)),
]
TARGETED_STEP = ("step >= 10%", "step >= 10% + outlier near", "step >= 10%, 2-4 machines")


def draw(rng, spec):
    """One synthetic store: {"values": {(machine, case): [value per revision]}, "steps":
    [(machine, index, up)], "outliers": [(machine, case, index)], "burner": index or None}."""
    n = int(rng.integers(6, 61))
    machines = int(rng.integers(spec.get("machines", (1, 1))[0], spec.get("machines", (1, 1))[1] + 1))
    cases = spec.get("cases", 1)
    cv = float(rng.uniform(*spec["cv"]))
    out = {"values": {}, "steps": [], "outliers": [], "burner": None, "n": n}
    pos = None
    if spec.get("step"):
        before = spec.get("before", 2)
        # It lasts >= 3 revisions and has 2 before it, not counting an outlier among them (the
        # outlier of "near" is `offset` revisions from it: -2 and -1 before, 0-2 after).
        offset = int(rng.integers(-2, 3)) if spec.get("outlier") == "near" else None
        lo = before + (offset is not None and offset < 0)
        hi = n - 3 - (offset is not None and offset >= 0)
        pos = before if before == 1 else n - spec["after"] if spec.get("after") else int(rng.integers(lo, hi + 1))
        size = float(rng.uniform(*spec["step"]))
        up = bool(rng.integers(0, 2))
        ratio = (1 + size) if up else 1 / (1 + size)
        stepped = list(range(machines)) if spec.get("everywhere") else [int(rng.integers(0, machines))]
        out["steps"] = [(m, pos, up) for m in stepped]
    outlier_at = None
    if spec.get("outlier") == "any":
        outlier_at = int(rng.integers(0, n))
    elif spec.get("outlier") == "near":
        outlier_at = pos + offset
    if spec.get("burner"):
        out["burner"] = int(rng.integers(1, n - 1))
    drift = float(rng.uniform(*spec["drift"])) if spec.get("drift") else 0.0
    for m in range(machines):
        base = float(rng.uniform(0.5, 20.0))
        for c in range(cases):
            level = base * float(rng.uniform(0.5, 2.0)) if c else base
            if spec.get("noise") == "heavy":
                noise = rng.standard_t(3, n) * cv / math.sqrt(3.0)  # t(3) has variance 3
            else:
                noise = rng.normal(0.0, cv, n)
            v = level * np.exp(noise) * (1 + drift * np.arange(n) / max(1, n - 1))
            if any(s[0] == m for s in out["steps"]):
                v[pos:] *= ratio
            if outlier_at is not None and m == (out["steps"][0][0] if out["steps"] else 0) and c == 0:
                v[outlier_at] *= outlier_factor(rng, v, outlier_at, pos, cv)
                out["outliers"].append((m, c, outlier_at))
            if out["burner"] is not None and m == 0:
                v[out["burner"]] *= 1.6
            out["values"][(m, c)] = [float(x) for x in v]
    return out


def outlier_factor(rng, v, at, pos, cv):
    """An outlier's factor on value v[at]: a slow run, 1.3-3x; where that would land between the
    two levels of the step at `pos` next to it, or less than 8 noise standard deviations `cv`
    (and 5%) above the median of the other level's values, a fast run, 1/1.3-1/3x: the planted
    point is then an outlier from both levels (otherwise no method could say which side of the
    step it belongs to). pos None: no step."""
    f = float(rng.uniform(1.3, 3.0))
    if pos is None:
        return f
    other = [x for i, x in enumerate(v) if i != at and ((i >= pos) if at < pos else (i < pos))]
    margin = max(math.log(1.05), 8 * cv)
    if math.log(v[at] * f) - math.log(float(np.median(other))) < margin:
        return 1 / f
    return f


def points_of(store):
    """The store as scripts/history's points: machine mM, case cC, revision i+1, one run a night."""
    pts = []
    for (m, c), values in store["values"].items():
        for i, v in enumerate(values):
            run = f"m{m}-r{i + 1}"
            pts.append(Point(run=run, case=f"c{c}", backend="ref", machine=f"m{m}", rev=str(i + 1),
                             order=(float(i + 1), "", run), status="EXECUTED", noisy=False, repro=f"c{c}",
                             median_ms=v))
    pts.sort(key=lambda p: p.order)
    return pts


def options(method):
    return SimpleNamespace(metric="median_ms", max_pvalue=0.001, min_magnitude=0.05, window=50, method=method,
                           case="*", backend="*", machine="*")


def score(store, findings):
    """Per-store tallies: steps found (at, exact, near, scope right), false change, outliers named
    and turned into changes, burner judged noisy."""
    t = dict(steps=len(store["steps"]), found=0, exact=0, near=0, scope=0, false=0, outliers=len(store["outliers"]),
             named=0, as_change=0, false_outlier=0, burners=int(store["burner"] is not None), noisy=0)
    changes = findings["changes"]
    machines = len({m for m, _ in store["values"]})
    stepped = {m for m, _, _ in store["steps"]}
    for m, pos, up in store["steps"]:
        rev = str(pos + 1)
        mine = [f for f in changes if f["machine"] == f"m{m}" and f["case"] == "c0"]
        at = [f for f in mine if int(f["first_rev"]) <= pos + 1 <= int(f["rev"]) and (f["direction"] == "slower") == up]
        if at:
            t["found"] += 1
            want = "this machine only" if len(stepped) == 1 and machines > 1 else f"every machine that ran it ({len(stepped)})"
            t["scope"] += at[0]["scope"] == want
        t["exact"] += any(f["rev"] == rev for f in mine)
        t["near"] += any(abs(int(f["rev"]) - (pos + 1)) <= 1 for f in mine)
    for f in changes:
        m = int(f["machine"][1:])
        if not any(m == sm and abs(int(f["rev"]) - (pos + 1)) <= 1 for sm, pos, _ in store["steps"]):
            t["false"] = 1
    for m, c, i in store["outliers"]:
        t["named"] += any(f["machine"] == f"m{m}" and f["case"] == f"c{c}" and f["rev"] == str(i + 1)
                          for f in findings["outliers"])
        t["as_change"] += any(f["machine"] == f"m{m}" and f["rev"] == str(i + 1) and
                              not any(abs(i - pos) <= 0 for _, pos, _ in store["steps"]) for f in changes)
    planted = {(f"m{m}", f"c{c}", str(i + 1)) for m, c, i in store["outliers"]}
    t["false_outlier"] = int(any((f["machine"], f["case"], f["rev"]) not in planted for f in findings["outliers"]))
    if store["burner"] is not None:
        t["noisy"] = any(f["rev"] == str(store["burner"] + 1) for f in findings["noisy_runs"])
    return t


def run_class(index, name, spec, n, seed, method):
    rng = np.random.default_rng(seed + index)
    total = {}
    for _ in range(n):
        store = draw(rng, spec)
        t = score(store, analyze(points_of(store), options(method)))
        for k, v in t.items():
            total[k] = total.get(k, 0) + v
    total["stores"] = n
    return total


def pct(a, b):
    return None if not b else 100.0 * a / b


def fixtures(method):
    """The real series (tests/data/history/real_series.json): [(name, want rev, findings)]."""
    with open(FIXTURES) as f:
        data = json.load(f)
    out = []
    for s in data["series"]:
        store = {"values": {(0, 0): s["values"]}}
        found = analyze(points_of(store), options(method))
        out.append((s["name"], s["change_rev"], found))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(prog="scripts/history bench", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--series", type=at_least(1, int), default=500, help="stores per class, >= 1 (default %(default)s)")
    ap.add_argument("--seed", type=at_least(0, int), default=20261206,
                    help="the generator's seed, >= 0 (default %(default)s)")
    ap.add_argument("--methods", default="robust,otava",
                    help="methods to compare, a comma-separated list of robust and otava (default %(default)s)")
    ap.add_argument("--check", action="store_true", help="exit 1 unless the robust method meets the targets")
    a = ap.parse_args(argv)
    methods = a.methods.split(",")
    if any(m not in ("robust", "otava") for m in methods) or len(set(methods)) != len(methods):
        ap.error(f"--methods: expects robust and/or otava, each once, got {a.methods!r}")
    if a.check and "robust" not in methods:
        ap.error("--check judges the robust method: --methods must name it")
    from tabulate import tabulate
    rows, failed = [], []
    results = {}
    for method in methods:
        for i, (name, targeted, spec) in enumerate(CLASSES):
            t = run_class(i, name, spec, a.series, a.seed, method)
            results[(method, name)] = t
            rows.append([name, method, t["stores"], pct(t["found"], t["steps"]), pct(t["exact"], t["steps"]),
                         pct(t["near"], t["steps"]), pct(t["false"], t["stores"]), pct(t["named"], t["outliers"]),
                         pct(t["as_change"], t["outliers"]), pct(t["false_outlier"], t["stores"]),
                         pct(t["scope"], t["found"]), pct(t["noisy"], t["burners"])])
    print(tabulate(rows, headers=["class", "method", "stores", "found %", "exact %", "near %", "false %", "outliers %",
                                  "as change %", "false out %", "scope %", "noisy %"], floatfmt=".1f", missingval="-"))
    print()
    for method in methods:
        for name, want, found in fixtures(method):
            got = [(f["kind"], f["rev"]) for k in ("changes", "outliers", "noisy_runs") for f in found[k]]
            ok = got == [("change", want)]
            print(f"real series {name} ({method}): {got or 'nothing'}{'' if ok else f' (want a change at {want} only)'}")
            if method == "robust" and not ok:
                failed.append(f"real series {name}")
    if a.check:
        r = {name: results[("robust", name)] for name, _, _ in CLASSES}
        for name in TARGETED_STEP:
            if pct(r[name]["found"], r[name]["steps"]) < 99.0:
                failed.append(f"{name}: found {pct(r[name]['found'], r[name]['steps']):.1f}% < 99%")
        fo = r["flat + outlier"]
        if pct(fo["false"], fo["stores"]) > 1.0:
            failed.append(f"flat + outlier: false {pct(fo['false'], fo['stores']):.1f}% > 1%")
        for name in ("flat + outlier", "step >= 10% + outlier near"):
            if r[name]["as_change"]:
                failed.append(f"{name}: {r[name]['as_change']} outlier(s) reported as a change")
        for f in failed:
            print(f"history_bench: target missed: {f}", file=sys.stderr)
        return 1 if failed else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
