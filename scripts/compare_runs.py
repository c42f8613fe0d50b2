#!/usr/bin/env python3
"""Compares two sdpabench jsonl reports (--report=jsonl:PATH) case by case.

Joins the records on their repro line (the case name), prints a table of per-case time ratios
(new median / old median; medians are robust to the odd slow run), the geometric-mean ratio over
the joined cases, and exits 1 when any case is slower than --threshold (default 0.05 = 5%).
Cases present in only one report, or without timings in either, are listed but never fail.
Standard library only.

Usage: compare_runs.py OLD.jsonl NEW.jsonl [--threshold 0.05] [--stat median_ms]
"""
import argparse
import json
import math
import sys


def load(path):
    """repro -> timing (ms) of the chosen stat, None when the case was not timed."""
    out = {}
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"compare_runs: {path}:{n}: not JSON ({e}); a killed run's last line may be cut")
            key = rec.get("repro") or f"#{rec.get('idx')}"
            out[key] = rec.get("perf")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--threshold", type=float, default=0.05,
                    help="fail when new/old - 1 exceeds this (default 0.05 = 5%%)")
    ap.add_argument("--stat", default="median_ms", choices=["median_ms", "min_ms", "mean_ms"],
                    help="timing statistic compared (default median_ms)")
    a = ap.parse_args()
    old, new = load(a.old), load(a.new)

    rows, ratios, slower = [], [], []
    for key in list(old) + [k for k in new if k not in old]:
        o, n = old.get(key), new.get(key)
        to = o.get(a.stat) if o else None
        tn = n.get(a.stat) if n else None
        if key not in old or key not in new:
            rows.append((key, to, tn, None, "only in " + ("new" if key not in old else "old")))
        elif not to or not tn:
            rows.append((key, to, tn, None, "not timed"))
        else:
            r = tn / to
            ratios.append(r)
            verdict = "SLOWER" if r > 1 + a.threshold else ("faster" if r < 1 - a.threshold else "same")
            if verdict == "SLOWER":
                slower.append(key)
            rows.append((key, to, tn, r, verdict))

    fmt_ms = lambda v: f"{v:.4g}" if isinstance(v, (int, float)) else "-"
    width = max([len(r[0]) for r in rows] + [4])
    print(f"{'case':<{width}}  {'old ms':>10}  {'new ms':>10}  {'ratio':>7}  verdict")
    for key, to, tn, r, verdict in rows:
        print(f"{key:<{width}}  {fmt_ms(to):>10}  {fmt_ms(tn):>10}  {(f'{r:.3f}' if r else '-'):>7}  {verdict}")
    if ratios:
        geo = math.exp(sum(math.log(r) for r in ratios) / len(ratios))
        print(f"geometric-mean ratio (new/old {a.stat}) over {len(ratios)} case(s): {geo:.4f}")
    else:
        print("geometric-mean ratio: no case timed in both reports")
    if slower:
        print(f"{len(slower)} case(s) slower than {a.threshold:.1%}")
        return 1
    return 0


sys.exit(main())
