#!/usr/bin/env bash
# End-to-end checks of the real executable: statuses, summary line and exit code.
# Usage: run_e2e.sh SCENARIO SDPABENCH_EXE SOURCE_DIR
set -uo pipefail
scenario=$1 exe=$2 src=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$src"

fail() { echo "E2E FAIL ($scenario): $*"; echo "--- output tail:"; tail -n 30 "$tmp/out" 2>/dev/null; exit 1; }
# summary_field NAME: the count after NAME: in the summary line.
summary_field() { grep -E '^tests:' "$tmp/out" | tail -n 1 | grep -oE "(^| )$1:[0-9]+" | cut -d: -f2; }
run() { "$exe" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; cat "$tmp/err" >>"$tmp/out"; }
# check_phases JSONL: every case that ran has phase times (reports/case_result.hpp Phase) that
# are non-negative and sum to its case time within 2%, what no phase accounts for ("other") is at
# most 10% of the run once the 5% of cases with the most "other" are left out (a step left out of
# every phase shows in every case as tens of percent; "other" is ~0.1% on a quiet machine, and the
# scheduler's preemptions land in a few cases' "other": on a loaded 2-core CI run of 2 ms cases
# they summed to 14% of the run), and the summary's last line gives the totals.
check_phases() {
  python3 - "$1" <<'EOF' || fail "phase times do not account for the case times"
import json, sys
bad, ran, run_ms, other_ms, cases = [], 0, 0.0, 0.0, []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if "context" in r or "end" in r or not r.get("case_ms"):
        continue
    ran += 1
    ph = r["phases_ms"]
    total = sum(ph.values())
    run_ms += r["case_ms"]
    other_ms += ph.get("other", 0.0)
    cases.append((ph.get("other", 0.0), r["case_ms"]))
    if min(ph.values()) < 0 or abs(total - r["case_ms"]) > 0.02 * r["case_ms"]:
        bad.append(f"{r['repro']}: phases sum to {total:.3f} ms of {r['case_ms']:.3f} ms: {ph}")
kept = sorted(cases)[:len(cases) - len(cases) // 20]  # the 5% with the most "other" left out
kept_other, kept_ms = sum(o for o, _ in kept), sum(ms for _, ms in kept)
print(f"{ran} cases ran; {len(bad)} whose phases do not sum to the case time; other {other_ms:.1f} of {run_ms:.1f} ms, "
      f"{kept_other:.1f} of {kept_ms:.1f} ms without the 5% of cases with the most")
print("\n".join(bad[:10]))
sys.exit(1 if bad or ran == 0 or kept_other > 0.10 * kept_ms else 0)
EOF
  grep -qE '^total: [0-9.e+-]+s; fill: ' "$tmp/out" || fail "no 'total:' line of phase totals after the summary"
}

case $scenario in
smoke_ref)
  run --backend=ref --batch=cases/ci/smoke.cases --report=jsonl:"$tmp/smoke.jsonl"
  [ "$rc" -eq 0 ] || fail "exit code $rc, expected 0"
  check_phases "$tmp/smoke.jsonl"
  tests=$(summary_field tests); passed=$(summary_field passed)
  [ -n "$tests" ] && [ "$tests" -gt 100 ] || fail "expected > 100 tests, got '$tests'"
  [ "$passed" = "$tests" ] || fail "ref against itself must PASS everything: $passed/$tests passed"
  ;;
