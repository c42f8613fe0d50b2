#!/usr/bin/env bash
# Issue 32 end to end: benchdnn's spellings and habits (--max-ms-per-prb, --fix-times-per-prb,
# --repeats-per-prb, -vN, --start, --match, "did you mean"), a bad token that costs only itself,
# and what ran in every result: the implementation, the tensors as bound, --impl / --skip-impl,
# and on oneDNN the kernel's name in -v, JSONL and CSV and a reference fallback flagged for the
# host-scalar scale's matmul but not for the tensor scale's. Usage: benchdnn_habits_e2e.sh EXE SOURCE_DIR
set -uo pipefail
exe=$1 src=$2
e2e_label=benchdnn_habits
source "$src/tests/e2e/e2e_lib.sh"
cd "$tmp"

# benchdnn's option names, with their meaning: a budget, and a fixed count of timed runs.
run --backend=ref --mode=P --max-ms-per-prb=50 --fix-times-per-prb=3 --report=jsonl:"$tmp/p.jsonl" b1hq1sq8d8
[ "$rc" -eq 0 ] || fail "--max-ms-per-prb / --fix-times-per-prb: exit $rc"
python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1])][1]; sys.exit(r['perf']['runs'] != 3)" "$tmp/p.jsonl" \
  || fail "--fix-times-per-prb=3 must give 3 timed runs"
# -vN and --verbose=N: the level, not an unknown option '-2'.
run -v2 --backend=ref --dir=bwd b1hq2hkv1sq8d4
[ "$rc" -eq 0 ] || fail "-v2: exit $rc"
grep -q "^    implementation: sdpabench ref_backward$" "$tmp/out" || fail "-v2 must name the implementation"
grep -q "^    tensor K f32 \[1,1,8,4\] strides \[32,32,4,1\]$" "$tmp/out" || fail "-v must list each tensor as bound"
run --verbose=1 --backend=ref b1hq1sq8d8
grep -q "^    implementation: sdpabench ref_forward$" "$tmp/out" || fail "--verbose=1"
# "Did you mean", global options included.
run --maks=causal_tl b1hq1sq8d8
[ "$rc" -eq 2 ] && grep -q "unknown knob '--maks' (did you mean --mask? knobs:" "$tmp/out" || fail "--maks: did you mean --mask"
run --max-ms-per-prob=100 b1hq1sq8d8
[ "$rc" -eq 2 ] && grep -q "did you mean --max-ms-per-prb?" "$tmp/out" || fail "a misspelt global option"
printf -- '--max-ms-per-prb=100 b1hq1sq8d8\n' >"$tmp/g.cases"
run --backend=ref --batch="$tmp/g.cases"
[ "$rc" -eq 3 ] && grep -q "g.cases:1:1: error: unknown knob '--max-ms-per-prb': --max-ms-per-prb is a global option" "$tmp/out" \
  || fail "a global option in a --batch file is named as one"

# A bad token costs only itself: on the command line (no usage error) and in a file.
run --backend=ref --dir=bwd b1hq8sq64d64 b1hq0sq8d8 b1hq2sq8d8
[ "$rc" -eq 3 ] || fail "bad descriptor among good ones: exit $rc, expected 3"
[ "$(summary_field tests)" = 3 ] && [ "$(summary_field passed)" = 2 ] && [ "$(summary_field invalid_arguments)" = 1 ] \
  || fail "every problem that parses runs, the bad one is counted"
grep -q "^1:INVALID_ARGUMENTS (command line: error: bad problem descriptor 'b1hq0sq8d8': hq = 0 must be positive)" "$tmp/out" \
  || fail "the bad descriptor's own line"
printf -- '--backend=ref --dt=bf17 b1hq1sq8d8 b1hq1sq4d4\nb1hq1sq4d4\n' >"$tmp/k.cases"
run --batch="$tmp/k.cases"
[ "$(summary_field tests)" = 4 ] && [ "$(summary_field invalid_arguments)" = 3 ] && [ "$(summary_field passed)" = 1 ] \
  || fail "a bad knob: its error, and each problem of its line reported as not run"
