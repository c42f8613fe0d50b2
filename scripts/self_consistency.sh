#!/usr/bin/env bash
# The bound covers every correct rounding of the intermediates (compare/README.md, "Intermediates"):
# the reference keeping P and the scaled dS in f32, run as a vendor (test:ref_f32), must PASS against
# the reference that rounds them to the io type as oneDNN's graphs do, and the other way round
# (test:ref_rounded), on seeded random cases over every dtype, direction, mask and fill (--random).
# Prints each side's summary line and its largest |err|/bound per output and dtype; exits 1 when a
# case FAILED on either side.
# Usage: scripts/self_consistency.sh [N [SEED]]    default: 2000 cases, seed 1
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
exe=build/${SDPABENCH_PRESET:-release}/sdpabench
[ -x "$exe" ] || bash scripts/build.sh >&2
n=${1:-2000} seed=${2:-1}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
for be in test:ref_f32 test:ref_rounded; do
  rc=0
  "$exe" --no-progress --no-rerun-failed --backend=$be --seed="$seed" --random="$n" --report=jsonl:"$tmp/r.jsonl" \
    >"$tmp/out" 2>&1 || rc=$?
  echo "$be: $(grep -E '^tests:' "$tmp/out" | tail -n 1) (exit $rc)"
  grep -E '^[0-9]+:FAILED' "$tmp/out" | head -n 5 || true
  python3 - "$tmp/r.jsonl" <<'PY'
import collections, json, sys
worst = collections.defaultdict(float)
for line in open(sys.argv[1]):
    r = json.loads(line)
    for o in (r.get("outputs") or []) if "context" not in r else []:
        if o["worst_ratio"] is not None:
            k = (o["output"], r["dt"])
            worst[k] = max(worst[k], o["worst_ratio"])
print("  largest |err|/bound: " + " ".join(f"{o}/{dt} {v:.2f}" for (o, dt), v in sorted(worst.items())))
PY
  [ "$rc" -eq 0 ] || status=1
done
exit $status
