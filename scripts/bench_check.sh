#!/usr/bin/env bash
# What a correctness check costs beside its reference: runs a fixed set of cases in --mode=C, each
# case REPEAT times in one batch (so the repeats reuse the process's host buffers, as the cases of
# a batch do), and prints per case the median over the repeats of every phase's wall time
# (reports/case_result.hpp Phase), the overhead ratio (case - vendor - reference - displace) / case,
# the comparison's rate in output elements per second (the outputs' sizes over the compare phase),
# and the load average before and after the case. A benchmark, not a test: it prints figures and
# judges nothing (docs/perf_and_reports.md#what-a-check-costs has the figures and the targets).
#
# Usage: scripts/bench_check.sh [--exe PATH] [--repeat N] [--case 'TOKENS...']...
#   --exe PATH     the sdpabench binary (default build/release/sdpabench; another build, e.g. an older
#                  one, gives its figures on the same cases; a build without the read/other phases
#                  or the outputs' element counts shows "other" as what its phases leave and no rate)
#   --repeat N     runs per case (default 3)
#   --case TOKENS  replaces the fixed set (repeatable), e.g. --case '--dir=bwd b1hq8sq512d64'
# The fixed set: PyTorch's CPU flash backward (bf16, GQA, causal), a oneDNN bf16 backward, a oneDNN
# f32 forward, and a GQA causal backward with S = 2048 on the reference backend.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
exe="$root/build/release/sdpabench"
repeat=3
cases=()
while [ $# -gt 0 ]; do
  case "$1" in
    --exe) exe=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --case) cases+=("$2"); shift 2 ;;
    -h|--help) sed -n '2,17p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "bench_check: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$exe" ] || { echo "bench_check: $exe is not an executable (build first: scripts/build.sh)" >&2; exit 2; }
[[ "$repeat" =~ ^[1-9][0-9]*$ ]] || { echo "bench_check: --repeat takes a positive integer, got '$repeat'" >&2; exit 2; }
if [ ${#cases[@]} -eq 0 ]; then
  cases=(
    "--backend=torch:flash --dir=bwd --dt=bf16 --mask=causal_tl b1hq32hkv8sq1024d128"
    "--backend=onednn --dir=bwd --dt=bf16 b1hq64sq512d64"
    "--backend=onednn --dir=fwd_t --dt=f32 --mask=causal_tl b2hq16sq1024d64"
    "--backend=ref --dir=bwd --dt=bf16 --mask=causal_tl b1hq32hkv8sq2048d128"
  )
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "sdpabench: $exe ($("$exe" --version 2>/dev/null | head -n 1)); $(nproc) CPUs, OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset}"
k=0
for c in "${cases[@]}"; do
  k=$((k + 1))
  load_before=$(cut -d' ' -f1-3 /proc/loadavg)
  # shellcheck disable=SC2086  # the case's tokens split on purpose
  problem=${c##* }
  tokens=(${c% *})
  batch=()
  for _ in $(seq "$repeat"); do batch+=("$problem"); done
  rc=0
  "$exe" "${tokens[@]}" --report="jsonl:$tmp/$k.jsonl" "${batch[@]}" >"$tmp/$k.out" 2>&1 || rc=$?
  load_after=$(cut -d' ' -f1-3 /proc/loadavg)
  python3 - "$tmp/$k.jsonl" "$c" "$rc" "$load_before" "$load_after" "$tmp/$k.out" <<'EOF'
import json, statistics, sys

path, case, rc, load0, load1, out = sys.argv[1:]
records = []
try:
    with open(path) as f:
        records = [r for r in map(json.loads, f) if "context" not in r and "end" not in r]
except FileNotFoundError:
    pass
print(f"\n{case}")
print(f"  load average before {load0}, after {load1}; exit {rc}")
ran = [r for r in records if r.get("checked") and r.get("case_ms")]  # the cases whose outputs were compared
if not ran:
    print("  no case ran: " + " | ".join(l.strip() for l in open(out) if ":" in l)[:400])
    sys.exit(0)
statuses = sorted({r["status"] for r in ran})
order = ["fill", "displace", "prepare", "vendor", "read", "reference", "compare", "dropout", "rerun", "other"]
phases = sorted(ran[0]["phases_ms"], key=lambda p: order.index(p) if p in order else len(order))  # pipeline order
med = lambda xs: statistics.median(xs)
case_ms = med([r["case_ms"] for r in ran])
ph = {p: med([r["phases_ms"].get(p) or 0.0 for r in ran]) for p in phases}
if "other" not in ph:  # a build that does not report it: what its phases leave
    ph["other"] = med([r["case_ms"] - sum(v or 0.0 for v in r["phases_ms"].values()) for r in ran])
print(f"  {len(ran)} run(s), status {'/'.join(statuses)}; median ms per phase:")
print("  case {:.1f} = ".format(case_ms) + " + ".join(f"{p} {v:.1f}" for p, v in ph.items() if v > 0))
ratios = [(r["case_ms"] - sum((r["phases_ms"].get(p) or 0.0) for p in ("vendor", "reference", "displace"))) / r["case_ms"]
          for r in ran]
print(f"  overhead (case - vendor - reference - displace) / case: {100 * med(ratios):.1f}% "
      f"(runs: {', '.join(f'{100 * x:.1f}%' for x in ratios)})")
elements = [sum(o.get("elements", 0) for o in r.get("outputs", [])) for r in ran]
if all(elements) and ph.get("compare", 0) > 0:
    rates = [e / (r["phases_ms"]["compare"] * 1e-3) for e, r in zip(elements, ran)]
    print(f"  compare: {elements[0]} output elements in {ph['compare']:.1f} ms: {med(rates) / 1e6:.0f} M elements/s")
else:
    print("  compare: this build reports no output element counts (no rate)")
EOF
done
