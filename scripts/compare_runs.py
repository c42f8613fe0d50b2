#!/usr/bin/env python3
"""Compares two sdpabench reports (--report=jsonl:PATH or csv:PATH) case by case, or the backends of
reports side by side (--by=backend).

Join key: each case record's "id" (the canonical case id, unique within a run) without its
--mode knob, so a case still joins when its repro line is written differently, and a P run joins
a CP run of the same cases (and is then refused for the mode difference). When either report has a record without an id
(a report from before ids), both are joined on the repro line instead, and on "#IDX" for a record
without one; the line "joined on ..." says which key was used.

Context checks: times from different set-ups are not comparable, so the comparison is refused
(exit 2) when the runs differ in any of
  threads, libraries.NAME (each library's version), host, cpu     from the context records
  modes (the set of the joined cases' modes), mode of a joined case,
  cold_cache of a case timed in both (perf.cold_cache)             from the case records
and each difference is listed as "FIELD: OLD-VALUE vs NEW-VALUE". With --allow-context-change the
same list is printed as a warning and the runs are compared anyway. A report whose first line is
not a context record (reports from before context records) gets a warning that its context
cannot be checked; the mode and cold_cache of its cases are still checked.

Output: one row per joined case with the ratio new/old of --stat (default the median time,
robust to the odd slow run), a verdict (same, faster, SLOWER, slower?, or "not timed in ..." with
the case's status) and the p-value of the significance test, or why the case was judged by the
threshold alone; the cases only in OLD and only in NEW, listed by key (never a failure); the
geometric-mean ratio over the cases timed in both; and how many cases the test was run on.

Significance: a case whose record has perf.samples_ms (each timed run's time, in run order) with
at least 3 samples in both reports gets a one-sided Mann-Whitney U test (SciPy's
scipy.stats.mannwhitneyu, alternative: NEW's times are greater than OLD's), and its p-value is
printed. Such a case is SLOWER only when its ratio exceeds 1 + --threshold AND p < --alpha
(default 0.01); a ratio past the threshold with p >= --alpha is "slower?" (not significant:
run-to-run noise can explain it) and does not fail. The test needs enough samples to ever reach
--alpha: with n samples in each report (and no ties) its smallest p is 1/C(2n, n), 0.05 at
n = 3, 0.014 at 4, 0.004 at 5, so --alpha 0.01 needs at least 5 in each. A case that lacks
samples in one report or both (reports from before samples_ms), or has fewer than 3, is judged
by the threshold alone, and its row says "threshold only" with the reason. "faster" is the
threshold alone (the test is one-sided). Without SciPy (a python3 that lacks it) a note on
stderr says so and names the venv python that has it (scripts/setup.sh installs SciPy into
/opt/sdpabench-deps/py, or $SDPABENCH_DEPS/py when that is set), and every case is judged by
the threshold alone:

  /opt/sdpabench-deps/py/bin/python scripts/compare_runs.py OLD.jsonl NEW.jsonl

Exit status:
  0  compared, and no case is SLOWER
  1  compared, and at least one case is SLOWER: slower than --threshold (default 0.05 = 5%),
     and significantly so (p < --alpha) where the U test was run
  2  not compared: no case is timed in both reports, the contexts differ (without
     --allow-context-change), a report cannot be read, or a usage error (such as a
     --threshold that is not a finite number >= 0, or an --alpha not strictly between 0 and 1)
Standard library, and SciPy for the significance test (optional, as above).

Reports may be csv (--report=csv:PATH) as well as jsonl; a csv has no samples_ms, so its cases are
judged by the threshold alone.

Backends side by side (--by=backend): one report that ran several backends (--backend=onednn,torch:flash
...), or several reports, each case joined on its id without its --backend and --mode knobs; one row
per case with each backend's time (--stat) and its ratio to the --baseline backend (default: the
backend of the first case read), then per backend the geometric mean of those ratios over the cases
timed on both. The reports must come from one machine (host, cpu, threads; their library versions
may differ, as their backends do) unless --allow-context-change. Exit 0 when some case is timed on
two backends, 2 otherwise; no case fails.

Usage: compare_runs.py OLD NEW [--threshold 0.05] [--alpha 0.01] [--stat median_ms] [--allow-context-change]
       compare_runs.py --by=backend REPORT [REPORT...] [--baseline NAME] [--stat median_ms] [--allow-context-change]
"""
import argparse
import json
import math
import os
import re
import shlex
import sys
from collections import defaultdict
from types import SimpleNamespace

