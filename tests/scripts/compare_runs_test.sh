#!/usr/bin/env bash
# Checks scripts/compare_runs.py on tiny hand-written jsonl reports: ratios, geometric mean,
# threshold, the join on "id" (repro and #idx for older reports), the context checks and the
# exit codes (0 same, 1 slower, 2 not compared); then the U test on perf.samples_ms with recorded
# timings (data/samples_base.jsonl and samples_rerun.jsonl: two sessions of the same binary) and a
# planted 10% slowdown, with the venv python that has SciPy (skipped, with a note, without it),
# and the threshold-alone fallback of a python3 without SciPy. Usage: compare_runs_test.sh SOURCE_DIR
set -uo pipefail
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL (compare_runs): $*"; cat "$tmp/out"; exit 1; }
# run_with PYTHON WANT_RC DESCRIPTION ARGS...: PYTHON compare_runs.py ARGS with stdout+stderr in
# $tmp/out (PYTHON may be several words, such as "python3 -S").
run_with() {
  local py=$1 want=$2 what=$3 rc
  shift 3
  $py "$src/scripts/compare_runs.py" "$@" >"$tmp/out" 2>&1
  rc=$?
  [ "$rc" -eq "$want" ] || fail "$what: exit $want expected, got $rc"
}
run() { run_with python3 "$@"; }
has() { grep -qE -- "$1" "$tmp/out" || fail "${2:-output lacks: $1}"; }
lacks() { ! grep -qE -- "$1" "$tmp/out" || fail "${2:-output has: $1}"; }

# --- Old reports: no context record, no "id", no "mode": joined on repro, still compared.
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
{"idx":2,"repro":"--mode=P b1hq2sq128d64","status":"SKIPPED","perf":null}
{"idx":3,"repro":"new one","perf":{"median_ms":1.0}}
J
run 0 "4% slower is within the default 5% threshold" "$tmp/old.jsonl" "$tmp/new.jsonl"
has "geometric-mean ratio \(new/old median_ms\) over 2 case\(s\): 0.5099" "geomean"
has "^--mode=P b1hq2sq64d64 +2 +2.08 +1.040  same" "row of case 0"
has "^--mode=P b1hq2sq128d64 .*not timed in either \(old: \(absent\), new: SKIPPED\)" "untimed row"
has "^joined on repro \(OLD and NEW without case ids\): 3 case\(s\) in both, 1 only in OLD, 1 only in NEW" "join line"
grep -A1 -x "only in OLD: 1" "$tmp/out" | grep -qx "  gone" || fail "only in OLD section"
grep -A1 -x "only in NEW: 1" "$tmp/out" | grep -qx "  new one" || fail "only in NEW section"
has "warning: OLD has no context record: .*cannot be checked" "no-context warning (OLD)"
has "warning: NEW has no context record" "no-context warning (NEW)"
run 1 "4% slower exceeds a 3% threshold" "$tmp/old.jsonl" "$tmp/new.jsonl" --threshold 0.03
has "1.040  SLOWER" "SLOWER verdict"
has "^1 case\(s\) slower than 3.0%" "slower count"
run 1 "a zero threshold: +4% is slower" "$tmp/old.jsonl" "$tmp/new.jsonl" --threshold 0
has "^1 case\(s\) slower than 0.0%"
# A threshold that is not a finite number >= 0 is a usage error (nan would pass every case).
for bad in nan NaN inf -inf -0.05 -1 abc ""; do
  run 2 "--threshold '$bad'" "$tmp/old.jsonl" "$tmp/new.jsonl" --threshold "$bad"
  has "argument --threshold: " "--threshold '$bad': argparse error"
  lacks "geometric-mean" "--threshold '$bad': compared anyway"
