#!/usr/bin/env python3
"""Tolerance calibration (scripts/calibrate.sh runs this).

Draws N random correct cases from a seed (shapes, GQA ratios, masks, dtypes, directions, fills),
runs them with `sdpabench -v` on one backend, parses the per-output margin lines
("    O: worst |err|/bound R ... norm N sum S") and prints, per (output, dtype), the count and the
max, p99.9 and p99 of |err|/bound (the per-element check), of the head-norm check and, for stats,
of the softmax-sum check. Ratios are relative to the constants in compare/tolerance.cpp at the
time of the run (a ratio of 1 is the FAILED threshold). Also lists every case that did not PASS.

Excluded: the cases a known vendor bug explains, wherever it shows (the run uses
cases/known/expected.jsonl, whose entries say the bugs' conditions; their cases are XFAIL, or XPASS
where the bug stayed under the bound, and their margins say nothing about the tolerance), e.g.
oneDNN's AMX bf16 mask bug on an AMX CPU, PyTorch flash's 16-bit log-sum-exp.
"""
import argparse
import collections
import math
import random
import re
import subprocess
import sys
import tempfile

from sdpabench_tables import TableError, executable, knob

SEQ = [1, 2, 3, 7, 16, 17, 31, 32, 33, 63, 64, 65, 96, 97, 113, 127, 128, 129, 160, 192]
HEAD = [8, 16, 32, 64, 72, 80, 96, 128]


DMASK_SHAPES = ["1x1xSqxSkv", "Bx1xSqxSkv", "BxHqxSqxSkv", "1xHqxSqxSkv", "1x1x1xSkv", "Bx1x1xSkv", "1xHqx1xSkv",
                "BxHqx1xSkv"]


FP8 = ("e4m3", "e5m2")


def draw(rng, fills, dmask=False, dts=("f32", "bf16", "f16")):
    """One random correct case as a line of the case language; `fills` the fill policies to draw
    from (the fill knob's choices)."""
    while True:
        dt = rng.choice(dts)
        direction = rng.choice(["fwd_t", "bwd"])
        # fp8: the forms cuDNN takes on Hopper (no bias, top-left causal only, D a multiple of 16).
        mask = rng.choice(["none", "causal_tl"] if dt in FP8 else ["none", "causal_tl", "causal_br", "bias"])
        shape = rng.choice(["1x1xSqxSkv", "Bx1xSqxSkv", "BxHqxSqxSkv"])
        if dmask:  # the bias gradient: bwd with a bias of every broadcast shape
            direction, mask, shape = "bwd", "bias", rng.choice(DMASK_SHAPES)
        b = rng.choice([1, 1, 2])
        hkv = rng.choice([1, 2])
        hq = hkv * rng.choice([1, 2, 4, 7])
        sq, skv = rng.choice(SEQ), rng.choice(SEQ)
        heads = [16, 32, 64, 128] if dt in FP8 else HEAD
        dqk = rng.choice(heads)
        dv = dqk if rng.random() < 0.7 else rng.choice(heads)
        knobs = [f"--dir={direction}", f"--dt={dt}", f"--mask={mask}", f"--fill={rng.choice(fills)}",
                 f"--seed={rng.randrange(1, 1 << 31)}"]
        if mask == "bias":
            knobs.append(f"--mask-shape={shape}")
        if dmask:
            knobs.append("--dmask=true")
        if rng.random() < 0.15:
            knobs.append("--scale-op=div")
        desc = f"b{b}hq{hq}hkv{hkv}sq{sq}skv{skv}dqk{dqk}dv{dv}"
        return " ".join(["--reset"] + knobs + [desc])


def report_order(cases):
    """The outputs in the order sdpabench reports them, from `cases`: [(direction's rank, [its
    outputs as its margin lines came])], a case printing its outputs in that order. An output goes
    after every output some case printed before it; outputs no case relates (a fwd_t case's O, a
    bwd case's dQ) go by the rank of the first direction they were seen in (the dir knob's order:
    forward first), then by when they were first seen."""
    after, first = collections.defaultdict(set), {}
    for rank, outs in cases:
        for i, out in enumerate(outs):
            first[out] = min(first.get(out, (rank, len(first))), (rank, len(first)))
            after[out].update(outs[:i])
    order = []
    while len(order) < len(first):
        order.append(min((o for o in first if o not in order and after[o] <= set(order)), key=first.get))
    return order