from sdpabench_report import TIME_STATS, ReportError, read_report

EXIT_SLOWER = 1
EXIT_NOT_COMPARED = 2
IDS_SHOWN = 5  # case keys named per grouped per-case difference
MIN_SAMPLES = 3  # per report, for the U test; fewer: the threshold alone


load = read_report


def has_id(rec):
    return isinstance(rec.get("id"), str) and rec["id"] != ""


def without_mode(key):
    """The case without its --mode knob: a P run and a CP run of one case join (and then differ
    in mode, which the context check names)."""
    return re.sub(r"(^| )--mode=\S+", "", key).strip()


def keyed(cases, by_id, label, warnings):
    """key -> record; a repeated key keeps the last record, with a warning."""
    out, repeats = {}, defaultdict(int)
    for rec in cases:
        key = without_mode(rec["id"]) if by_id else (rec.get("repro") or f"#{rec.get('idx')}")
        if key in out:
            repeats[key] += 1
        out[key] = rec
    for key, extra in repeats.items():
        warnings.append(f"{label} has {extra + 1} records for case {key}; only the last is compared")
    return out


def show(v):
    if v is None:
        return "(absent)"
    return v if isinstance(v, str) else json.dumps(v)


def context_differences(oc, nc, warnings):
    """'field: old vs new' for threads, each library's version, host, cpu and gpu (git_commit,
    tags, start and shard may differ: comparing commits is the point)."""
    diffs = []

    def check(field, a, b):
        if a != b:
            diffs.append(f"{field}: {show(a)} vs {show(b)}")

    unchecked = [f for f in ("threads", "libraries", "host", "cpu") if f not in oc and f not in nc]
    if unchecked:
        warnings.append(f"no context record has {', '.join(unchecked)}: not checked")
    check("threads", oc.get("threads"), nc.get("threads"))
    ol = oc.get("libraries") if isinstance(oc.get("libraries"), dict) else {}
    nl = nc.get("libraries") if isinstance(nc.get("libraries"), dict) else {}
    for lib in sorted(set(ol) | set(nl)):
        check(f"libraries.{lib}", ol.get(lib), nl.get(lib))
    check("host", oc.get("host"), nc.get("host"))
    check("cpu", oc.get("cpu"), nc.get("cpu"))
    if "gpu" in oc or "gpu" in nc:  # reports from before the field have neither
        check("gpu", oc.get("gpu"), nc.get("gpu"))
    return diffs


def name_cases(keys):
    if len(keys) <= IDS_SHOWN:
        return f"{len(keys)} case(s): {', '.join(keys)}"
    return f"{len(keys)} case(s), e.g. {', '.join(keys[:IDS_SHOWN])}"


def case_differences(old, new, joined, warnings):
    """'field: old vs new' for the joined cases' set of modes, each case's mode and cold_cache."""
    diffs = []
    om = {old[k]["mode"] for k in joined if old[k].get("mode") is not None}
    nm = {new[k]["mode"] for k in joined if new[k].get("mode") is not None}
    if om and nm and om != nm:
        diffs.append(f"modes: {','.join(sorted(map(show, om)))} vs {','.join(sorted(map(show, nm)))}")
    groups = defaultdict(list)  # (field, old value, new value) -> keys
    no_mode, no_cold = 0, 0
    for k in joined:
        o, n = old[k], new[k]
        if o.get("mode") is None or n.get("mode") is None:
            no_mode += 1
        elif o["mode"] != n["mode"]:
            groups[("mode", show(o["mode"]), show(n["mode"]))].append(k)
        op, np_ = o.get("perf"), n.get("perf")
        if isinstance(op, dict) and isinstance(np_, dict):
            if op.get("cold_cache") is None or np_.get("cold_cache") is None:
                no_cold += 1
            elif op["cold_cache"] != np_["cold_cache"]:
                groups[("cold_cache", show(op["cold_cache"]), show(np_["cold_cache"]))].append(k)
    for (field, a, b), keys in groups.items():
        diffs.append(f"{field}: {a} vs {b} ({name_cases(keys)})")
    if no_mode:
        warnings.append(f"the mode of {no_mode} joined case(s) cannot be checked (no \"mode\" in a record)")
    if no_cold:
        warnings.append(f"the cold cache of {no_cold} case(s) timed in both cannot be checked "
                        "(no \"perf.cold_cache\" in a record)")
    return diffs