done
run 2 "--threshold=nan" "$tmp/old.jsonl" "$tmp/new.jsonl" --threshold=nan
has "argument --threshold: 'nan' must be a finite number >= 0"
run 2 "--threshold=-0.05" "$tmp/old.jsonl" "$tmp/new.jsonl" --threshold=-0.05
has "argument --threshold: '-0.05' must be a finite number >= 0"
# min_ms: case 0 goes 1.9 -> 2.5 (+31.6%).
run 1 "--stat min_ms" "$tmp/old.jsonl" "$tmp/new.jsonl" --stat min_ms
# A record without repro joins on #idx.
printf '%s\n' '{"idx":7,"perf":{"median_ms":1.0}}' >"$tmp/idx_old.jsonl"
printf '%s\n' '{"idx":7,"perf":{"median_ms":1.0}}' >"$tmp/idx_new.jsonl"
run 0 "join on #idx" "$tmp/idx_old.jsonl" "$tmp/idx_new.jsonl"
has "^#7 +1 +1 +1.000  same"

# --- New reports: a context record first, cases joined on "id" although their repro lines differ.
ctx='"sdpabench":"0.4","command":"sdpabench --mode=P --report=jsonl:r.jsonl","cpu":"AMD EPYC 9654","threads":2,"libraries":{"onednn":"3.13.2"}'
cat >"$tmp/base.jsonl" <<J
{"context":{$ctx,"git_commit":"aaaa","host":"ci-1","start":"2026-12-01T17:00:00Z"}}
{"id":"ref:fwd:f32:b1hq2sq64d64","idx":0,"status":"EXECUTED","repro":"--mode=P b1hq2sq64d64","mode":"P","backend":"ref","perf":{"runs":5,"min_ms":1.9,"median_ms":2.0,"mean_ms":2.0,"max_ms":2.1,"cold_cache":false,"gflops":10}}
{"id":"ref:fwd:bf16:b1hq2sq64d64","idx":1,"status":"EXECUTED","repro":"--mode=P --dt=bf16 b1hq2sq64d64","mode":"P","backend":"ref","perf":{"runs":5,"min_ms":3.9,"median_ms":4.0,"mean_ms":4.0,"max_ms":4.2,"cold_cache":false,"gflops":5}}
{"id":"ref:fwd:f32:b1hq2sq128d64","idx":2,"status":"FAILED","repro":"--mode=P b1hq2sq128d64","mode":"P","backend":"ref","perf":null}
J
# case 0: 2.0 -> 2.2 (+10%, SLOWER at 5%); case 1: 4.0 -> 4.0. Geomean sqrt(1.1) = 1.0488.
cat >"$tmp/head.jsonl" <<J
{"context":{$ctx,"git_commit":"bbbb","host":"ci-1","start":"2026-12-02T09:00:00Z"}}
{"id":"ref:fwd:f32:b1hq2sq64d64","idx":0,"status":"EXECUTED","repro":"--backend=ref --mode=P --dt=f32 b1hq2sq64d64","mode":"P","backend":"ref","perf":{"runs":5,"min_ms":2.1,"median_ms":2.2,"mean_ms":2.2,"max_ms":2.3,"cold_cache":false,"gflops":9}}
{"id":"ref:fwd:bf16:b1hq2sq64d64","idx":1,"status":"EXECUTED","repro":"--backend=ref --mode=P --dt=bf16 b1hq2sq64d64","mode":"P","backend":"ref","perf":{"runs":5,"min_ms":3.9,"median_ms":4.0,"mean_ms":4.0,"max_ms":4.1,"cold_cache":false,"gflops":5}}
{"id":"ref:fwd:f32:b1hq2sq128d64","idx":2,"status":"EXECUTED","repro":"--backend=ref --mode=P --dt=f32 b1hq2sq128d64","mode":"P","backend":"ref","perf":{"runs":5,"min_ms":8.0,"median_ms":8.0,"mean_ms":8.0,"max_ms":8.0,"cold_cache":false,"gflops":5}}
{"id":"ref:fwd:f32:b1hq2sq256d64","idx":3,"status":"EXECUTED","repro":"--backend=ref --mode=P --dt=f32 b1hq2sq256d64","mode":"P","backend":"ref","perf":{"runs":5,"min_ms":16,"median_ms":16,"mean_ms":16,"max_ms":16,"cold_cache":false,"gflops":5}}
J
run 1 "10% slower, joined on id" "$tmp/base.jsonl" "$tmp/head.jsonl"
has "^joined on id: 3 case\(s\) in both, 0 only in OLD, 1 only in NEW" "join on id"
has "^ref:fwd:f32:b1hq2sq64d64 +2 +2.2 +1.100  SLOWER" "row joined by id"
has "^ref:fwd:f32:b1hq2sq128d64 .*not timed in old \(FAILED\)" "untimed in old, with its status"
has "geometric-mean ratio \(new/old median_ms\) over 2 case\(s\): 1.0488" "geomean by id"
grep -A1 -x "only in NEW: 1" "$tmp/out" | grep -qx "  ref:fwd:f32:b1hq2sq256d64" || fail "only in NEW by id"
has "^only in OLD: 0$" "empty only-in-OLD section"
has "^OLD .*base.jsonl: sdpabench 0.4, commit aaaa, host ci-1, started 2026-12-01T17:00:00Z" "OLD context line"
lacks "warning" "same context: no warning expected"
run 0 "10% is within a 20% threshold" "$tmp/base.jsonl" "$tmp/head.jsonl" --threshold 0.2
# A report from before ids against a new one: both joined on repro.
grep -v '"context"' "$tmp/old.jsonl" >"$tmp/noid.jsonl"
run 2 "old report without ids vs new report: repro lines differ, nothing joins" "$tmp/noid.jsonl" "$tmp/head.jsonl"
has "^joined on repro \(OLD without case ids\): 0 case\(s\) in both" "fallback join named"

