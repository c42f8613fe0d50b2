#!/usr/bin/env bash
# What --threads does to a vendor (docs/knobs_run.md#threads---threadsn): one case timed with
# --threads=1 and --threads=N (default: every CPU of this process), each line giving the vendor's
# median time, the threads the run context records (the reference's and each vendor's runtime as it
# reports them) and the cores the vendor kept busy (vendor_cpu_util), then the ratio of the medians.
# Usage: scripts/bench_threads.sh [N [CASE_TOKENS...]]
#   default: N = nproc, --backend=onednn --dir=bwd --dt=bf16 --fix-times-per-prb=30 b1hq8sq512d64
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
exe=build/${SDPABENCH_PRESET:-release}/sdpabench
[ -x "$exe" ] || bash scripts/build.sh >&2
n=${1:-$(nproc)}
[ $# -gt 0 ] && shift
case $n in ''|*[!0-9]*) echo "bench_threads.sh: N must be a number of threads >= 2 (got '$n')" >&2; exit 2 ;; esac
[ "$n" -ge 2 ] || { echo "bench_threads.sh: N must be >= 2 to compare with one thread (got $n)" >&2; exit 2; }
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(--backend=onednn --dir=bwd --dt=bf16 --fix-times-per-prb=30 b1hq8sq512d64)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for t in 1 "$n"; do
  "$exe" --no-progress --mode=P --threads="$t" --report=jsonl:"$tmp/t$t.jsonl" "${args[@]}" >/dev/null
done
python3 - "$tmp/t1.jsonl" "$tmp/t$n.jsonl" "$n" <<'PY'
import json, sys
def run(path):
    recs = [json.loads(l) for l in open(path)]
    return recs[0]["context"], [r for r in recs[1:] if r.get("perf")]
medians = {}
for path, t in ((sys.argv[1], 1), (sys.argv[2], int(sys.argv[3]))):
    ctx, cases = run(path)
    for r in cases:
        medians.setdefault(r["id"], []).append(r["perf"]["median_ms"])
        print(f"--threads={t}: {r['id']}: median {r['perf']['median_ms']:.2f} ms, vendor_cpu_util "
              f"{r['vendor_cpu_util']:.2f}; context threads {ctx['threads']}, cpus {ctx['cpus']}, "
              f"vendor_threads {'; '.join(ctx['vendor_threads'])}")
for case, (one, many) in medians.items():
    print(f"{case}: --threads=1 / --threads={sys.argv[3]} = {one / many:.2f}x")
if not medians:
    sys.exit("bench_threads.sh: no case was timed (a --mode other than P among the arguments?)")
PY