def describe(label, path, context):
    if context is None:
        return f"{label} {path}: no context record"
    parts = [f"sdpabench {show(context.get('sdpabench'))}", f"commit {show(context.get('git_commit'))}",
             f"host {show(context.get('host'))}", f"started {show(context.get('start'))}"]
    return f"{label} {path}: " + ", ".join(parts)


def timing(rec, stat):
    perf = rec.get("perf")
    v = perf.get(stat) if isinstance(perf, dict) else None
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else None


def samples(rec):
    """perf.samples_ms as a list of times, None when absent; False when present but not a list of
    finite numbers >= 0 (then warned about, and the case is judged by the threshold alone)."""
    perf = rec.get("perf")
    s = perf.get("samples_ms") if isinstance(perf, dict) else None
    if s is None:
        return None
    ok = isinstance(s, list) and all(isinstance(v, (int, float)) and not isinstance(v, bool)
                                     and math.isfinite(v) and v >= 0 for v in s)
    return s if ok else False


def u_test():
    """scipy.stats.mannwhitneyu, or None (after a note on stderr naming the venv that has SciPy)."""
    try:
        from scipy.stats import mannwhitneyu
    except ImportError:
        pass
    else:
        return mannwhitneyu
    venv = os.path.join(os.environ.get("SDPABENCH_DEPS", "/opt/sdpabench-deps"), "py")
    py = os.path.join(venv, "bin", "python")
    rerun = shlex.join([py] + sys.argv)  # this script by the path it was run with, same arguments
    msg = (f"compare_runs: note: SciPy is not available to {sys.executable}, so significance is not "
           "tested: the threshold alone decides for every case, with or without samples_ms.\n")
    if os.access(py, os.X_OK) and os.path.realpath(sys.prefix) != os.path.realpath(venv):
        msg += f"compare_runs: scripts/setup.sh installed SciPy in the venv {venv}; run:\n  {rerun}"
    else:
        setup = shlex.quote(os.path.join(os.path.dirname(sys.argv[0]), "setup.sh"))
        msg += (f"compare_runs: install it (into the venv {venv}; SDPABENCH_DEPS moves it; needs root or "
                f"sudo) with\n  {setup}\nthen run:\n  {rerun}")
    print(msg, file=sys.stderr)
    return None


def not_timed(o, n):
    """The verdict of a joined case untimed in old (o given), new (n given) or both, with statuses."""
    if o is not None and n is not None:
        return f"not timed in either (old: {show(o.get('status'))}, new: {show(n.get('status'))})"
    label, rec = ("old", o) if o is not None else ("new", n)
    return f"not timed in {label} ({show(rec.get('status'))})"


def refuse(warnings, diffs, a, what):
    """Prints the warnings and the context differences; True when they refuse the comparison
    (differences without --allow-context-change)."""
    for w in warnings:
        print(f"compare_runs: warning: {w}", file=sys.stderr)
    if not diffs:
        return False
    listing = "".join(f"\n  {d}" for d in diffs)
    if not a.allow_context_change:
        print(f"compare_runs: the {what} differ in context, so their times are not comparable:{listing}\n"
              "compare_runs: not compared (exit 2); --allow-context-change compares anyway", file=sys.stderr)
        return True
    print(f"compare_runs: warning: the {what} differ in context (compared anyway, "
          f"--allow-context-change):{listing}", file=sys.stderr)
    return False