# --- Nothing timed in both: exit 2 with a message.
sed 's/"id":"ref:/"id":"other:/' "$tmp/head.jsonl" >"$tmp/disjoint.jsonl"
run 2 "disjoint reports" "$tmp/base.jsonl" "$tmp/disjoint.jsonl"
has "no case is timed in both reports \(0 joined" "disjoint message"
has "^only in OLD: 3$"
has "^only in NEW: 4$"
sed 's/"perf":{[^}]*}/"perf":null/' "$tmp/head.jsonl" >"$tmp/untimed.jsonl"
run 2 "joined but none timed in NEW" "$tmp/base.jsonl" "$tmp/untimed.jsonl"
has "no case is timed in both reports \(3 joined, none with perf.median_ms in both\)" "untimed message"
printf '%s\n' '{"idx":0,"repro":"x","perf":{"median_ms":1.0}}' >"$tmp/min_absent.jsonl"
run 2 "--stat min_ms absent" "$tmp/min_absent.jsonl" "$tmp/min_absent.jsonl" --stat min_ms

# --- Context differences: each refused with exit 2 and named "field: old vs new"; no table.
# context_case NAME SED EXPECTED-LINE
context_case() {
  sed "$2" "$tmp/head.jsonl" >"$tmp/$1.jsonl"
  run 2 "$1 differs" "$tmp/base.jsonl" "$tmp/$1.jsonl"
  has "^  $3$" "$1: difference not named as '$3'"
  has "not compared \(exit 2\); --allow-context-change compares anyway" "$1: refusal message"
  lacks "geometric-mean" "$1: compared despite the context difference"
}
context_case threads 's/"threads":2/"threads":4/' "threads: 2 vs 4"
context_case onednn 's/"onednn":"3.13.2"/"onednn":"3.14.0"/' "libraries.onednn: 3.13.2 vs 3.14.0"
context_case cudnn 's/"onednn":"3.13.2"/"onednn":"3.13.2","cudnn":"9.19.0"/' "libraries.cudnn: \(absent\) vs 9.19.0"
context_case host 's/"host":"ci-1"/"host":"ci-2"/' "host: ci-1 vs ci-2"
context_case cpu 's/AMD EPYC 9654/Intel Xeon 8480+/' "cpu: AMD EPYC 9654 vs Intel Xeon 8480\+"
context_case cold '/"id":"ref:fwd:f32:b1hq2sq64d64"/s/"cold_cache":false/"cold_cache":true/' \
  "cold_cache: false vs true \(1 case\(s\): ref:fwd:f32:b1hq2sq64d64\)"