smoke_onednn|smoke_onednn_avx2)
  # As scripts/run.sh runs it: the known vendor bugs expected (XFAIL where they show, e.g. the AMX
  # bf16 mask bug on an AMX CPU; PASSED elsewhere). smoke_onednn_avx2 runs it with oneDNN capped at
  # avx2, in a process of that level: every result says it ran there.
  level=default
  [ "$scenario" = smoke_onednn_avx2 ] && level=avx2
  run --backend=onednn --cpu-isa=$level --expect=cases/known/expected.jsonl --batch=cases/ci/smoke.cases \
    --report=jsonl:"$tmp/smoke.jsonl"
  [ "$rc" -eq 0 ] || fail "exit code $rc, expected 0"
  check_phases "$tmp/smoke.jsonl"
  tests=$(summary_field tests); passed=$(summary_field passed); skipped=$(summary_field skipped); xfail=$(summary_field xfail)
  [ -n "$tests" ] && [ "$tests" -gt 100 ] || fail "expected > 100 tests, got '$tests'"
  [ $((passed + skipped + xfail)) -eq "$tests" ] || fail "every case must PASS, be SKIPPED or XFAIL: passed $passed skipped $skipped xfail $xfail of $tests"
  [ "$passed" -gt 0 ] || fail "nothing passed"
  # A skip must say why (a platform reason in parentheses); an XFAIL names its entry.
  if grep -E '^[0-9]+:SKIPPED' "$tmp/out" | grep -vqE '^[0-9]+:SKIPPED \(.+\)'; then fail "SKIPPED without a reason"; fi
  if grep -E '^[0-9]+:XFAIL' "$tmp/out" | grep -vq 'cases/known/expected.jsonl:'; then fail "an XFAIL that does not name its entry"; fi
  python3 - "$tmp/smoke.jsonl" "$level" <<'EOF' || fail "a result does not say the level it ran at"
import json, sys
level = sys.argv[2]
recs = [r for r in map(json.loads, open(sys.argv[1])) if "context" not in r and "end" not in r]
bad = [r["id"] for r in recs if r["cpu_isa"] != level or (level != "default" and r["isa"] != level)
       or not r["isa"] or not r["device"] or not r["vendor_version"]]
print(f"{len(recs)} results, {len(bad)} without their level: {bad[:3]}")
sys.exit(1 if bad or not recs else 0)
EOF
  if [ "$level" != default ]; then
    grep -qE "^cpu-isa=$level: tests:$tests passed:$passed skipped:$skipped " "$tmp/out" || fail "no per-level summary line"
    grep -qE "^[0-9]+:[A-Z_]+ .*__REPRO: --cpu-isa=$level " "$tmp/out" || fail "the repro lines do not carry --cpu-isa=$level"
  fi
  ;;