def compare(a):
    """OLD against NEW (a.old, a.new): the cases joined, the runs' contexts checked, each joined
    case judged and printed, and the summary; the exit status (summarize's, or EXIT_NOT_COMPARED
    for an unreadable report or runs that are not comparable)."""
    try:
        (octx, ocases), (nctx, ncases) = load(a.old), load(a.new)
    except ReportError as e:
        print(f"compare_runs: {e}", file=sys.stderr)
        return EXIT_NOT_COMPARED
    warnings = []
    by_id = all(has_id(r) for r in ocases + ncases)
    old = keyed(ocases, by_id, "OLD", warnings)
    new = keyed(ncases, by_id, "NEW", warnings)
    joined = [k for k in old if k in new]
    only_old = [k for k in old if k not in new]
    only_new = [k for k in new if k not in old]

    print(describe("OLD", a.old, octx))
    print(describe("NEW", a.new, nctx))
    if by_id:
        how = "id"
    else:
        lacking = [label for label, cases in (("OLD", ocases), ("NEW", ncases)) if not all(map(has_id, cases))]
        how = f"repro ({' and '.join(lacking)} without case ids)"
    print(f"joined on {how}: {len(joined)} case(s) in both, {len(only_old)} only in OLD, {len(only_new)} only in NEW")

    for label, ctx in (("OLD", octx), ("NEW", nctx)):
        if ctx is None:
            warnings.append(f"{label} has no context record: its threads, library versions, host and cpu "
                            "cannot be checked")
    diffs = context_differences(octx, nctx, warnings) if octx is not None and nctx is not None else []
    diffs += case_differences(old, new, joined, warnings)
    if refuse(warnings, diffs, a, "runs"):
        return EXIT_NOT_COMPARED

    j = judge(joined, old, new, a)
    if j.bad_samples:
        print(f"compare_runs: warning: perf.samples_ms is not a list of times in {name_cases(j.bad_samples)}: "
              "judged by the threshold alone", file=sys.stderr)
    if j.unreachable:
        print(f"compare_runs: warning: too few samples to reach --alpha {a.alpha:g} in {name_cases(j.unreachable)} "
              "(more timed runs, e.g. --fix-times=10, or a larger --alpha): judged by the threshold alone",
              file=sys.stderr)
    print_rows(j.rows, only_old, only_new)
    return summarize(j, a, len(joined))


def u_test_column(key, so, sn, a, j):
    """One timed case's U test (new slower than old) on its samples `so` and `sn` (samples():
    False when unusable): (p or None when not tested, the table's p column). Counts in `j`
    (judge's) the cases tested and those whose samples can never reach --alpha, and loads the
    test on the first case with samples."""
    if so is False or sn is False:
        bad = [label for label, s in (("old", so), ("new", sn)) if s is False]
        return None, f"threshold only (samples_ms unusable in {' and '.join(bad)})"
    if not so or not sn:
        lacking = [label for label, s in (("old", so), ("new", sn)) if not s]
        return None, f"threshold only (no samples in {' or '.join(lacking)})"
    if min(len(so), len(sn)) < MIN_SAMPLES:
        return None, f"threshold only (old {len(so)}, new {len(sn)} samples, fewer than {MIN_SAMPLES})"
    if 1 / math.comb(len(so) + len(sn), len(so)) >= a.alpha:
        # The exact test's smallest p: no result could ever be significant at --alpha.
        j.unreachable.append(key)
        return None, (f"threshold only (old {len(so)}, new {len(sn)} samples: the U test's smallest p "
                      f"{1 / math.comb(len(so) + len(sn), len(so)):.3g} is not below --alpha {a.alpha:g})")
    if j.mwu == "unloaded":
        j.mwu = u_test()  # imported on the first case with samples (the note, if any, once)
    if j.mwu is None:
        return None, "threshold only (no SciPy)"
    p = float(j.mwu(sn, so, alternative="greater").pvalue)  # nan: not significant
    j.tested += 1
    return p, f"{p:.3g}"


def judge(joined, old, new, a):
    """Each case of `joined` (keys of both `old` and `new`) judged: a namespace of its rows (key,
    old time, new time, ratio, verdict, p column), the ratios of the cases timed in both, the keys
    slower (past --threshold and significant, or untested) and unsure (past it, not significant),
    the count tested, and the cases whose samples were unusable or too few to reach --alpha."""
    j = SimpleNamespace(rows=[], ratios=[], slower=[], unsure=[], tested=0, bad_samples=[], unreachable=[],
                        mwu="unloaded")
    for key in joined:
        o, n = old[key], new[key]
        to, tn = timing(o, a.stat), timing(n, a.stat)
        if to is None or tn is None:
            j.rows.append((key, to, tn, None, not_timed(o if to is None else None, n if tn is None else None), ""))
            continue
        r = tn / to
        j.ratios.append(r)
        so, sn = samples(o), samples(n)
        j.bad_samples += [f"{label} {key}" for label, s in (("OLD", so), ("NEW", sn)) if s is False]
        p, test = u_test_column(key, so, sn, a, j)
        if r > 1 + a.threshold:
            verdict = "SLOWER" if p is None or p < a.alpha else "slower?"
            (j.slower if verdict == "SLOWER" else j.unsure).append(key)
        else:
            verdict = "faster" if r < 1 - a.threshold else "same"
        j.rows.append((key, to, tn, r, verdict, test))
    return j