context_case mode 's/"mode":"P"/"mode":"CP"/' "modes: P vs CP"
has "^  mode: P vs CP \(3 case\(s\): ref:fwd:f32:b1hq2sq64d64, ref:fwd:bf16:b1hq2sq64d64, ref:fwd:f32:b1hq2sq128d64\)" \
  "per-case mode difference"
# One case's mode: the set changes too ({P} vs {CP,P}).
context_case mode1 '/bf16:b1hq2sq64d64/s/"mode":"P"/"mode":"CP"/' "mode: P vs CP \(1 case\(s\): ref:fwd:bf16:b1hq2sq64d64\)"
has "^  modes: P vs CP,P$" "set of modes"
# Several differences at once: each listed.
sed 's/"threads":2/"threads":8/; s/"host":"ci-1"/"host":"ci-9"/' "$tmp/head.jsonl" >"$tmp/many.jsonl"
run 2 "threads and host differ" "$tmp/base.jsonl" "$tmp/many.jsonl"
has "^  threads: 2 vs 8$"
has "^  host: ci-1 vs ci-9$"
# Commit, start, command and sdpabench version may differ: not a context change (checked above).
# Context records that both lack a field: a warning that it is not checked.
sed '1s/.*/{"context":{"sdpabench":"0.4","host":"ci-1"}}/' "$tmp/base.jsonl" >"$tmp/thin_old.jsonl"
sed '1s/.*/{"context":{"sdpabench":"0.4","host":"ci-1"}}/' "$tmp/head.jsonl" >"$tmp/thin_new.jsonl"
run 1 "thin contexts" "$tmp/thin_old.jsonl" "$tmp/thin_new.jsonl"
has "warning: no context record has threads, libraries, cpu: not checked"

# --- --allow-context-change: the same list as a warning, then the usual comparison and exit code.
run 1 "--allow-context-change, 10% slower" "$tmp/base.jsonl" "$tmp/threads.jsonl" --allow-context-change
has "warning: the runs differ in context \(compared anyway, --allow-context-change\)" "allow: warning"
has "^  threads: 2 vs 4$" "allow: difference listed"
has "^ref:fwd:f32:b1hq2sq64d64 +2 +2.2 +1.100  SLOWER" "allow: table"
run 0 "--allow-context-change within the threshold" "$tmp/base.jsonl" "$tmp/cold.jsonl" --allow-context-change --threshold 0.2
has "^  cold_cache: false vs true" "allow: cold_cache listed"
run 0 "--allow-context-change, several differences" "$tmp/base.jsonl" "$tmp/many.jsonl" --allow-context-change --threshold 0.2
has "^  host: ci-1 vs ci-9$"

# --- A report without a context record: warned about, its cases' mode and cold cache still checked.
grep -v '"context"' "$tmp/base.jsonl" >"$tmp/base_noctx.jsonl"
run 1 "OLD without context: compared, with a warning" "$tmp/base_noctx.jsonl" "$tmp/head.jsonl"
has "warning: OLD has no context record: its threads, library versions, host and cpu cannot be checked"
lacks "warning: NEW has no context record"
run 2 "OLD without context, mode differs" "$tmp/base_noctx.jsonl" "$tmp/mode.jsonl"
has "^  modes: P vs CP$"
has "warning: OLD has no context record"
run 2 "OLD without context, cold cache differs" "$tmp/base_noctx.jsonl" "$tmp/cold.jsonl"
has "^  cold_cache: false vs true"