known)
  # Every case of cases/known/*.cases gets its expected status from cases/known/expected.jsonl on its
  # backend (the file's prefix; retired.cases names its own): XFAIL, or PASSED where the bug's
  # conditions do not hold here (the AMX bug on a CPU without AMX), or SKIPPED where the CPU has no
  # kernel for the type (bf16 below AVX-512, f16 below AVX512-FP16); never FAILED or XPASS.
  has_torch=0
  "$exe" --version | grep -q '^torch:math: libtorch' && has_torch=1
  for f in cases/known/*.cases; do
    case $(basename "$f") in
      onednn-*) be=onednn ;;
      torch-flash-*) be=torch:flash ;;
      torch-math-*) be=torch:math ;;
      *) be="" ;;
    esac
    if [ "$has_torch" = 0 ] && { [ "${be#torch}" != "$be" ] || grep -q '^--backend=torch' "$f"; }; then
      echo "known: $f skipped (no libtorch in this build)"; continue
    fi
    run ${be:+--backend=$be} --expect=cases/known/expected.jsonl --fail-on=failed,invalid_arguments,unimplemented,xpass --batch="$f"
    [ "$rc" -eq 0 ] || fail "$f on ${be:-its backends}: exit $rc (a known case FAILED or XPASS)"
    tests=$(summary_field tests)
    ok=$(( $(summary_field passed) + $(summary_field xfail) + $(summary_field skipped) ))
    [ "$tests" -gt 0 ] && [ "$ok" -eq "$tests" ] || fail "$f: $ok of $tests cases PASSED, XFAIL or SKIPPED"
    if grep -E '^[0-9]+:SKIPPED' "$tmp/out" | grep -vqE 'needs (avx512_core|avx512_core_fp16) or avx2_vnni_2'; then
      fail "$f: a case SKIPPED for another reason than the CPU's types"
    fi
    [ "$(basename "$f")" != retired.cases ] || [ $(( $(summary_field passed) + $(summary_field skipped) )) = "$tests" ] \
      || fail "retired.cases must all PASS (or be SKIPPED where the CPU has no f16 kernel)"
    echo "known: $f: $(grep -E '^tests:' "$tmp/out" | tail -n 1)"
  done
  ;;
models_llama)
  run --backend=onednn --mode=C --batch=cases/models/llama3-8b.cases
  [ "$rc" -eq 0 ] || fail "exit code $rc, expected 0"
  tests=$(summary_field tests); passed=$(summary_field passed); skipped=$(summary_field skipped)
  [ "$tests" -gt 0 ] && [ $((passed + skipped)) -eq "$tests" ] || fail "passed $passed skipped $skipped of $tests"
  ;;
bad_line)
  # A malformed line costs only its own cases; the error names file:line, and the problem after the
  # bad knob is reported as not run, naming the knob.
  printf 'b1hq2sq16d16\n--dt=bf8 b1hq2sq16d16\nb1hq2sq16d16\n' >"$tmp/bad.cases"
  run --backend=ref --batch="$tmp/bad.cases"
  [ "$rc" -eq 3 ] || fail "exit code $rc, expected 3 (an INVALID_ARGUMENTS case)"
  grep -qE "bad.cases:2:[0-9]+: error: .*bf8" "$tmp/out" || fail "no 'file:line:col: error:' naming bf8"
  grep -q "bad.cases:2:10: error: 'b1hq2sq16d16' not run: the knob '--dt=bf8'" "$tmp/out" || fail "the problem after it, not run"
  [ "$(summary_field passed)" = 2 ] || fail "the two good cases must still PASS"
  [ "$(summary_field invalid_arguments)" = 2 ] || fail "expected two INVALID_ARGUMENTS (the knob, the problem after it)"
  # A valid-syntax case that breaks a rule is INVALID_ARGUMENTS with the rule and values.
  run --backend=ref b1hq6hkv4sq16d16 b1hq2sq16d16
  [ "$rc" -eq 3 ] || fail "exit code $rc, expected 3"
  grep -qE "^0:INVALID_ARGUMENTS \(.*H_q = 6.*H_kv = 4" "$tmp/out" || fail "GQA rule not named"
  grep -qE "^1:PASSED" "$tmp/out" || fail "the case after the invalid one must run"
  ;;
usage)
  # A bad knob value costs the problems after it (INVALID_ARGUMENTS, exit 3), not the run (issue 42).
  run --dt=bf8 b1hq2sq16d16
  [ "$rc" -eq 3 ] || fail "bad knob value on the command line: exit $rc, expected 3"
  run --backend=nonexistent b1hq2sq16d16
  [ "$rc" -eq 3 ] || fail "unknown backend on the command line: exit $rc, expected 3"
  grep -qE "unknown value 'nonexistent' for --backend \(accepted: onednn\|(cudnn\|)?(torch:math\|torch:flash\|torch:efficient\|torch:cudnn\|torch:math:cuda\|torch:flash:cuda\|)?ref\|faulty:KIND\|test:KIND; faulty kinds: faulty:causal_off_by_one" "$tmp/out" || fail "backend list missing"
  run --dt=bf8 b1hq2sq16d16
  grep -q "command line: error: unknown value 'bf8'" "$tmp/out" || fail "message must name the value"
  run
  [ "$rc" -eq 2 ] || fail "no problem: exit $rc, expected 2"
  run --help
  [ "$rc" -eq 0 ] || fail "--help: exit $rc"
  grep -q -- "--mask" "$tmp/out" || fail "--help must describe the knobs"
  run --version
  [ "$rc" -eq 0 ] || fail "--version: exit $rc"
  grep -qE "oneDNN v[0-9]+\.[0-9]+" "$tmp/out" || fail "--version must print the oneDNN version"
  ;;
strides_faults)
  # cases/ci/strides.cases PASSES on the reference backend (which runs on real strided buffers), and
  # each fault that ignores a stride is FAILED by it, on exactly the cases that have that stride.
  run --backend=ref --batch=cases/ci/strides.cases
  [ "$rc" -eq 0 ] && [ "$(summary_field passed)" = "$(summary_field tests)" ] || fail "ref: $(summary_field passed) of $(summary_field tests) passed"
  run --backend=faulty:do_strides_as_o --batch=cases/ci/strides.cases
  [ "$rc" -eq 1 ] || fail "do_strides_as_o: exit $rc"
  [ "$(grep -cE '^[0-9]+:FAILED .*--dir=bwd .*n=do_ne_o$' "$tmp/out")" = 4 ] || fail "do_strides_as_o: the 4 bwd do_ne_o cases must FAIL"
  [ "$(grep -cE '^[0-9]+:FAILED .*--dir=bwd .*n=grads_ne_inputs$' "$tmp/out")" = 4 ] || fail "do_strides_as_o: dO:sbhd cases must FAIL"
  if grep -E '^[0-9]+:FAILED' "$tmp/out" | grep -vqE -- '--dir=bwd'; then fail "do_strides_as_o: a forward case FAILED"; fi
  run --backend=faulty:stats_strides_ignored --batch=cases/ci/strides.cases
  [ "$rc" -eq 1 ] || fail "stats_strides_ignored: exit $rc"
  [ "$(grep -cE '^[0-9]+:FAILED \(stats: .*n=stats_bsh$' "$tmp/out")" = 4 ] || fail "stats_strides_ignored: the 4 fwd_t stats_bsh cases must FAIL"
  [ "$(summary_field failed)" = 4 ] || fail "stats_strides_ignored: only the stats cases may FAIL"
  run --backend=faulty:stride_gap_write --batch=cases/ci/strides.cases
  [ "$rc" -eq 1 ] || fail "stride_gap_write: exit $rc"
  grep -qE '^[0-9]+:FAILED \(O: wrote into the stride gap of O at element offset [0-9]+ .*n=row_pitch$' "$tmp/out" || fail "stride_gap_write: O row pitch not caught"
  grep -qE '^[0-9]+:FAILED \(dQ: wrote into the stride gap of dQ .*n=packed_qkv$' "$tmp/out" || fail "stride_gap_write: packed dQ not caught"
  if grep -E '^[0-9]+:FAILED' "$tmp/out" | grep -vq 'wrote into the stride gap'; then fail "stride_gap_write: a FAILED case for another reason"; fi
  ;;
dropout_faults)
  # cases/ci/dropout.cases PASSES on the reference backend, and each dropout fault is FAILED by it:
  # exactly the cases with p > 0 in the directions the fault touches.
  run --backend=ref --batch=cases/ci/dropout.cases
  [ "$rc" -eq 0 ] && [ "$(summary_field passed)" = "$(summary_field tests)" ] || fail "ref: $(summary_field passed) of $(summary_field tests) passed"
  total="$(summary_field tests)"
  for kind in dropout_one_mask dropout_no_rescale dropout_bwd_offset dropout_ds_dropped_p; do
    run --backend=faulty:$kind --batch=cases/ci/dropout.cases
    [ "$rc" -eq 1 ] || fail "$kind: exit $rc"
    if grep -E '^[0-9]+:FAILED' "$tmp/out" | grep -q -- '--dropout=0:'; then fail "$kind: a p = 0 case FAILED"; fi
    nf="$(summary_field failed)"
    case $kind in
      dropout_one_mask|dropout_no_rescale) want=$(( (total - 1) * 2 / 3 + 1 )) ;;  # every p > 0 case
      *) want=$(( (total - 1) * 2 / 3 * 2 / 3 + 1 )) ;;  # the p > 0 bwd and fwd_bwd cases
    esac
    [ "$nf" = "$want" ] || fail "$kind: $nf FAILED, want $want"
  done
  ;;
smoke_faults)
  # cases/ci/smoke.cases FAILS a dMask that is not summed over the bias's broadcast axes (its dMask
  # section: 7 broadcast shapes x 3 io types; a full [B,H_q,S_q,S_kv] bias has nothing to sum),
  # and no other case.
  run --backend=faulty:dmask_no_reduce --batch=cases/ci/smoke.cases
  [ "$rc" -eq 1 ] || fail "dmask_no_reduce: exit code $rc, expected 1"
  [ "$(summary_field failed)" = 21 ] || fail "dmask_no_reduce: $(summary_field failed) FAILED, expected 21"
  if grep -E '^[0-9]+:FAILED' "$tmp/out" | grep -vq 'FAILED (dMask: '; then fail "dmask_no_reduce: a case FAILED on another output"; fi
  # A kernel that is right but not deterministic (dQ an ulp off, alternating from run to run) PASSES
  # every smoke case in --mode=C, and --mode=B FAILS it.
  run --backend=faulty:dq_nondeterministic --batch=cases/ci/smoke.cases
  [ "$rc" -eq 0 ] && [ "$(summary_field passed)" = "$(summary_field tests)" ] ||
    fail "dq_nondeterministic, --mode=C: exit $rc, $(summary_field passed) of $(summary_field tests) passed"
  run --backend=faulty:dq_nondeterministic --mode=B --dir=bwd --dt=f32,bf16 b1hq4hkv2sq32d32
  [ "$rc" -eq 1 ] && [ "$(summary_field failed)" = 2 ] || fail "dq_nondeterministic, --mode=B: exit $rc"
  grep -q 'not deterministic between two runs: dQ: ' "$tmp/out" || fail "dq_nondeterministic, --mode=B: no dQ difference named"
  ;;
list_mode)
  run --mode=L --dt=f32,bf16 --dir=fwd_t,bwd b1hq2sq16d16
  [ "$rc" -eq 0 ] || fail "exit code $rc"
  [ "$(summary_field listed)" = 4 ] || fail "expected 4 LISTED"
  grep -q "__REPRO: --dir=bwd --dt=bf16 b1hq2sq16d16" "$tmp/out" || fail "repro missing"
  ;;
all_models)
  # Every short model file, on the oneDNN backend.
  for f in cases/models/*.cases; do
    run --backend=onednn --batch="$f"
    [ "$rc" -eq 0 ] || fail "$f: exit code $rc"
    tests=$(summary_field tests); passed=$(summary_field passed); skipped=$(summary_field skipped)
    [ "$tests" -gt 0 ] && [ $((passed + skipped)) -eq "$tests" ] || fail "$f: passed $passed skipped $skipped of $tests"
  done
  ;;
overflow)
  # A reference that overflows f32 proves nothing: INVALID_ARGUMENTS, never PASSED.
  run --backend=ref --dt=bf16 --scale=1e38 b1hq1sq4d4
  [ "$rc" -eq 3 ] || fail "exit code $rc, expected 3"
  grep -qE "^0:INVALID_ARGUMENTS \(O: the reference has [0-9]+ non-finite" "$tmp/out" || fail "overflow not reported"
  ;;
cudnn_no_gpu)
  # On a machine without an NVIDIA GPU or driver, every case of the GPU smoke set is SKIPPED with
  # the CUDA runtime's reason, and the run exits 0. Exit 77 (CTest: skipped) where a GPU answers.
  run --version
  grep -qE "^cudnn: cuDNN frontend [0-9.]+, built against cuDNN 9\." "$tmp/out" || fail "--version must describe the cuDNN backend"
  if grep -qE "^cudnn: .*device: [^n].*\(sm_" "$tmp/out"; then echo "E2E SKIP ($scenario): a GPU is present"; exit 77; fi
  run --backend=cudnn --batch=cases/gpu/smoke.cases
  [ "$rc" -eq 0 ] || fail "exit code $rc, expected 0"
  tests=$(summary_field tests); skipped=$(summary_field skipped)
  [ -n "$tests" ] && [ "$tests" -gt 20 ] || fail "expected > 20 tests, got '$tests'"
  [ "$skipped" = "$tests" ] || fail "every case must be SKIPPED without a GPU: $skipped of $tests"
  if grep -E '^[0-9]+:SKIPPED' "$tmp/out" | grep -vqE '^[0-9]+:SKIPPED \((no usable NVIDIA driver or GPU|no NVIDIA GPU).+\)'; then
    fail "a SKIPPED line without the no-GPU reason"
  fi
  grep -qE "__REPRO: --backend=cudnn --dir=fwd_bwd" "$tmp/out" || fail "fwd_bwd repro missing"
  ;;
fp8)
  # The fp8 path end to end on the CPU: cases/gpu/fp8.cases and ragged.cases on test:fp8 (the
  # reference on fp8 buffers: codes and descales, P and dS rounded, amax) all PASS; the vendors
  # without fp8 kernels say so (UNIMPLEMENTED, exit 3); the fp8 faults are caught (scripts/selftest.sh).
  run --backend=test:fp8 --batch=cases/gpu/fp8.cases --batch=cases/gpu/ragged.cases
  [ "$rc" -eq 0 ] || fail "test:fp8: exit code $rc, expected 0"
  tests=$(summary_field tests); passed=$(summary_field passed)
  [ "$tests" -gt 30 ] && [ "$passed" = "$tests" ] || fail "test:fp8 must PASS every case: $passed/$tests"
  grep -qE "^[0-9]+:PASSED .*--dir=bwd --dt=e5m2" "$tmp/out" || fail "no e5m2 backward case"
  for be in ref onednn torch:flash; do
    run --backend=$be --dt=e4m3 --dir=fwd_t b1hq2sq32d16
    grep -qE "^0:SKIPPED \(backend $be is not compiled into this build" "$tmp/out" && continue  # e.g. the asan build
    [ "$rc" -eq 3 ] || fail "$be: exit code $rc, expected 3"
    grep -qE "^0:UNIMPLEMENTED \(.*(fp8|e4m3).*\)" "$tmp/out" || fail "$be: fp8 must be UNIMPLEMENTED with its reason"
  done
  run -v --backend=test:fp8 --dt=e4m3 --dir=bwd b1hq2sq32d16
  grep -qE "^ +amax: worst" "$tmp/out" || fail "-v must show the amax check"
  # No oneDNN graph says fp8 with per-tensor descales, nor ragged tensors: --emit-onednn-json refuses.
  run --emit-onednn-json="$tmp/json" --backend=test:fp8 --dt=e4m3 b1hq2sq32d16
  grep -q "emit-onednn-json: error: the oneDNN graph has no fp8 SDPA" "$tmp/out" || fail "fp8 graph JSON not refused"
  [ ! -e "$tmp/json" ] || [ -z "$(ls -A "$tmp/json")" ] || fail "an fp8 graph JSON was written"
  ;;
ragged)
  # Ragged (THD) buffers on the reference backend: every non-fp8 case of cases/gpu/ragged.cases
  # PASSES; its fp8 ones are UNIMPLEMENTED there (exit 3).
  run --backend=ref --batch=cases/gpu/ragged.cases
  [ "$rc" -eq 3 ] || fail "exit code $rc, expected 3 (the fp8 cases)"
  tests=$(summary_field tests); passed=$(summary_field passed); unimpl=$(summary_field unimplemented)
  [ $((passed + unimpl)) -eq "$tests" ] && [ "$passed" -gt 8 ] || fail "passed $passed unimplemented $unimpl of $tests"
  if grep -E "^[0-9]+:UNIMPLEMENTED" "$tmp/out" | grep -vq -- "--dt=e4m3"; then fail "a non-fp8 case UNIMPLEMENTED"; fi
  # A wrong kernel on ragged buffers is caught like on dense ones (a key of each batch ignored).
  run --backend=faulty:drop_last_key --dir=fwd_t --layout=bshd --ragged=true --seq-len-q=0:1:37 --seq-len-kv=5:64:2 b3hq2sq64d32
  [ "$rc" -eq 1 ] || fail "faulty:drop_last_key on ragged buffers: exit code $rc, expected 1"
  ;;
backend_status)
  # One status for a backend, in-process and isolated: every listed backend, compiled into this
  # build or not (--version's "not in this build" lines: SKIPPED with the reason).
  run --version
  mapfile -t missing < <(grep -oE '^[a-z:0-9]+ \(.*\): not in this build$' "$tmp/out" | cut -d' ' -f1)
  for be in ref "${missing[@]}"; do
    run --backend="$be" --dir=fwd_t b1hq2sq32d16
    line=$(grep -E '^0:' "$tmp/out" | sed -E 's/ \([0-9.]+ ms\)//')
    run --isolate --backend="$be" --dir=fwd_t b1hq2sq32d16
    iline=$(grep -E '^0:' "$tmp/out" | sed -E 's/ \([0-9.]+ ms\)//')
    [ -n "$line" ] && [ "$line" = "$iline" ] || fail "$be: in-process '$line' but isolated '$iline'"
    case $be in ref) ;; *) [[ "$line" == "0:SKIPPED (backend $be is not compiled into this build: "* ]] || fail "$be: $line" ;; esac
  done
  echo "checked: ref ${missing[*]}"
  ;;
isolation)
  # A hang (past --timeout-per-case) and a crash (test-only backends) each cost one FAILED case;
  # the cases after them still PASS. Exit 1 for the FAILED ones.
  run --timeout-per-case=3 --backend=test:sleep b1hq1sq8d8 --backend=test:segv b1hq1sq8d8 --backend=ref b1hq1sq8d8 b1hq2sq16d8
  [ "$rc" -eq 1 ] || fail "exit code $rc, expected 1"
  grep -qE '^0:FAILED \(timeout: the case ran longer than --timeout-per-case=3s and was killed\) \([0-9.]+ ms\) __REPRO: --backend=test:sleep b1hq1sq8d8$' "$tmp/out" || fail "timeout not FAILED"
  grep -qE '^1:FAILED \(crashed: Segmentation fault \(SIGSEGV, signal 11\)\) .*__REPRO: --backend=test:segv b1hq1sq8d8$' "$tmp/out" || fail "crash not FAILED with its signal"
  grep -qE '^2:PASSED .*__REPRO: --backend=ref b1hq1sq8d8$' "$tmp/out" || fail "case 2 after the crash must PASS"
  grep -qE '^3:PASSED .*__REPRO: --backend=ref b1hq2sq16d8$' "$tmp/out" || fail "case 3 must PASS"
  [ "$(summary_field failed)" = 2 ] && [ "$(summary_field passed)" = 2 ] || fail "expected 2 failed, 2 passed"
  # --isolate alone (no timeout): the crash is FAILED, the next case runs.
  run --isolate --backend=test:segv b1hq1sq8d8 --backend=ref b1hq1sq8d8
  [ "$rc" -eq 1 ] || fail "--isolate: exit code $rc, expected 1"
  grep -qE '^0:FAILED \(crashed: Segmentation fault \(SIGSEGV' "$tmp/out" || fail "--isolate: crash not FAILED"
  grep -qE '^1:PASSED' "$tmp/out" || fail "--isolate: the case after the crash must PASS"
  # A process the case started that holds the child's pipe (test:orphan: a helper left sleeping for
  # an hour) neither hangs the run nor outlives it: the child's exit ends the wait, and its process
  # group (the helper with it) is killed. Before: --isolate waited for EOF on the pipe, an hour.
  for opt in --isolate --timeout-per-case=60; do
    rm -f "$tmp/orphans"
    SDPABENCH_TEST_ORPHAN_PIDS=$tmp/orphans timeout 90 "$exe" $opt --backend=test:orphan b1hq1sq8d8 b1hq2sq16d8 >"$tmp/out" 2>&1
    rc=$?
    [ "$rc" -eq 0 ] || fail "$opt: a helper holding the pipe: exit $rc (124: the run hung), expected 0"
    [ "$(summary_field passed)" = 2 ] || fail "$opt: both cases must PASS"
    [ "$(wc -l <"$tmp/orphans")" = 2 ] || fail "$opt: each case must have left a helper"
    for p in $(cat "$tmp/orphans"); do
      for _ in $(seq 50); do st=$(ps -o stat= -p "$p" 2>/dev/null); [ -z "$st" ] || [[ $st == Z* ]] && break; sleep 0.1; done
      [ -z "$st" ] || [[ $st == Z* ]] || fail "$opt: the helper $p outlived its case ($st)"
    done
  done
  # A run killed (SIGKILL) while a case runs takes the case's child and its helper along.
  rm -f "$tmp/orphans"
  SDPABENCH_TEST_ORPHAN_PIDS=$tmp/orphans "$exe" --isolate --backend=test:orphan --dir=bwd b1hq8sq8192d64 >/dev/null 2>&1 &
  runpid=$!
  for _ in $(seq 600); do [ -s "$tmp/orphans" ] && break; sleep 0.1; done
  [ -s "$tmp/orphans" ] || fail "the killed run's case did not start its helper"
  kill -KILL "$runpid"; wait "$runpid" 2>/dev/null
  p=$(cat "$tmp/orphans")
  for _ in $(seq 50); do st=$(ps -o stat= -p "$p" 2>/dev/null); [ -z "$st" ] || [[ $st == Z* ]] && break; sleep 0.1; done
  [ -z "$st" ] || [[ $st == Z* ]] || { kill -KILL "$p"; fail "the helper $p outlived the killed run ($st)"; }
  # The rerun alone of a FAILED case runs under the run's options (--skip-impl here) and claims an
  # order dependence only when the case passes alone: test:stateful fails every case after a
  # process's first, and alone its first case's implementation is the one --skip-impl leaves out.
  run --backend=test:stateful --skip-impl='*ref_forward*' --report=jsonl:"$tmp/alone.jsonl" b1hq2sq16d16 b1hq2sq16d32
  [ "$rc" -eq 1 ] || fail "rerun alone: exit $rc, expected 1"
  grep -qE "^1:FAILED .*\[run alone in a fresh process it is SKIPPED \(implementation 'sdpabench ref_forward' matches --skip-impl=\*ref_forward\*\): whether this failure depends on the cases run before it is not known\]" "$tmp/out" ||
    fail "rerun alone: SKIPPED alone is not an order dependence, and the rerun must get --skip-impl"
  python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1])][2]; assert r['alone_status']=='SKIPPED', r['alone_status']" \
    "$tmp/alone.jsonl" || fail "rerun alone: jsonl alone_status must be SKIPPED"
  # Device memory (test:device: the reference on a simulated 64 MiB device): a case past 90% of
  # the free memory is SKIPPED before it runs; past --max-device-memory too; and a device that runs
  # out during the case (the guard raised past it) is SKIPPED like a host out of memory, not FAILED.
  run --backend=test:device b1hq2sq64d64 b1hq16sq4096d128
  [ "$rc" -eq 0 ] || fail "device guard: exit $rc, expected 0"
  grep -qE "^0:PASSED" "$tmp/out" || fail "device guard: the small case must PASS"
  grep -qE "^1:SKIPPED \(not enough device memory: the case needs about 128 MiB on the device, more than 90% of the device's free 64 MiB" "$tmp/out" ||
    fail "device guard: the default limit"
  run --backend=test:device --max-device-memory=1M b1hq4sq512d64
  grep -qE "^0:SKIPPED \(not enough device memory: .* more than --max-device-memory=1 MiB" "$tmp/out" || fail "device guard: --max-device-memory"
  run --backend=test:device --max-device-memory=1T b1hq16sq4096d128
  [ "$rc" -eq 0 ] || fail "device out of memory: exit $rc, expected 0"
  grep -qE "^0:SKIPPED \(out of device memory: test:device: allocating 128 MiB with 64 MiB free\)" "$tmp/out" ||
    fail "a device out of memory must be SKIPPED"
  # Memory guard: a case past --max-memory is SKIPPED with its estimate and the limit.
  run --max-memory=1M --backend=ref b1hq1sq512d64 b1hq1sq8d8
  [ "$rc" -eq 0 ] || fail "memory guard: exit code $rc, expected 0"
  grep -qE '^0:SKIPPED \(not enough memory: the case needs about [0-9.]+ MiB of host memory, more than --max-memory=1 MiB' "$tmp/out" || fail "memory skip not reported with estimate and limit"
  grep -qE '^1:PASSED' "$tmp/out" || fail "the small case after the skipped one must PASS"
  # Test-only backends are listed apart from the real ones in --help.
  run --help
  grep -qE '^BACKENDS: onednn, (cudnn, )?(torch:math, torch:flash, torch:efficient, torch:cudnn, torch:math:cuda, torch:flash:cuda, )?ref$' "$tmp/out" ||
    fail "--help: real backends line"
  # A build without libtorch (the asan preset) lists the torch rows apart, with the reason.
  if ! grep -q '^BACKENDS: .*torch:math' "$tmp/out"; then
    grep -qE '^NOT IN THIS BUILD \(their cases are SKIPPED with the reason\): .*torch:efficient \(' "$tmp/out" ||
      fail "--help: the backends this build lacks, with the reason"
  fi
  grep -q 'TEST-ONLY BACKENDS (for sdpabench.s own tests; test:sleep and test:segv hang or crash without --isolate): test:sleep, test:segv' "$tmp/out" || fail "--help: test-only heading"
  ;;
*) fail "unknown scenario" ;;
esac
echo "E2E OK ($scenario)"
