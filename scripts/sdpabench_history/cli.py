"""What changed across revisions and machines, from sdpabench's results store (docs/tracking.md).

Run it as scripts/history (which finds the Python of scripts/setup.sh's venv). Every subcommand
reads the store given by --db (sqlite:PATH or postgresql:URL, as --report takes them), prints a
table (or with --json a JSON list) and exits 1 when it flags something, 0 when not, 2 for bad
usage or an unreadable store.

  ingest FILE.jsonl...  store JSONL reports (runs build/release/sdpabench-store, or
                        $SDPABENCH_STORE): each file is a run or one shard of a run
  runs                  the runs: key, order value, machines, start, cases, complete or not
  changes               what happened to each timing series, one finding per line: changes
                        (scripts/sdpabench_history/detect.py: outliers named, a robust step
                        test, Otava's change points as candidates; --method=otava: Otava's
                        analysis alone), each with its revision, direction, size, p-value, what
                        else changed in the run context there, which machines saw it ("this
                        machine only" when others did not), the noisy runs around it, and "and
                        less accurate" when an output's margin got worse at the same revision;
                        outliers ("outlier at rev N"); noisy runs, judged from each run's noise
                        samples and its cases moving together; and context changes of each
                        machine. Flags slower changes and less accurate ones
  margins               steps in each output's worst_ratio (|err|/bound of its worst element) over
                        the passing runs, ranked by how close the new margin is to 1, with the
                        case's repro line; flags the steps that got worse
  flaky                 cases whose status differs between runs at one revision, or goes back
                        and forth across revisions; flags every one
  bench                 the detection-power benchmark (scripts/sdpabench_history/bench.py:
                        synthetic nightly series; bench --help)
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
import os
import subprocess
import sys
from collections import defaultdict

from sdpabench_tables import executable

from .findings import analyze, changes_flagged, flaky_cases
from .options import at_least, pvalue
from .render import CHANGE_COLUMNS, FLAKY_COLUMNS, MARGIN_COLUMNS, report, table
from .series import select, shown
from .store import TIMING_METRICS, Unusable, as_dict, connect, flag, is_number, json_column, load, machine_of, \
    natural_key, rows


def ingest(a):
    """scripts/history ingest: the JSONL reports a.files into the store a.db by sdpabench-store
    (build/release/sdpabench-store, or $SDPABENCH_STORE); its exit status."""
    exe = executable("sdpabench-store", "SDPABENCH_STORE")
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
            contexts.setdefault(k, as_dict(json_column(c)))
    finally:
        conn.close()
    cases = defaultdict(int)
    for p in points:
        cases[p.run] += 1

    def order_of(key):
        ctx = contexts.get(key, {})
        return str(ctx.get("start", "")) if order_by == "start" else as_dict(ctx.get("tags")).get(order_by)
    values = {k: order_of(k) for k, *_ in state}
    numeric = all(is_number(v) for v in values.values() if v is not None)
    key_of = (lambda v: (float(v),)) if numeric else (lambda v: natural_key(str(v)))
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


def main(argv=None):
    """scripts/history SUBCOMMAND ...: the exit status (the module's docstring); `bench` runs
    bench.main with the arguments after it."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["bench"]:
        from .bench import main as bench
        return bench(argv[1:])
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
    otava.add_argument("--metric", choices=sorted(TIMING_METRICS), default=next(iter(TIMING_METRICS)),
                       help="the timing metric (default: TIMING_METRICS' first)")
    otava.add_argument("--max-pvalue", type=pvalue, default=0.001,
                       help="Otava's max_pvalue, in (0, 1] (default %(default)s)")
    otava.add_argument("--min-magnitude", type=at_least(0.0), default=0.05,
                       help="smaller relative changes are not reported, >= 0 (default %(default)s)")
    otava.add_argument("--window", type=at_least(2, int), default=50,
                       help="Otava's window_len, >= 2 (default %(default)s)")
    otava.add_argument("--method", choices=("robust", "otava"), default="robust",
                       help="robust: outliers named, a robust step test with Otava's change points as candidates "
                            "(scripts/sdpabench_history/detect.py); otava: Otava's analysis alone "
                            "(default %(default)s)")
    p = sub.add_parser("ingest", help="store JSONL reports")
    p.add_argument("--db", required=True, help="the store: sqlite:PATH or postgresql:URL")
    p.add_argument("files", nargs="+", help="JSONL reports (--report=jsonl:PATH)")
    sub.add_parser("runs", parents=[base], help="list the runs")
    sub.add_parser("changes", parents=[common, otava],
                   help="changes, outliers, noisy runs and context changes of the timing series")
    sub.add_parser("margins", parents=[common, otava], help="steps of the outputs' worst_ratio")
    sub.add_parser("flaky", parents=[common], help="cases whose status flips")
    # Listed for the usage line: main() runs bench before this parser sees it.
    sub.add_parser("bench", add_help=False, help="the detection-power benchmark (scripts/history bench --help)")
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
        from .page import write_page
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