def print_rows(rows, only_old, only_new):
    """The per-case table (judge's rows), then the cases of one report only."""
    fmt_ms = lambda v: f"{v:.4g}" if v is not None else "-"  # noqa: E731
    width = max([len(r[0]) for r in rows] + [4])
    print(f"{'case':<{width}}  {'old ms':>10}  {'new ms':>10}  {'ratio':>7}  {'verdict':<7}  p (U test: new slower)")
    for key, to, tn, r, verdict, test in rows:
        line = f"{key:<{width}}  {fmt_ms(to):>10}  {fmt_ms(tn):>10}  {(f'{r:.3f}' if r else '-'):>7}  "
        print(f"{line}{verdict:<7}  {test}" if test else f"{line}{verdict}")
    for label, keys in (("OLD", only_old), ("NEW", only_new)):
        print(f"only in {label}: {len(keys)}")
        for key in keys:
            print(f"  {key}")


def summarize(j, a, joined):
    """The geometric mean and the verdict's lines; the exit status: EXIT_SLOWER when a case is
    slower, EXIT_NOT_COMPARED when none of the `joined` cases is timed in both reports, else 0."""
    if not j.ratios:
        print("geometric-mean ratio: no case timed in both reports")
        print(f"compare_runs: no case is timed in both reports ({joined} joined, none with "
              f"perf.{a.stat} in both): nothing compared (exit 2)", file=sys.stderr)
        return EXIT_NOT_COMPARED
    geo = math.exp(sum(math.log(r) for r in j.ratios) / len(j.ratios))
    print(f"geometric-mean ratio (new/old {a.stat}) over {len(j.ratios)} case(s): {geo:.4f}")
    print(f"significance (U test, alpha {a.alpha:g}): tested on {j.tested} of {len(j.ratios)} case(s); "
          f"{len(j.ratios) - j.tested} by the threshold alone")
    if j.unsure:
        print(f"{len(j.unsure)} case(s) past {a.threshold:.1%} but not significant (p >= {a.alpha:g}): "
              "not counted as slower")
    if j.slower:
        print(f"{len(j.slower)} case(s) slower than {a.threshold:.1%}")
        return EXIT_SLOWER
    print(f"no case slower than {a.threshold:.1%}")
    return 0


def without_backend(key):
    """The case without its --backend and --mode knobs: the same case on every backend."""
    return re.sub(r"(^| )--backend=\S+", "", without_mode(key)).strip()


