#!/usr/bin/env bash
# Measures the false-alarm rate of the dropout mask checks
# (docs/knobs_dropout.md#checks-that-need-no-knowledge-of-the-generator): runs N correct
# dropout cases (random shapes, drop probabilities, seeds and offsets, drawn from --seed) on a
# backend whose kernel is right, and counts those the checks call FAILED. Prints the count, the
# smallest p-values seen and the share of heads' keep-rate p-values below 0.05 and 0.01.
#
# Usage: scripts/dropout_false_alarm.sh [N=1000] [BACKEND=ref] [SEED=1]
#   SDPABENCH names the binary (default build/release/sdpabench). Exit 0 when no case FAILED.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
exe=${SDPABENCH:-$here/../build/release/sdpabench}
n=${1:-1000} backend=${2:-ref} seed=${3:-1}
[ -x "$exe" ] || { echo "dropout_false_alarm.sh: no binary at $exe (build first)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Cases: offsets >= 1 (offset 0 is oneDNN's legacy path, which the pair rule fails on purpose).
python3 - "$n" "$seed" >"$tmp/cases" <<'PY'
import random, sys
n, seed = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(seed)
for k in range(n):
    b, hkv = rng.choice([1, 2]), rng.choice([1, 2, 4])
    hq = hkv * rng.choice([1, 2])
    sq, skv = rng.choice([16, 33, 64, 100]), rng.choice([16, 48, 64, 129])
    p = rng.choice([0.05, 0.1, 0.2, 0.3, 0.5, 0.7, 0.9])
    d = rng.choice(["fwd_t", "bwd"])
    print(f"--dir={d} --dropout={p}:{rng.getrandbits(64)}:{rng.randrange(1, 1 << 40)} b{b}hq{hq}hkv{hkv}sq{sq}skv{skv}d16")
PY
set +e
"$exe" --backend="$backend" --batch="$tmp/cases" --report="jsonl:$tmp/out.jsonl" >"$tmp/log" 2>&1
set -e
python3 - "$tmp/out.jsonl" "$backend" <<'PY'
import json, sys
recs = [r for r in map(json.loads, open(sys.argv[1])) if "context" not in r and "end" not in r]  # the cases only
failed = [r for r in recs if r["status"] == "FAILED"]
checks = [r["dropout_checks"] for r in recs if r.get("dropout_checks") and r["dropout_checks"].get("keep_p_value") is not None]
keep = [c["keep_p_value"] for c in checks]
pairs = [c["pairs_p_value"] for c in checks]
thr = min(c["threshold"] for c in checks) if checks else 0
print(f"backend {sys.argv[2]}: {len(recs)} correct dropout cases, {len(failed)} FAILED (threshold per test >= {thr:.3g})")
for r in failed[:5]:
    print(f"  FAILED: {r['reason']} -- {r['repro']}")
if checks:
    print(f"  smallest keep-rate p-value {min(keep):.3g}, smallest neighbour-pair p-value {min(pairs):.3g}")
    print(f"  cases whose worst head's keep-rate p-value < 0.05: {sum(k < 0.05 for k in keep)}, < 0.01: {sum(k < 0.01 for k in keep)}")
others = [r for r in recs if r["status"] not in ("PASSED", "FAILED")]
if others:
    print(f"  {len(others)} cases neither PASSED nor FAILED, e.g. {others[0]['status']}: {others[0]['reason']}")
sys.exit(1 if failed or others else 0)
PY