def read_run(stdout, dirs):
    """The margins of a `sdpabench -v` run's output: ({(output, dt): {check: [ratio]}}, Counter of
    statuses, [lines of the cases that did not pass], the outputs in report order). `dirs`: the
    dir knob's row of the knob table (its choices in order, its default for a repro without
    --dir)."""
    status_re = re.compile(r"^(\d+):([A-Z_]+)(.*)__REPRO: (.*)$")
    margin_re = re.compile(r"^\s+(\w+): worst \|err\|/bound (\S+) .* norm (\S+) sum (\S+)")
    ranks = dirs["choices"].split("|")
    per = collections.defaultdict(lambda: collections.defaultdict(list))
    statuses = collections.Counter()
    bad, cases = [], []
    dt = None
    for line in stdout.splitlines():
        m = status_re.match(line)
        if m:
            statuses[m.group(2)] += 1
            repro = m.group(4)
            d, direction = re.search(r"--dt=(\w+)", repro), re.search(r"--dir=(\w+)", repro)
            direction = direction.group(1) if direction else dirs["default"]
            cases.append((ranks.index(direction) if direction in ranks else len(ranks), []))
            dt = d.group(1) if d else "f32"
            if m.group(2) in ("XFAIL", "XPASS"):  # a known vendor bug's case: its margins say nothing about
                dt = None                           # the tolerance (an XPASS is one where it stayed under it)
                continue
            if m.group(2) != "PASSED":
                bad.append(line[:400])
            continue
        m = margin_re.match(line)
        if m and cases:
            cases[-1][1].append(m.group(1))
        if m and dt:
            out = m.group(1)
            per[(out, dt)]["elem"].append(float(m.group(2)))
            if out == "stats":
                per[(out, dt)]["sum"].append(float(m.group(4)))
            else:
                per[(out, dt)]["norm"].append(float(m.group(3)))
    return per, statuses, bad, report_order(cases)


def pct(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--exe", default=executable(), help="the sdpabench binary (default $SDPABENCH, else "
                    "build/release/sdpabench)")
    ap.add_argument("--backend", default="onednn")
    ap.add_argument("--cases", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--dmask", action="store_true", help="draw bwd cases with a bias of every shape and --dmask=true")
    ap.add_argument("--dt", default="f32,bf16,f16",
                    help="comma list of io types to draw (e4m3,e5m2 on --backend=cudnn: the fp8 rows)")
    ap.add_argument("--random", action="store_true",
                    help="draw the cases with sdpabench's own --random=N --seed=S (every knob: scales, strides, "
                         "padding, windows, dropout) instead of this script's draw")
    args = ap.parse_args()

    try:
        fills, dirs = knob("fill", args.exe)["choices"].split("|"), knob("dir", args.exe)
    except TableError as e:
        print(f"calibrate: {e}", file=sys.stderr)
        return 2
    rng = random.Random(args.seed)
    if args.random:
        lines = [f"--seed={args.seed} --random={args.cases}"]
    else:
        lines = [draw(rng, fills, args.dmask, tuple(args.dt.split(","))) for _ in range(args.cases)]
    with tempfile.NamedTemporaryFile("w", suffix=".cases", delete=False) as f:
        f.write("\n".join(lines) + "\n")
        batch = f.name
    cmd = [args.exe, "-v", "--no-progress", "--expect=cases/known/expected.jsonl", f"--backend={args.backend}",
           f"--batch={batch}"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    per, statuses, bad, order = read_run(proc.stdout, dirs)
    print(f"calibrate: {args.cases} cases, seed {args.seed}, backend {args.backend}, exit {proc.returncode}")
    print("statuses: " + " ".join(f"{k}:{v}" for k, v in sorted(statuses.items())))
    print(f"{'output':6} {'dt':5} {'check':5} {'n':>5} {'max':>9} {'p99.9':>9} {'p99':>9}")
    for (out, dt) in sorted(per, key=lambda k: (order.index(k[0]), k[1])):
        for check, vals in per[(out, dt)].items():
            print(f"{out:6} {dt:5} {check:5} {len(vals):5d} {max(vals):9.3g} {pct(vals, 0.999):9.3g} "
                  f"{pct(vals, 0.99):9.3g}")
    for line in bad:
        print("not passed: " + line)
    return 1 if statuses.get("FAILED", 0) else 0


if __name__ == "__main__":
    sys.exit(main())
