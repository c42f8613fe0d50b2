#!/usr/bin/env bash
# What --match, --mode=L and -vN mean, said plainly (issue 42), one check per point:
# 1 --match on the canonical form (defaults spelled) and an empty selection that fails the run;
# 2 --mode=L on the command line lists a batch file whatever mode the file sets; 3 the -vN levels;
# 4 "did you mean" for values and for benchdnn's names; 5 FlashAttention's window bound -1;
# 6 a bad knob value on the command line costs only the problems after it.
# Usage: filters_e2e.sh SDPABENCH_EXE SOURCE_DIR
set -uo pipefail
exe=$1 src=$2
e2e_label=filters
. "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"
cd "$src"

# 1. f32 is --dt's default: not in the id, but in the canonical form --match also searches.
run --backend=ref --match=f32 --dt=f32,bf16 b1hq2sq16d16
[ "$rc" -eq 0 ] && [ "$(summary_field tests)" = 1 ] || fail "--match=f32: exit $rc, $(summary_field tests) cases, expected 1"
grep -q '^0:PASSED .*__REPRO: --backend=ref b1hq2sq16d16$' "$tmp/out" || fail "--match=f32 must select the f32 case"
run --backend=ref --match=nonexistent b1hq2sq16d16
[ "$rc" -eq 3 ] && grep -q "error: --match=nonexistent selected none of the run's cases" "$tmp/out" \
  || fail "an empty selection: exit $rc, expected 3 with the error"
run --backend=ref --fail-on=failed,invalid_arguments --match=nonexistent b1hq2sq16d16
[ "$rc" -eq 0 ] || fail "--fail-on without 'empty' allows an empty selection: exit $rc"
# Judged on the whole run: a shard whose own cases the filter misses is not an empty selection.
for i in 0 1; do
  run --backend=ref --shard=$i/2 --match=sq8d8 b1hq1sq8d8 b1hq1sq16d8
  [ "$rc" -eq 0 ] || fail "shard $i of a run whose filter selects a case: exit $rc"
done

# 2. The file's --mode=P does not override a listing asked on the command line; each line names
#    the mode the case would run in.
printf -- '--mode=P\nb1hq2sq16d16\n--mode=CP --dir=bwd b1hq2sq8d8\n' >"$tmp/perf.cases"
run --mode=L --batch="$tmp/perf.cases"
[ "$rc" -eq 0 ] && [ "$(summary_field listed)" = 2 ] && [ "$(summary_field executed)" = 0 ] || fail "--mode=L over a P file: exit $rc"
grep -q '^0:LISTED (0.0 ms) __REPRO: --mode=P b1hq2sq16d16$' "$tmp/out" && grep -q '^1:LISTED .*__REPRO: --mode=CP --dir=bwd b1hq2sq8d8$' "$tmp/out" \
  || fail "the listing must name each case's mode"

# 3. Verbosity levels that differ.
run -v1 --mode=CP --fix-times-per-prb=2 --dir=bwd b1hq2sq16d16
grep -qE 'bound there:|samples \(ms\)|onednn_verbose' "$tmp/out" && fail "-v1 prints only level 1"
run -v2 --mode=CP --fix-times-per-prb=2 --dir=bwd b1hq2sq16d16
grep -qE '^      bound there: .* = c [0-9.]+ x \(u_eff .* x \(M .* \+ max\(M\)/1024 .*\) \+ tiny .*\)$' "$tmp/out" \
  || fail "-v2 must give the bound's terms"
grep -q 'samples (ms)' "$tmp/out" && fail "-v2 prints no samples"
run -v3 --mode=CP --fix-times-per-prb=2 --dir=bwd b1hq2sq16d16
grep -qE '^    samples \(ms\): [0-9.e-]+ [0-9.e-]+$' "$tmp/out" || fail "-v3 must list every timed run"
grep -q 'onednn_verbose' "$tmp/out" && fail "-v3 prints no oneDNN verbose lines"
run -v4 --dir=bwd b1hq2sq16d16
grep -q 'onednn_verbose' "$tmp/out" || fail "-v4 must pass oneDNN's verbose lines through"

# 4. "Did you mean" for a value, and benchdnn's name for something sdpabench spells otherwise.
run --backend=ref --mask=casual_tl b1hq2sq16d16
grep -q "unknown value 'casual_tl' for --mask (did you mean causal_tl?" "$tmp/out" || fail "no suggestion for casual_tl"
run --engine=cpu b1hq2sq16d16
[ "$rc" -eq 2 ] && grep -q "unknown knob '--engine': --engine is benchdnn's; here: the backend fixes the device" "$tmp/out" \
  || fail "--engine must be answered with --backend: exit $rc"

# 5. FlashAttention's unbounded side: the same keys as a bound past the sequence, spelled back as -1.
run --backend=ref --report=jsonl:"$tmp/w.jsonl" --mask=window:3,-1,window:3,1000 b1hq2sq32skv48d16 --mask=window:-1,2 b1hq2sq32skv48d16
[ "$rc" -eq 0 ] && [ "$(summary_field passed)" = 3 ] || fail "window bounds -1: exit $rc"
grep -q '__REPRO: --backend=ref --mask=window:3,-1 b1hq2sq32skv48d16$' "$tmp/out" || fail "the repro must spell -1"
python3 - "$tmp/w.jsonl" <<'PY' || fail "window:3,-1 must see the keys window:3,1000 sees"
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])][1:]
assert r[0]["flops"] == r[1]["flops"] > 0, (r[0]["flops"], r[1]["flops"])
PY
run --backend=ref --mask=window:-2,0 b1hq2sq16d16
grep -q "window bounds are counts >= 0, or FlashAttention's -1" "$tmp/out" || fail "-2 must be refused naming -1"

# 6. A bad value costs the problems after it, not the run; the same knob given again ends it.
run --backend=ref b1hq2sq16d16 --dt=bf61 b1hq2sq8d8 b1hq2sq4d4 --dt=f16 b1hq2sq4d4
[ "$rc" -eq 3 ] || fail "a bad knob value on the command line: exit $rc, expected 3 (the rest runs)"
[ "$(summary_field passed)" = 2 ] && [ "$(summary_field invalid_arguments)" = 3 ] || fail "2 PASSED and 3 INVALID_ARGUMENTS expected"
grep -q "'b1hq2sq8d8' not run: the knob '--dt=bf61' before it did not parse" "$tmp/out" || fail "the problem after it: not run"
run --backend=ref --maks=bias b1hq2sq16d16
[ "$rc" -eq 2 ] || fail "an unknown knob name stays a usage error: exit $rc"
echo "filters e2e: ok"
