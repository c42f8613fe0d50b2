#!/usr/bin/env python3
"""Interleaved A/B timing of two sdpabench command lines, case by case, in ABBA order.

On a busy machine a run of A followed by a run of B compares A's quiet minute with B's noisy one.
This script runs the two command lines alternately on each case of one batch, in the order A B,
B A, A B, ... (rounds), so that each pair of runs sees the same machine, and judges each case by its
paired ratios B/A with a paired test.

  scripts/ab_interleave.py --a 'build-old/sdpabench' --b 'build/release/sdpabench' -- --mode=P --batch=cases/perf/x.cases
  scripts/ab_interleave.py --a 'LD_LIBRARY_PATH=/opt/onednn-3.12/lib build/release/sdpabench' \\
                           --b 'LD_LIBRARY_PATH=/opt/onednn-3.13/lib build/release/sdpabench' -- --dir=bwd b1hq8sq512d64

A and B are command lines split as a shell splits words (shlex), with leading NAME=VALUE words set
in that side's environment (no shell runs). The cases are those A lists for the case arguments
after "--" (A --mode=L); each run is one case: SIDE --mode=P --fix-times=N --no-progress
--report=jsonl:TMP REPRO, and its time is the report's perf.median_ms (--stat).

Per case: the median of the per-round ratios B/A (robust to the odd round a busy machine spoils),
and the Wilcoxon signed-rank test of the log ratios (SciPy's scipy.stats.wilcoxon, two-sided,
exact for small samples): a case DIFFERS when
its ratio is past 1 +/- --threshold AND p < --alpha, "slower" or "faster"; past the threshold with
p >= --alpha it is "maybe" (noise can explain it). With R rounds the smallest two-sided p is
2 / 2^R (0.0078 at 8 rounds), so --alpha 0.01 needs at least 8. Across cases: the geometric mean
of the per-case ratios. With OpenMP on an oversubscribed machine, a thread descheduled at a
barrier can stretch one run 100-fold: give both sides OMP_NUM_THREADS=1 there (A = 'OMP_NUM_THREADS=1
build/release/sdpabench').

--record FILE writes the commands and every run's time (JSON), and --replay FILE judges such a file
again without running anything (the CTest's recorded samples).

Exit status: 0 compared and no case differs; 1 some case differs (slower or faster); 2 usage error,
a run that failed or was not timed, or a record that cannot be read. Needs SciPy, installed by
scripts/setup.sh into the venv /opt/sdpabench-deps/py ($SDPABENCH_DEPS/py when that is set).
"""
import argparse
import json
import math
import os
import shlex
import statistics
import subprocess
import sys
import tempfile

from sdpabench_report import TIME_STATS, ReportError, read_report

EXIT_DIFFERS = 1
EXIT_ERROR = 2


class RunError(Exception):
    pass


def side(text):
    """(environment overrides, argv) of a side's command line: leading NAME=VALUE words, then the command."""
    words = shlex.split(text)
    env = {}
    while words and "=" in words[0] and not words[0].startswith(("-", "/", ".")) and words[0].split("=", 1)[0].isidentifier():
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    if not words:
        raise argparse.ArgumentTypeError(f"'{text}' names no command")
    return env, words