# --- Reports that cannot be read: exit 2 (never 1, which means "slower").
head -c 60 "$tmp/head.jsonl" >"$tmp/cut.jsonl"
run 2 "cut JSON line" "$tmp/base.jsonl" "$tmp/cut.jsonl"
has "cut.jsonl:1: not JSON"
cat "$tmp/base.jsonl" "$tmp/base.jsonl" >"$tmp/twice.jsonl"
run 2 "two reports concatenated" "$tmp/twice.jsonl" "$tmp/base.jsonl"
has "twice.jsonl:5: a context record after the first line"
run 2 "missing file" "$tmp/base.jsonl" "$tmp/nonexistent.jsonl"
has "nonexistent.jsonl: No such file"
# A repeated id is compared once, with a warning.
{ cat "$tmp/head.jsonl"; sed -n 2p "$tmp/head.jsonl"; } >"$tmp/dup.jsonl"
run 1 "repeated id" "$tmp/base.jsonl" "$tmp/dup.jsonl"
has "warning: NEW has 2 records for case ref:fwd:f32:b1hq2sq64d64; only the last is compared"

# --- --help documents the join key, the context checks and the exit codes.
run 0 "--help" --help
has "Join key: each case record's \"id\""
has "--allow-context-change"
has "^  2  not compared"
# --- Ids carry --mode: a P run and a CP run of the same case still join, and are refused for the mode.
printf '{"id":"--backend=ref --mode=P b1","idx":0,"mode":"P","perf":{"median_ms":1.0,"cold_cache":false}}\n' >"$tmp/pm.jsonl"
printf '{"id":"--backend=ref --mode=CP b1","idx":0,"mode":"CP","perf":{"median_ms":1.0,"cold_cache":false}}\n' >"$tmp/cpm.jsonl"
python3 "$src/scripts/compare_runs.py" "$tmp/pm.jsonl" "$tmp/cpm.jsonl" >"$tmp/out" 2>&1
[ $? -eq 2 ] || fail "a P run against a CP run of the same case must be refused (exit 2)"
grep -q "mode: P vs CP" "$tmp/out" || fail "the mode difference of joined P/CP cases must be named"

# --- --alpha: strictly between 0 and 1 (0 would never flag a case, 1 always).
for bad in 0 1 1.5 -0.01 nan inf abc ""; do
  run 2 "--alpha '$bad'" "$tmp/base.jsonl" "$tmp/head.jsonl" --alpha "$bad"
  has "argument --alpha: " "--alpha '$bad': argparse error"
  lacks "geometric-mean" "--alpha '$bad': compared anyway"
done
run 2 "--alpha=0" "$tmp/base.jsonl" "$tmp/head.jsonl" --alpha=0
has "argument --alpha: '0' must be a number with 0 < alpha < 1"
run 1 "--alpha 0.05 without samples: the threshold alone" "$tmp/base.jsonl" "$tmp/head.jsonl" --alpha 0.05
has "^ref:fwd:f32:b1hq2sq64d64 +2 +2.2 +1.100  SLOWER   threshold only \(no samples in old or new\)" \
  "a case without samples is marked as judged by the threshold alone"
has "^significance \(U test, alpha 0.05\): tested on 0 of 2 case\(s\); 2 by the threshold alone"
lacks "note: SciPy" "no case with samples: no note about SciPy"
run 0 "--help" --help
has "Mann-Whitney U test"
has "--alpha ALPHA"

# --- Samples recorded on a real machine (tests/scripts/data): two sessions of one binary, 25
# processes per case. slowed.jsonl: the rerun with one case's times (samples and summaries) x 1.10.
data=$src/tests/scripts/data
slow_id='--backend=ref --mode=P b1hq2sq256d32'
python3 - "$data/samples_rerun.jsonl" "$slow_id" >"$tmp/slowed.jsonl" <<'PY' || fail "making slowed.jsonl"
import json, sys
for line in open(sys.argv[1]):
    rec = json.loads(line)
    if rec.get("id") == sys.argv[2]:
        perf = rec["perf"]
        for k in ("min_ms", "median_ms", "mean_ms", "max_ms"):
            perf[k] *= 1.10
        perf["samples_ms"] = [v * 1.10 for v in perf["samples_ms"]]
        perf["gflops"] /= 1.10
    print(json.dumps(rec))
