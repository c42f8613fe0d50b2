#!/usr/bin/env bash
# Checks scripts/ab_interleave.py on recorded samples (data/ab_planted.json: B the same binary
# with SDPABENCH_TEST_SLOWDOWN=1.3 on --backend=test:slow; data/ab_same.json: A = B; both recorded
# on the shared 2-core development machine at a load average of 10-11 with a CPU hog beside them,
# 4 cases x 10 rounds, OMP_NUM_THREADS=1): the planted 1.3x slowdown is flagged, A = B is not; then
# the usage errors and one short live run of A = B on the reference. Usage: ab_interleave_test.sh EXE SOURCE_DIR
set -uo pipefail
exe=$1 src=$2
data=$src/tests/scripts/data
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
touch "$tmp/out"
fail() { echo "FAIL (ab_interleave): $*"; cat "$tmp/out"; exit 1; }
has() { grep -qE -- "$1" "$tmp/out" || fail "${2:-output lacks: $1}"; }
py=${SDPABENCH_DEPS:-/opt/sdpabench-deps}/py/bin/python
if ! "$py" -c "import scipy" 2>/dev/null; then
  echo "SKIP (ab_interleave): no SciPy in $py (scripts/setup.sh installs it)"
  exit 77
fi
ab() {  # ab WANT_RC DESCRIPTION ARGS...
  local want=$1 what=$2 rc
  shift 2
  "$py" "$src/scripts/ab_interleave.py" "$@" >"$tmp/out" 2>&1
  rc=$?
  [ "$rc" -eq "$want" ] || fail "$what: exit $want expected, got $rc"
}
# The planted slowdown: every case slower, B/A near 1.3, significant.
ab 1 "planted 1.3x" --replay "$data/ab_planted.json"
has "^B: OMP_NUM_THREADS=1 SDPABENCH_TEST_SLOWDOWN=1.3 build/release/sdpabench$"
n=$(grep -c " slower (10)$" "$tmp/out")
[ "$n" -eq "$(grep -c '"repro"' "$data/ab_planted.json")" ] || fail "every planted case is slower ($n)"
has "^geometric-mean ratio B/A over 4 case\(s\): 1\.(2[5-9]|3[0-9]|4[0-5])"
has "case\(s\) differ between A and B$"
# A = B: no case flagged.
ab 0 "A = B" --replay "$data/ab_same.json"
has "^no case differs between A and B$"
grep -qE " (slower|faster) \(10\)$" "$tmp/out" && fail "A = B: a case was flagged"
# A threshold past the planted change does not flag it; an alpha below the smallest p neither.
ab 0 "threshold past the change" --replay "$data/ab_planted.json" --threshold 0.7
[ "$(grep -c " same (10)$" "$tmp/out")" -eq 4 ] || fail "threshold 0.7: every case the same"
ab 0 "alpha below the smallest p" --replay "$data/ab_planted.json" --alpha 0.001
[ "$(grep -c " maybe (10)$" "$tmp/out")" -eq 4 ] || fail "alpha 0.001: every case maybe"
# Usage: both sides and the cases are needed; a record that cannot be read.
ab 2 "no sides" -- b1hq1sq8d8
has "needs --a CMD, --b CMD"
ab 2 "missing record" --replay "$tmp/none.json"
# Live: A = B on the reference, 2 rounds (the ABBA order and the record file).
ab 0 "live A = B" --a "$exe" --b "$exe" --rounds 2 --fix-times 1 --record "$tmp/rec.json" --alpha 0.01 -- \
  --backend=ref b1hq1sq8d8
has "^ab_interleave: 1 case\(s\) x 2 round\(s\), ABBA order$"
"$py" -c "
import json, sys
r = json.load(open(sys.argv[1]))
c = r['cases'][0]
assert c['order'] == ['AB', 'BA'] and len(c['a']) == len(c['b']) == 2, c
assert c['repro'] == '--backend=ref b1hq1sq8d8', c['repro']
" "$tmp/rec.json" || fail "the record of the live run"
echo "OK (ab_interleave)"