grep -q "'b1hq1sq4d4' not run: the knob '--dt=bf17' before it on its line ($tmp/k.cases:1:15) did not parse" "$tmp/out" \
  || fail "a problem after a bad knob names it"

# --start, --match (indices and ids of the whole run), --repeats-per-prb.
printf -- '--backend=ref --dt=f32,bf16 b1hq1sq4d4 b1hq1sq8d8\n' >"$tmp/s.cases"
run --start=3 --match='sq8' --batch="$tmp/s.cases"
[ "$rc" -eq 0 ] && [ "$(summary_field tests)" = 1 ] || fail "--start=3 --match=sq8: one case"
grep -q "^3:PASSED .* __REPRO: --backend=ref --dt=bf16 b1hq1sq8d8$" "$tmp/out" || fail "--start/--match keep the run's index"
grep -q "^note: --start=3 and --match=sq8 select 1 of 4 case(s)$" "$tmp/out" || fail "the selection is said"
run --match='(' b1hq1sq8d8
[ "$rc" -eq 2 ] && grep -q "is not a regular expression" "$tmp/out" || fail "a bad --match is a usage error"
run --match='sq8' b1hq1sq8d8
grep -q "^note: --match=sq8 selects 1 of 1 case(s)$" "$tmp/out" || fail "one option selects"
for bad in -1 abc 99999999999999999999; do
  run --start=$bad b1hq1sq8d8
  [ "$rc" -eq 2 ] && grep -q "'$bad' is not a case index" "$tmp/out" || fail "--start=$bad is a usage error"
done
for bad in 0 -5 abc; do
  run --max-ms-per-prb=$bad b1hq1sq8d8
  [ "$rc" -eq 2 ] && grep -q "'$bad' is not a number of ms > 0" "$tmp/out" || fail "--max-ms-per-prb=$bad is a usage error"
done
run --verbose=-1 b1hq1sq8d8
[ "$rc" -eq 2 ] || fail "--verbose=-1 is a usage error"
run --impl='[' b1hq1sq8d8
[ "$rc" -eq 2 ] && grep -q "'\[' is not a pattern" "$tmp/out" || fail "an unclosed '[' in --impl is a usage error"
run --skip-impl='ref,x[a' b1hq1sq8d8
[ "$rc" -eq 2 ] && grep -q "'x\[a' is not a pattern" "$tmp/out" || fail "an unclosed '[' in --skip-impl is a usage error"
run --backend=ref --repeats-per-prb=3 --report=jsonl:"$tmp/r.jsonl" b1hq1sq4d4
[ "$(summary_field tests)" = 3 ] && grep -q '"id":"--backend=ref b1hq1sq4d4 #3"' "$tmp/r.jsonl" || fail "--repeats-per-prb=3"

# --impl / --skip-impl on the implementation's name.
run --backend=ref --skip-impl=ref_backward --dir=fwd_t,bwd b1hq1sq4d4
[ "$(summary_field passed)" = 1 ] && [ "$(summary_field skipped)" = 1 ] || fail "--skip-impl"
grep -q "^1:SKIPPED (implementation 'sdpabench ref_backward' matches --skip-impl=ref_backward)" "$tmp/out" \
  || fail "SKIPPED with the name it got"
run --backend=ref --impl='*forward' --dir=fwd_t,bwd b1hq1sq4d4
grep -q "^1:SKIPPED (implementation 'sdpabench ref_backward' matches no --impl pattern (\*forward))" "$tmp/out" || fail "--impl"