PY
# Hand-made samples: too few in one report; in one report only; not a list of times.
few() {  # few ID MEDIAN SAMPLES-JSON
  printf '{"id":"%s","idx":0,"status":"EXECUTED","mode":"P","perf":{"runs":3,"median_ms":%s,"cold_cache":false,"samples_ms":%s}}\n' "$@"
}
{ few a 1.0 '[1.0,1.0,1.0]'; few b 1.0 '[0.9,1.0,1.1]'; few c 1.0 '[1.0,1.0,1.0]'; few d 1.0 '[1,1,1]'; } >"$tmp/few_old.jsonl"
{ few a 1.2 '[1.2,1.2]'; few b 1.2 'null'; few c 1.2 '"1.2"'; few d 1.01 '[1.01,1.01,1.01]'; } >"$tmp/few_new.jsonl"

py=${SDPABENCH_DEPS:-/opt/sdpabench-deps}/py/bin/python
if [ -x "$py" ] && "$py" -c "import scipy.stats" 2>/dev/null; then
  # The planted 10% slowdown: SLOWER (ratio past 5%, p < 0.01), exit 1.
  run_with "$py" 1 "planted 10% slowdown vs the base session" "$data/samples_base.jsonl" "$tmp/slowed.jsonl" --threshold 0.05
  has "^--backend=ref b1hq2sq256d32 +0.393 +0.4339 +1.104  SLOWER   0.00276$" "planted slowdown: SLOWER with its p-value"
  has "^--backend=ref b1hq2sq128d64 .* 0.987  same     0.342$" "an unchanged case: same"
  has "^significance \(U test, alpha 0.01\): tested on 3 of 3 case\(s\); 0 by the threshold alone"
  has "^1 case\(s\) slower than 5.0%"
  lacks "note: SciPy" "venv python: no note about SciPy"
  run_with "$py" 1 "planted 10% slowdown vs the same session" "$data/samples_rerun.jsonl" "$tmp/slowed.jsonl" --threshold 0.05
  has "^--backend=ref b1hq2sq256d32 .* 1.100  SLOWER   7.15e-05$"
  # The same binary run twice: within 5%, nothing significant, exit 0.
  run_with "$py" 0 "same-binary rerun" "$data/samples_base.jsonl" "$data/samples_rerun.jsonl" --threshold 0.05
  has "^--backend=ref b1hq2sq256d32 .* 1.004  same     0.508$"
  has "^--backend=ref b1hq2sq256d64 .* 0.974  same     0.824$"
  has "^no case slower than 5.0%"
  # Past the threshold but p >= alpha: "slower?", not SLOWER, exit 0 (the rerun's +0.4% at a zero
  # threshold, p 0.508; the planted slowdown at alpha 0.001, p 0.00276).
  run_with "$py" 0 "rerun at --threshold 0" "$data/samples_base.jsonl" "$data/samples_rerun.jsonl" --threshold 0
  has "^--backend=ref b1hq2sq256d32 .* 1.004  slower\?  0.508$" "ratio past the threshold, p >= alpha: slower?"
  has "^1 case\(s\) past 0.0% but not significant \(p >= 0.01\): not counted as slower"
  has "^no case slower than 0.0%"
  run_with "$py" 0 "planted slowdown at --alpha 0.001" "$data/samples_base.jsonl" "$tmp/slowed.jsonl" --alpha 0.001
  has "^--backend=ref b1hq2sq256d32 .* 1.104  slower\?  0.00276$"
  lacks "SLOWER"
  # Fewer than 3 samples, samples in one report only, samples that are not a list: the threshold
  # alone (a: +20% SLOWER); d: 3 samples each, +1%: p can never be below 0.01 (1/C(6,3) = 0.05).
  run_with "$py" 1 "too few or unusable samples" "$tmp/few_old.jsonl" "$tmp/few_new.jsonl"
  has "^a +1 +1.2 +1.200  SLOWER   threshold only \(old 3, new 2 samples, fewer than 3\)$"
  has "^b +1 +1.2 +1.200  SLOWER   threshold only \(no samples in new\)$"
  has "^c +1 +1.2 +1.200  SLOWER   threshold only \(samples_ms unusable in new\)$"
  has "^d +1 +1.01 +1.010  same     threshold only \(old 3, new 3 samples: the U test's smallest p 0.05 is not below --alpha 0.01\)$" \
    "3 samples each cannot reach alpha 0.01: the threshold alone, said"
  has "warning: too few samples to reach --alpha 0.01 in .*d" "the unreachable alpha is warned about"
  has "warning: perf.samples_ms is not a list of times in 1 case\(s\): NEW c: judged by the threshold alone"
  has "^3 case\(s\) slower than 5.0%"