def compare_backends(a):
    """--by=backend: each case's time per backend and its ratio to the baseline backend."""
    reads = []
    for path in a.reports:
        try:
            reads.append((path,) + load(path))
        except ReportError as e:
            print(f"compare_runs: {e}", file=sys.stderr)
            return EXIT_NOT_COMPARED
    diffs = []
    contexts = [(p, c) for p, c, _ in reads if c is not None]
    for p, c in contexts[1:]:
        for field in ("host", "cpu", "threads"):
            if c.get(field) != contexts[0][1].get(field):
                diffs.append(f"{field}: {show(contexts[0][1].get(field))} ({contexts[0][0]}) vs {show(c.get(field))} ({p})")
    if refuse([], diffs, a, "reports"):
        return EXIT_NOT_COMPARED
    times = defaultdict(dict)  # case key -> backend -> time
    backends, repeats = [], defaultdict(int)
    for path, _, cases in reads:
        for rec in cases:
            backend = rec.get("backend")
            key = without_backend(rec["id"]) if has_id(rec) else None
            if not backend or key is None:
                continue
            if backend not in backends:
                backends.append(backend)
            if backend in times[key]:
                repeats[(key, backend)] += 1
            times[key][backend] = timing(rec, a.stat)
    for (key, backend), n in repeats.items():
        print(f"compare_runs: warning: {n + 1} records of case {key} on {backend}; only the last is compared",
              file=sys.stderr)
    base = a.baseline or (backends[0] if backends else None)
    if base not in backends:
        print(f"compare_runs: --baseline={base}: no case ran on it (backends: {', '.join(backends) or 'none'})",
              file=sys.stderr)
        return EXIT_NOT_COMPARED
    others = [b for b in backends if b != base]
    print(f"backends: {base} (baseline), {', '.join(others) or 'no other'}; {len(times)} case(s); {a.stat}")
    fmt_ms = lambda v: f"{v:.4g}" if v is not None else "-"  # noqa: E731
    width = max([len(k) for k in times] + [4])
    cols = [f"{base} ms"] + [f"{b} ms (x{base})" for b in others]
    print(f"{'case':<{width}}  " + "  ".join(f"{c:>{max(len(c), 10)}}" for c in cols))
    ratios = defaultdict(list)
    for key, per in times.items():
        t0 = per.get(base)
        cells = [f"{fmt_ms(t0):>{max(len(cols[0]), 10)}}"]
        for b, col in zip(others, cols[1:]):
            t = per.get(b)
            r = t / t0 if t is not None and t0 is not None else None
            if r is not None:
                ratios[b].append(r)
            cells.append(f"{(fmt_ms(t) + (f' ({r:.3g}x)' if r is not None else '')):>{max(len(col), 10)}}")
        print(f"{key:<{width}}  " + "  ".join(cells))
    compared = False
    for b in others:
        rs = ratios[b]
        if rs:
            compared = True
            geo = math.exp(sum(math.log(r) for r in rs) / len(rs))
            print(f"geometric-mean ratio {b}/{base} ({a.stat}) over {len(rs)} case(s): {geo:.4f}")
        else:
            print(f"geometric-mean ratio {b}/{base}: no case timed on both")
    if not compared:
        print("compare_runs: no case is timed on two backends: nothing compared (exit 2)", file=sys.stderr)
        return EXIT_NOT_COMPARED
    return 0


def threshold(text):
    """--threshold: a finite number >= 0 (nan would pass every case, a negative one fail them all)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"'{text}' must be a finite number >= 0 (0.05 = 5%)")
    return v


def alpha(text):
    """--alpha: a significance level strictly between 0 and 1 (0 would never fail, 1 always)."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not 0 < v < 1:  # also refuses nan
        raise argparse.ArgumentTypeError(f"'{text}' must be a number with 0 < alpha < 1 (0.01 = 1%)")
    return v


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("reports", nargs="+", metavar="REPORT",
                    help="OLD NEW; with --by=backend one report or several")
    ap.add_argument("--by", choices=["run", "backend"], default="run",
                    help="run (default): OLD against NEW, case by case; backend: the backends of the reports side by "
                         "side, case by case")
    ap.add_argument("--baseline", default=None,
                    help="--by=backend: the backend the others are divided by (default: the first case's)")
    ap.add_argument("--threshold", type=threshold, default=0.05,
                    help="fail when new/old - 1 exceeds this, a finite number >= 0 (default 0.05 = 5%%)")
    ap.add_argument("--alpha", type=alpha, default=0.01,
                    help="significance level of the U test where both reports have perf.samples_ms: a case "
                         "past --threshold is slower only when p < ALPHA, 0 < ALPHA < 1 (default 0.01)")
    ap.add_argument("--stat", default=TIME_STATS[0], choices=TIME_STATS,
                    help="timing statistic compared (default median_ms)")
    ap.add_argument("--allow-context-change", action="store_true",
                    help="compare even when threads, libraries, host, cpu, mode or cold cache differ "
                         "(the differences are printed as a warning)")
    a = ap.parse_args()
    sys.stdout.reconfigure(line_buffering=True)  # stdout and stderr interleave in order in a CI log
    if a.by == "backend":
        return compare_backends(a)
    if a.baseline is not None:
        ap.error("--baseline goes with --by=backend")
    if len(a.reports) != 2:
        ap.error(f"compares two reports, OLD and NEW (got {len(a.reports)}); --by=backend takes one or more")
    a.old, a.new = a.reports
    return compare(a)


sys.exit(main())
