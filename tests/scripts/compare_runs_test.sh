#!/usr/bin/env bash
# Quick check of scripts/compare_runs.py on two tiny jsonl reports: ratios, geometric mean,
# threshold and exit codes. Usage: compare_runs_test.sh SOURCE_DIR
set -uo pipefail
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL (compare_runs): $*"; cat "$tmp/out"; exit 1; }
cat >"$tmp/old.jsonl" <<'J'
{"idx":0,"repro":"--mode=P b1hq2sq64d64","perf":{"median_ms":2.0,"min_ms":1.9}}
{"idx":1,"repro":"--mode=P --dt=bf16 b1hq2sq64d64","perf":{"median_ms":4.0,"min_ms":3.0}}
{"idx":2,"repro":"--mode=P b1hq2sq128d64","perf":null}
{"idx":3,"repro":"gone","perf":{"median_ms":1.0}}
J
# case 0: 2.0 -> 2.08 (+4%: same); case 1: 4.0 -> 1.0 (faster). Geomean sqrt(1.04*0.25) = 0.5099.
cat >"$tmp/new.jsonl" <<'J'
{"idx":0,"repro":"--mode=P b1hq2sq64d64","perf":{"median_ms":2.08,"min_ms":2.5}}
{"idx":1,"repro":"--mode=P --dt=bf16 b1hq2sq64d64","perf":{"median_ms":1.0,"min_ms":1.0}}
{"idx":2,"repro":"--mode=P b1hq2sq128d64","perf":null}
{"idx":3,"repro":"new one","perf":{"median_ms":1.0}}
J
python3 "$src/scripts/compare_runs.py" "$tmp/old.jsonl" "$tmp/new.jsonl" >"$tmp/out" 2>&1
[ $? -eq 0 ] || fail "4% slower is within the default 5% threshold: exit 0 expected"
grep -q "geometric-mean ratio (new/old median_ms) over 2 case(s): 0.5099" "$tmp/out" || fail "geomean"
grep -qE "^--mode=P b1hq2sq64d64 +2 +2.08 +1.040  same" "$tmp/out" || fail "row of case 0"
grep -q "only in old" "$tmp/out" && grep -q "only in new" "$tmp/out" && grep -q "not timed" "$tmp/out" || fail "unjoined rows"
python3 "$src/scripts/compare_runs.py" "$tmp/old.jsonl" "$tmp/new.jsonl" --threshold 0.03 >"$tmp/out" 2>&1
[ $? -eq 1 ] || fail "4% slower exceeds a 3% threshold: exit 1 expected"
grep -qE "1.040  SLOWER" "$tmp/out" || fail "SLOWER verdict"
# min_ms: case 0 goes 1.9 -> 2.5 (+31.6%).
python3 "$src/scripts/compare_runs.py" "$tmp/old.jsonl" "$tmp/new.jsonl" --stat min_ms >"$tmp/out" 2>&1
[ $? -eq 1 ] || fail "--stat min_ms: exit 1 expected"
echo "OK (compare_runs)"