else
  echo "NOTE (compare_runs): $py has no SciPy (scripts/setup.sh installs it): the U-test assertions are skipped"
fi

# --- A python3 without SciPy (-S: no site-packages): one note naming the venv python, then the
# threshold alone decides, also for the cases with samples.
mkdir -p "$tmp/fake/py/bin" && printf '#!/bin/sh\n' >"$tmp/fake/py/bin/python" && chmod +x "$tmp/fake/py/bin/python"
nosci="env -u PYTHONPATH SDPABENCH_DEPS=$tmp/fake python3 -S"
run_with "$nosci" 0 "no SciPy: same-binary rerun by the threshold alone" "$data/samples_base.jsonl" "$data/samples_rerun.jsonl"
has "^compare_runs: note: SciPy is not available to .*, so significance is not tested: the threshold alone decides"
[ "$(grep -c "note: SciPy is not available" "$tmp/out")" -eq 1 ] || fail "no SciPy: the note once"
has "scripts/setup.sh installed SciPy in the venv $tmp/fake/py; run:"
has "^  $tmp/fake/py/bin/python $src/scripts/compare_runs.py $data/samples_base.jsonl $data/samples_rerun.jsonl$"
has "^--backend=ref b1hq2sq256d32 .* 1.004  same     threshold only \(no SciPy\)$"
run_with "$nosci" 1 "no SciPy: the planted slowdown by the threshold alone" "$data/samples_base.jsonl" "$tmp/slowed.jsonl"
has "^--backend=ref b1hq2sq256d32 .* 1.104  SLOWER   threshold only \(no SciPy\)$"
# Where the venv with SciPy says "slower?" (p 0.508), the threshold alone says SLOWER.
run_with "$nosci" 1 "no SciPy: +0.4% at a zero threshold" "$data/samples_base.jsonl" "$data/samples_rerun.jsonl" --threshold 0
has "^--backend=ref b1hq2sq256d32 .* 1.004  SLOWER   threshold only \(no SciPy\)$"
has "^significance \(U test, alpha 0.01\): tested on 0 of 3 case\(s\); 3 by the threshold alone"
SDPABENCH_DEPS=$tmp/none run_with "env -u PYTHONPATH python3 -S" 1 "no SciPy, no venv" "$data/samples_base.jsonl" "$tmp/slowed.jsonl"
has "install it \(into the venv $tmp/none/py; SDPABENCH_DEPS moves it; needs root or sudo\) with"
has "setup.sh"