# oneDNN: the kernel's name in -v, JSONL and CSV; the host-scalar scale's matmul flagged, the
# tensor scale's not (oneDNN 3.13 on an AVX-512 CPU runs its QK^T matmul on ref:any there).
if ! "$exe" --version | grep -q '^onednn: oneDNN'; then echo "E2E OK ($e2e_label; no oneDNN in this build)"; exit 0; fi
run -v --dir=bwd --dt=f32 --report=jsonl:"$tmp/o.jsonl" --report=csv:"$tmp/o.csv" b1hq2sq32d16
[ "$rc" -eq 0 ] || fail "oneDNN bwd: exit $rc"
name=$(sed -n 's/^    implementation: //p' "$tmp/out")
[ -n "$name" ] || fail "-v must name the kernel oneDNN ran"
grep -q "^      matmul [^ ]* 1x2x32x16:1x2x16x32 .* ms" "$tmp/out" || fail "-v lists each primitive with its time"
grep -q "^    tensor Q f32 \[1,2,32,16\] strides \[1024,512,16,1\]$" "$tmp/out" || fail "-v lists oneDNN's tensors"
python3 - "$tmp/o.jsonl" "$tmp/o.csv" "$name" <<'PY' || fail "the kernel's name in JSONL and CSV"
import csv, json, sys
r = [json.loads(l) for l in open(sys.argv[1])][1]
assert r["impl"] == sys.argv[3], (r["impl"], sys.argv[3])
assert any(p["kind"] == "matmul" for p in r["impl_parts"]), r["impl_parts"]
assert [t["name"] for t in r["tensors"]][:3] == ["Q", "K", "V"], r["tensors"]
row = next(csv.DictReader(l for l in open(sys.argv[2]) if not l.startswith("# ")))
assert row["impl"] == sys.argv[3], row["impl"]
PY
isa=$("$exe" --version | sed -n 's/.*ISA \(.*\)$/\1/p')
case "$isa" in
  avx512_core_bf16*|avx512_core_fp16*|avx10*|avx512_core_amx*)
    # Each in a process of its own: oneDNN 3.13.2's primitive cache hands a later case of the same
    # shape the matmul implementation the earlier one got (docs/onednn.md#conventions-and-platform).
    run --dir=bwd --dt=bf16 --scale-dt=f32 --scale-property=host_scalar --report=jsonl:"$tmp/h.jsonl" b1hq2sq64d64
    [ "$rc" -eq 0 ] || fail "host-scalar scale: exit $rc"
    grep -q "^    reference fallback: .* ran matmul ref:any (1x2x64x64:1x2x64x64)$" "$tmp/out" \
      || fail "the host-scalar case is flagged naming the matmul"
    [ "$(summary_field ref_fallback)" = 1 ] || fail "the summary counts the fallback"
    python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1])][1]; assert r['ref_fallback'].startswith('matmul ref:any'), r" \
      "$tmp/h.jsonl" || fail "ref_fallback in JSONL"
    run --dir=bwd --dt=bf16 --scale-dt=f32 --scale-property=tensor --report=jsonl:"$tmp/t.jsonl" b1hq2sq64d64
    [ "$rc" -eq 0 ] || fail "tensor scale: exit $rc"
    grep -q "reference fallback" "$tmp/out" && fail "the tensor-scale case is not flagged"
    [ "$(summary_field ref_fallback)" = 0 ] || fail "the summary counts no fallback"
    python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1])][1]; assert r['ref_fallback'] is None and r['ref_parts'] > 0, r" \
      "$tmp/t.jsonl" || fail "no ref_fallback in JSONL, the elementwise reference parts counted"
    run --skip-impl=ref --dir=bwd --dt=bf16 --scale-dt=f32 --scale-property=host_scalar b1hq2sq64d64
    grep -q "^0:SKIPPED (implementation '.*': its matmul ran 'ref:any'.*, which matches --skip-impl=ref)" "$tmp/out" \
      || fail "--skip-impl=ref skips a case that ran a reference kernel"
    ;;
  *) echo "note: ISA $isa: the bf16 fallback checks need avx512_core_bf16" ;;
esac
echo "E2E OK ($e2e_label)"
