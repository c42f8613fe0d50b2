#!/usr/bin/env bash
# End-to-end checks of P/CP modes, the perf template and the csv/jsonl/junit reports: runs the
# real executable, then parses every report back with Python's standard library.
# Usage: perf_reports_e2e.sh SDPABENCH_EXE SOURCE_DIR
set -uo pipefail
exe=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "E2E FAIL (perf_reports): $*"; echo "--- output tail:"; tail -n 30 "$tmp/out" 2>/dev/null; exit 1; }

# A case file whose second line is a bad knob alone: its reason carries quotes, '<' and '&'.
cat >"$tmp/r.cases" <<'CASES'
--mode=CP --dt=f32 b1hq2sq32d16n=cp.case
--dt=a<b"c&e
--mode=P --dir=bwd --mask=causal_br b1hq2sq16skv24d16n=p_case
--mode=C b1hq2sq16d16
CASES
"$exe" --backend=ref --fix-times=3 --report=jsonl:"$tmp/r.jsonl" --report=junit:"$tmp/r.xml" \
  --report=csv:"$tmp/r.csv" --batch="$tmp/r.cases" >"$tmp/out" 2>"$tmp/err"
rc=$?
cat "$tmp/err" >>"$tmp/out"
[ "$rc" -eq 3 ] || fail "exit code $rc, expected 3 (one INVALID_ARGUMENTS case)"
grep -q '^perf,backend,engine,dir,dt,mask,name,prb,min_ms,median_ms,max_ms,GFLOP/s,GFLOP/s@min_ms,GB/s,compile_ms,TFLOP/s,impl,ref_fallback$' "$tmp/out" \
  || fail "no perf header line"
[ "$(grep -c '^perf,ref,cpu,' "$tmp/out")" -eq 2 ] || fail "expected 2 perf lines (CP and P cases)"
grep -q '^perf,ref,cpu,bwd,f32,causal_br,p_case,b1hq2sq16skv24d16,.*,sdpabench ref_backward,$' "$tmp/out" || fail "P case perf line (with its implementation last)"
[ -e "$tmp/r.xml.partial" ] && fail "junit .partial left behind after a complete run"
# Non-TTY stderr: no progress line.
grep -q '\[1/4\]' "$tmp/out" && fail "progress line printed although stderr is not a terminal"
python3 "$src/tests/e2e/check_reports.py" "$tmp/r.jsonl" "$tmp/r.xml" "$tmp/r.csv" || fail "report check"

# Template options: a custom template and a bad one (usage error, exit 2).
"$exe" --backend=ref --mode=P --fix-times=2 '--perf-template=%dir%;%runs%;%-time%<=%+time%' b1hq1sq16d16 >"$tmp/out" 2>&1
grep -qE '^fwd_t;2;[0-9.e-]+<=[0-9.e-]+$' "$tmp/out" || fail "custom template line"
"$exe" --backend=ref --mode=P '--perf-template=%nope%' b1hq1sq16d16 >"$tmp/out" 2>&1
[ $? -eq 2 ] || fail "unknown template field must be a usage error"
grep -q "unknown field '%nope%'" "$tmp/out" || fail "template error message"
"$exe" --backend=ref --report=xml:"$tmp/x" b1hq1sq16d16 >"$tmp/out" 2>&1
[ $? -eq 2 ] || fail "unknown report format must be a usage error"
# "--report FORMAT:PATH" with a space takes exactly one argument (the case after it still runs).
"$exe" --backend=ref --report jsonl:"$tmp/s.jsonl" b1hq1sq16d16 >"$tmp/out" 2>&1 || fail "space-separated --report"
[ "$(wc -l <"$tmp/s.jsonl")" -eq 3 ] || fail "space-separated --report: the context, one record and the end record expected"
# sweep.sh: gpt2's two descriptors collapse to one per length; 2 lengths x 2 directions x 1 dtype.
SDPABENCH=$exe bash "$src/scripts/sweep.sh" "$src/cases/models/gpt2.cases" "$tmp/sweep.jsonl" --seq=16,32 --dt=f32 \
  -- --backend=ref --fix-times=1 >"$tmp/out" 2>&1 || fail "sweep.sh failed"
python3 - "$tmp/sweep.jsonl" <<'PY' || fail "sweep.sh report"
import json, sys
recs = [r for r in map(json.loads, open(sys.argv[1])) if "context" not in r and "end" not in r]
got = sorted((r["dir"], r["dt"], r["prb"], r["mode"], r["perf"]["runs"]) for r in recs)
want = sorted((d, "f32", f"b1hq12sq{s}d64", "P", 1) for d in ("fwd_t", "bwd") for s in (16, 32))
assert got == want, got
PY
# The same sweep with a range: sdpabench expands sq16:32:x2 itself (the same four cases).
SDPABENCH=$exe bash "$src/scripts/sweep.sh" "$src/cases/models/gpt2.cases" "$tmp/sweep2.jsonl" --seq=16:32:x2 --dt=f32 \
  -- --backend=ref --fix-times=1 >"$tmp/out" 2>&1 || fail "sweep.sh with a range failed"
[ "$(grep -c '"prb"' "$tmp/sweep2.jsonl")" = 4 ] || fail "sweep.sh with a range: 4 cases expected"
for s in 16 32; do grep -q "\"prb\":\"b1hq12sq${s}d64\"" "$tmp/sweep2.jsonl" || fail "sweep.sh range: no sq$s"; done
# plot.py, when scripts/setup.sh installed its venv.
py=${SDPABENCH_DEPS:-/opt/sdpabench-deps}/py/bin/python
if [ -x "$py" ]; then
  "$py" "$src/scripts/plot.py" "$tmp/sweep.jsonl" "$tmp/sweep.png" >"$tmp/out" 2>&1 || fail "plot.py failed"
  grep -q "4 point(s) in 2 series" "$tmp/out" || fail "plot.py series count"
  [ "$(head -c 4 "$tmp/sweep.png" | tail -c 3)" = PNG ] || fail "plot.py did not write a PNG"
fi
# On a terminal (util-linux `script` gives a pty): the progress line, and none with --no-progress.
if command -v script >/dev/null; then
  script -qc "'$exe' --backend=ref b1hq2sq16d16 b1hq2sq32d16 >/dev/null" "$tmp/tty" >/dev/null 2>&1
  grep -q '\[1/2\] passed 1 failed 0  eta 0:0[0-9]  --backend=ref b1hq2sq32d16' "$tmp/tty" || fail "no progress line on a terminal"
  script -qc "'$exe' --no-progress --backend=ref b1hq2sq16d16 >/dev/null" "$tmp/tty2" >/dev/null 2>&1
  grep -q '\[0/1\]' "$tmp/tty2" && fail "progress line despite --no-progress"
fi
echo "E2E OK (perf_reports)"