# --- Backends side by side (--by=backend): one report with three backends, a csv report too.
cat >"$tmp/be.jsonl" <<'J'
{"context":{"host":"h","cpu":"c","threads":2,"libraries":{"onednn":"3.13.2"}}}
{"idx":0,"id":"--mode=P --dir=bwd --dt=bf16 b1hq8sq512d64","backend":"onednn","status":"EXECUTED","perf":{"median_ms":20.0}}
{"idx":1,"id":"--backend=torch:flash --mode=P --dir=bwd --dt=bf16 b1hq8sq512d64","backend":"torch:flash","status":"EXECUTED","perf":{"median_ms":1.0}}
{"idx":2,"id":"--backend=ref --mode=P --dir=bwd --dt=bf16 b1hq8sq512d64","backend":"ref","status":"EXECUTED","perf":{"median_ms":40.0}}
{"idx":3,"id":"--mode=P --dir=bwd b1hq8sq512d64","backend":"onednn","status":"EXECUTED","perf":{"median_ms":10.0}}
{"idx":4,"id":"--backend=torch:flash --mode=P --dir=bwd b1hq8sq512d64","backend":"torch:flash","status":"EXECUTED","perf":{"median_ms":4.0}}
{"idx":5,"id":"--backend=ref --mode=P --dir=bwd b1hq8sq512d64","backend":"ref","status":"SKIPPED","perf":null}
J
run 0 "--by=backend, one report" --by=backend "$tmp/be.jsonl"
has "^backends: onednn \(baseline\), torch:flash, ref; 2 case\(s\); median_ms$"
has "^--dir=bwd --dt=bf16 b1hq8sq512d64 +20 +1 \(0.05x\) +40 \(2x\)$"
has "^--dir=bwd b1hq8sq512d64 +10 +4 \(0.4x\) +-$"
has "^geometric-mean ratio torch:flash/onednn \(median_ms\) over 2 case\(s\): 0.1414$"
has "^geometric-mean ratio ref/onednn \(median_ms\) over 1 case\(s\): 2.0000$"
run 0 "--by=backend --baseline" --by=backend --baseline=torch:flash "$tmp/be.jsonl"
has "^geometric-mean ratio onednn/torch:flash \(median_ms\) over 2 case\(s\): 7.0711$"
run 2 "--by=backend, an unknown baseline" --by=backend --baseline=cudnn "$tmp/be.jsonl"
has "no case ran on it \(backends: onednn, torch:flash, ref\)"
# Several reports, one of them csv (its context in comment lines, its timings in columns).
grep -v torch "$tmp/be.jsonl" >"$tmp/be_one.jsonl"
{ echo "# host: h"; echo "# cpu: c"; echo "# threads: 2"; echo "idx,id,backend,status,median_ms,min_ms"
  echo '0,"--backend=torch:flash --mode=P --dir=bwd --dt=bf16 b1hq8sq512d64",torch:flash,EXECUTED,2,1.5'
  echo '1,"--backend=torch:flash --mode=P --dir=bwd b1hq8sq512d64",torch:flash,SKIPPED,,'; } >"$tmp/be_two.csv"
run 0 "--by=backend, a jsonl and a csv report" --by=backend "$tmp/be_one.jsonl" "$tmp/be_two.csv"
has "^--dir=bwd --dt=bf16 b1hq8sq512d64 +20 +40 \(2x\) +2 \(0.1x\)$"
sed 's/"host":"h"/"host":"other"/' "$tmp/be_one.jsonl" >"$tmp/be_other.jsonl"
run 2 "--by=backend, reports of two machines" --by=backend "$tmp/be_other.jsonl" "$tmp/be_two.csv"
has "host: other \($tmp/be_other.jsonl\) vs h \($tmp/be_two.csv\)"
# The run comparison reads csv reports too (no samples: the threshold alone).
{ echo "# host: h"; echo "idx,id,backend,status,mode,median_ms,cold_cache"; echo '0,"--mode=P b1",onednn,EXECUTED,P,2,false'; } >"$tmp/a.csv"
{ echo "# host: h"; echo "idx,id,backend,status,mode,median_ms,cold_cache"; echo '0,"--mode=P b1",onednn,EXECUTED,P,2.5,false'; } >"$tmp/b.csv"
run 1 "two csv reports" "$tmp/a.csv" "$tmp/b.csv"
has "^b1 +2 +2.5 +1.250  SLOWER   threshold only \(no samples in old or new\)$"
run 2 "OLD NEW: a third report needs --by=backend" "$tmp/a.csv" "$tmp/b.csv" "$tmp/b.csv"
has "compares two reports, OLD and NEW \(got 3\)"
echo "OK (compare_runs)"
