#!/usr/bin/env bash
# scripts/bench_check.sh on one small case: it prints every phase, the overhead ratio and the
# comparison's rate from the run's JSONL, and refuses bad arguments (exit 2). The figures are the
# benchmark's; this only keeps the script working. Usage: bench_check_test.sh SDPABENCH_EXE SOURCE_DIR
set -uo pipefail
exe=$1 src=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { echo "FAIL (bench_check): $*"; cat "$out"; exit 1; }
bash "$src/scripts/bench_check.sh" --exe "$exe" --repeat 2 --case "--backend=ref --dir=bwd --dt=bf16 b1hq2sq64d32" >"$out" 2>&1 \
  || fail "exit $?"
grep -qE '^  2 run\(s\), status PASSED' "$out" || fail "no '2 run(s), status PASSED' line"
grep -qE '^  case [0-9.]+ = fill [0-9.]+ \+ displace [0-9.]+ \+ prepare [0-9.]+ \+ vendor [0-9.]+ \+ read [0-9.]+ \+ reference [0-9.]+ \+ compare [0-9.]+' "$out" \
  || fail "no line of phases in pipeline order"
grep -qE '^  overhead \(case - vendor - reference - displace\) / case: [0-9.]+% \(runs: [0-9.]+%, [0-9.]+%\)' "$out" \
  || fail "no overhead line"
grep -qE '^  compare: 12288 output elements in [0-9.]+ ms: [0-9]+ M elements/s' "$out" \
  || fail "no comparison rate over dQ + dK + dV = 3 x 2 x 64 x 32 elements"
grep -qE '^  load average before [0-9.]+ [0-9.]+ [0-9.]+, after ' "$out" || fail "no load average"
bash "$src/scripts/bench_check.sh" --exe "$exe" --repeat 0 >"$out" 2>&1
[ $? -eq 2 ] || fail "--repeat 0 must exit 2"
echo "bench_check: ok"