def run_report(cmd, args, tmpdir):
    """Runs side `cmd` with `args` and a jsonl report; its case records. Raises RunError."""
    env, argv = cmd
    path = os.path.join(tmpdir, "r.jsonl")
    if os.path.exists(path):
        os.remove(path)
    full = argv + ["--no-progress", f"--report=jsonl:{path}"] + args
    p = subprocess.run(full, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if p.returncode not in (0, 3) or not os.path.exists(path):
        raise RunError(f"{shlex.join(full)} exited {p.returncode}:\n{p.stdout[-2000:]}")
    try:
        return read_report(path)[1]
    except ReportError as e:
        raise RunError(str(e)) from None


def list_cases(cmd, case_args, tmpdir):
    """The repro lines of the cases A lists for `case_args`."""
    recs = run_report(cmd, ["--mode=L"] + case_args, tmpdir)
    bad = [r for r in recs if r.get("status") != "LISTED" or not r.get("repro")]
    if bad:
        raise RunError(f"case {bad[0].get('id')}: {bad[0].get('status')} ({bad[0].get('reason')})")
    return [r["repro"] for r in recs]


def time_case(cmd, repro, a, tmpdir):
    """One timed run of `repro` on side `cmd`: its perf[--stat] in ms."""
    tokens = [t for t in shlex.split(repro) if not t.startswith("--mode=")]
    recs = run_report(cmd, ["--mode=P", f"--fix-times={a.fix_times}"] + tokens, tmpdir)
    perf = recs[0].get("perf") if len(recs) == 1 else None
    if not isinstance(perf, dict) or not isinstance(perf.get(a.stat), (int, float)):
        r = recs[0] if recs else {}
        raise RunError(f"{repro}: not timed ({r.get('status')}: {r.get('reason')})")
    return float(perf[a.stat])


def measure(a):
    """Runs every case in ABBA rounds; the record {"a", "b", "stat", "cases": [{"repro", "a", "b", "order"}]}."""
    with tempfile.TemporaryDirectory() as tmpdir:
        cases = list_cases(a.a, a.case_args, tmpdir)
        print(f"ab_interleave: {len(cases)} case(s) x {a.rounds} round(s), ABBA order", flush=True)
        out = []
        for repro in cases:
            ta, tb, order = [], [], []
            for r in range(a.rounds):
                first_a = r % 2 == 0  # A B, B A, A B, ...
                for s in ("ab" if first_a else "ba"):
                    (ta if s == "a" else tb).append(time_case(a.a if s == "a" else a.b, repro, a, tmpdir))
                order.append("AB" if first_a else "BA")
            out.append({"repro": repro, "a": ta, "b": tb, "order": order})
    return {"a": shlex.join([f"{k}={v}" for k, v in a.a[0].items()] + a.a[1]),
            "b": shlex.join([f"{k}={v}" for k, v in a.b[0].items()] + a.b[1]),
            "stat": a.stat, "fix_times": a.fix_times, "cases": out}


def wilcoxon():
    try:
        from scipy.stats import wilcoxon as w
    except ImportError:
        deps = os.environ.get("SDPABENCH_DEPS", "/opt/sdpabench-deps")
        py = os.path.join(deps, "py", "bin", "python")
        sys.exit(f"ab_interleave: needs SciPy, which {sys.executable} lacks; scripts/setup.sh installs it: run\n"
                 f"  {shlex.join([py] + sys.argv)}")
    return w


def judge(record, a):
    """Prints one row per case and the summary; the exit status."""
    test = wilcoxon()
    print(f"A: {record['a']}\nB: {record['b']}")
    rows, logs, differs = [], [], []
    for c in record["cases"]:
        ta, tb = c["a"], c["b"]
        if len(ta) != len(tb) or not ta or min(ta + tb) <= 0:
            print(f"ab_interleave: {c['repro']}: unpaired or non-positive times", file=sys.stderr)
            return EXIT_ERROR
        d = [math.log(y / x) for x, y in zip(ta, tb)]
        ratio = math.exp(statistics.median(d))
        logs.append(math.log(ratio))
        p = float(test(d, alternative="two-sided").pvalue) if any(v != 0 for v in d) else 1.0
        past = abs(ratio - 1) > a.threshold
        verdict = ("slower" if ratio > 1 else "faster") if past and p < a.alpha else ("maybe" if past else "same")
        if verdict in ("slower", "faster"):
            differs.append(c["repro"])
        rows.append((c["repro"], sorted(ta)[len(ta) // 2], sorted(tb)[len(tb) // 2], ratio, p, verdict, len(d)))
    width = max([len(r[0]) for r in rows] + [4])
    print(f"{'case':<{width}}  {'A ms':>9}  {'B ms':>9}  {'B/A':>6}  {'p':>7}  verdict (paired rounds)")
    for repro, ma, mb, ratio, p, verdict, n in rows:
        print(f"{repro:<{width}}  {ma:>9.4g}  {mb:>9.4g}  {ratio:>6.3f}  {p:>7.3g}  {verdict} ({n})")
    geo = math.exp(sum(logs) / len(logs)) if logs else float("nan")
    n = min((r[6] for r in rows), default=0)
    print(f"geometric-mean ratio B/A over {len(rows)} case(s): {geo:.4f}")
    print(f"Wilcoxon signed-rank on {n} paired round(s) per case (smallest possible p {2 / 2 ** n:.3g}), "
          f"alpha {a.alpha:g}, threshold {a.threshold:.1%}")
    if differs:
        print(f"{len(differs)} case(s) differ between A and B")
        return EXIT_DIFFERS
    print("no case differs between A and B")
    return 0


def fraction(text):
    v = float(text)
    if not math.isfinite(v) or v < 0:
        raise argparse.ArgumentTypeError(f"'{text}' must be a finite number >= 0")
    return v


def main():
    argv = sys.argv[1:]
    case_args = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
                                 usage="%(prog)s (--a CMD --b CMD [options] -- CASE-ARGS... | --replay FILE)")
    ap.add_argument("--a", type=side, help="side A's command line (NAME=VALUE words first set its environment)")
    ap.add_argument("--b", type=side, help="side B's command line")
    ap.add_argument("--rounds", type=int, default=8, help="paired rounds per case, A B then B A alternately (default 8)")
    ap.add_argument("--fix-times", type=int, default=5, help="timed runs per sdpabench run (--fix-times, default 5)")
    ap.add_argument("--stat", default=TIME_STATS[0], choices=TIME_STATS,
                    help="the time of one run (default median_ms)")
    ap.add_argument("--threshold", type=fraction, default=0.05, help="smallest ratio change flagged (default 0.05)")
    ap.add_argument("--alpha", type=fraction, default=0.01, help="significance level (default 0.01)")
    ap.add_argument("--record", help="write the commands and every run's time to FILE (JSON)")
    ap.add_argument("--replay", help="judge a --record FILE again, running nothing")
    a = ap.parse_args(argv)
    a.case_args = case_args
    sys.stdout.reconfigure(line_buffering=True)
    if a.replay:
        try:
            with open(a.replay, encoding="utf-8") as f:
                record = json.load(f)
        except (OSError, json.JSONDecodeError) as e:
            print(f"ab_interleave: {a.replay}: {e}", file=sys.stderr)
            return EXIT_ERROR
        return judge(record, a)
    if not a.a or not a.b or not case_args:
        ap.error("needs --a CMD, --b CMD and the case arguments after '--' (or --replay FILE)")
    if a.rounds < 2 or a.fix_times < 1:
        ap.error("--rounds must be at least 2 and --fix-times at least 1")
    wilcoxon()  # before the runs: no SciPy is known now, not after them
    try:
        record = measure(a)
    except RunError as e:
        print(f"ab_interleave: {e}", file=sys.stderr)
        return EXIT_ERROR
    if a.record:
        with open(a.record, "w", encoding="utf-8") as f:
            json.dump(record, f, indent=1)
            f.write("\n")
    return judge(record, a)


if __name__ == "__main__":
    sys.exit(main())
