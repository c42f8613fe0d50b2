#!/usr/bin/env bash
# End-to-end checks of oneDNN graph JSON support (--case import, --emit-onednn-json export).
# Usage: onednn_json_e2e.sh SCENARIO SDPABENCH_EXE SOURCE_DIR
# Exit 77 (CTest SKIP_RETURN_CODE) when ../shared/upstream-cases is absent.
set -uo pipefail
scenario=$1 exe=$2 src=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$src"
upstream="$src/../shared/upstream-cases/onednn-benchdnn"
# Real-model training graphs (HF, timm, TorchBench) whose Q/K/V/O/dO are strided views.
mha="$src/../shared/upstream-cases/benchdnn-graph/complex_fusion/mha"
real_models=(hf-sdpa-bwd-no-mask hf-sdpa-bwd-w-mask timms-sdpa-bwd-no-mask torchbench-sdpa-bwd torchbench-sdpa-bwd-w-mask)

fail() { echo "E2E FAIL ($scenario): $*"; echo "--- output tail:"; tail -n 30 "$tmp/out" 2>/dev/null; exit 1; }
summary_field() { grep -E '^tests:' "$tmp/out" | tail -n 1 | grep -oE "(^| )$1:[0-9]+" | cut -d: -f2; }
run() { "$exe" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; cat "$tmp/err" >>"$tmp/out"; }

case $scenario in
upstream_onednn|upstream_ref)
  # Every upstream benchdnn SDPA training file must PASS (oneDNN: or be SKIPPED for the ISA).
  [ -d "$upstream" ] || { echo "SKIP: $upstream is absent"; exit 77; }
  backend=${scenario#upstream_}
  args=()
  for f in "$upstream"/*.json; do args+=("--case=$f"); done
  run -v --backend="$backend" "${args[@]}"
  [ "$rc" -eq 0 ] || fail "exit code $rc, expected 0"
  tests=$(summary_field tests); passed=$(summary_field passed); skipped=$(summary_field skipped)
  [ "$tests" -eq "${#args[@]}" ] || fail "expected ${#args[@]} cases, got $tests"
  [ $((passed + skipped)) -eq "$tests" ] && [ "$passed" -gt 0 ] || fail "passed $passed skipped $skipped of $tests"
  ;;
real_models_onednn|real_models_ref)
  # The real-model backward graphs that need nothing but strides run as benchdnn runs them, and
  # PASS (oneDNN: or are SKIPPED for the CPU's ISA); so does an --in-shapes rewrite of one of them
  # with explicit strides, a tag and shapes alone; and the descriptor form that -v prints for a
  # strided graph is itself a runnable case that PASSES.
  [ -d "$mha" ] || { echo "SKIP: $mha is absent"; exit 77; }
  backend=${scenario#real_models_}
  # oneDNN runs these graphs' QK^T matmul on its reference kernel (a host-scalar scale: the
  # reference fallback, docs/perf_and_reports.md#what-ran), 100 s a graph on 2 cores at their own
  # batch; benchdnn's --mb=2 keeps every graph's strides, layouts and a batch stride, at a quarter
  # of the time. The reference backend runs them at their own batch.
  mb=() b_hf=4 b_tb=8
  if [ "$backend" = onednn ]; then mb=(--mb=2) b_hf=2 b_tb=2; fi
  args=("${mb[@]}")
  for f in "${real_models[@]}"; do args+=("--case=$mha/$f-bf16-f32.json"); done
  args+=("--in-shapes=1:2x4x64x64*32768x64x512x1+2:2x4x64x64*acbd+3:2x4x64x64+4:2x4x64x64+0:2x4x64x64+5:2x4x64x1"
      "--case=$mha/hf-sdpa-bwd-no-mask-bf16-f32.json")
  run -v --backend="$backend" "${args[@]}"
  [ "$rc" -eq 0 ] || fail "exit code $rc, expected 0"
  tests=$(summary_field tests); passed=$(summary_field passed); skipped=$(summary_field skipped)
  [ "$tests" -eq 6 ] || fail "expected 6 cases, got $tests"
  [ $((passed + skipped)) -eq 6 ] || fail "passed $passed skipped $skipped of $tests"
  if [ "$backend" = ref ]; then [ "$passed" -eq 6 ] || fail "the reference must PASS all 6: $passed"; fi
  if grep -E '^[0-9]+:SKIPPED' "$tmp/out" | grep -vqE 'bf16 needs'; then fail "a SKIPPED case for another reason than the ISA"; fi
  grep -qE "graph: .*--layout=bshd .*b${b_hf}hq64sq512d64n=hf-sdpa-bwd-no-mask" "$tmp/out" || fail "hf graph not read as [B,S,H,D] views"
  grep -qE "graph: .*--strides=dO:bshd b${b_tb}hq6sq1500d64n=torchbench-sdpa-bwd-bf16-f32" "$tmp/out" || fail "torchbench dO strides lost"
  grep -qE "graph: .*--layout=bshd --strides=Q:32768x64x512x1 b2hq4sq64d64" "$tmp/out" || fail "--in-shapes strides lost"
  line=$(grep -E "graph: .*n=timms-sdpa-bwd-no-mask" "$tmp/out" | sed 's/^ *graph: //')
  [ -n "$line" ] || fail "no graph line for the timm graph"
  # shellcheck disable=SC2086
  run --backend="$backend" $line
  [ "$rc" -eq 0 ] || fail "the descriptor form '$line' exits $rc"
  [ $(( $(summary_field passed) + $(summary_field skipped) )) -eq 1 ] || fail "the descriptor form '$line' did not pass"
  ;;
dropout_onednn|dropout_ref)
  # benchdnn's three graphs with Dropout run with --case= and PASS (oneDNN: its own generator,
  # replicated; the importer's default p 0.1, seed --seed, offset 1), and a --dropout given for
  # the graph is used and kept in the repro.
  [ -d "$mha" ] || { echo "SKIP: $mha is absent"; exit 77; }
  backend=${scenario#dropout_}
  run -v --backend="$backend" --case="$mha/gqa-plain-training-fwd-w-dropout-f32.json" \
      --case="$mha/gqa-plain-training-fwd-w-dropout-bf16-f32.json" --case="$mha/gqa-plain-training-bwd-w-dropout-bf16-f32.json"
  [ "$rc" -eq 0 ] || fail "exit code $rc, expected 0"
  [ "$(summary_field passed)" -eq 3 ] || fail "the three dropout graphs must PASS: $(summary_field passed)"
  [ "$(grep -cE 'graph: .*--dropout=0.1:1:1 b2hq16hkv2' "$tmp/out")" -eq 3 ] || fail "import defaults not --dropout=0.1:1:1"
  [ "$(grep -cE 'dropout: .*heads: keep-rate p-value' "$tmp/out")" -eq 3 ] || fail "mask statistics missing"
  run --backend="$backend" --dropout=0.5:3:9 --case="$mha/gqa-plain-training-fwd-w-dropout-f32.json"
  [ "$rc" -eq 0 ] || fail "--dropout=0.5:3:9: exit $rc"
  grep -qE '^0:PASSED .*__REPRO: (--backend=[a-z]+ )?--dropout=0.5:3:9 --case=' "$tmp/out" || fail "--dropout not kept in the repro"
  ;;
harness_ci)
  # benchdnn's own batch file, unmodified, from its inputs root: every --case path resolves, every
  # benchdnn knob it uses is read, one result per case benchdnn expands the lines to (83), nothing
  # FAILS. Every training line (file name with training, bwd, backward or dmask) is PASSED,
  # MISTRUSTED (the dMask graphs only) or SKIPPED for the CPU's ISA; the inference lines sdpabench
  # does not model are UNIMPLEMENTED with the reason, never INVALID_ARGUMENTS.
  root="$src/../shared/upstream-cases/benchdnn-graph"
  [ -d "$root" ] || { echo "SKIP: $root is absent"; exit 77; }
  (cd "$root" && "$exe" --backend=onednn --batch=complex_fusion/harness_mha_ci) >"$tmp/out" 2>&1
  grep -q "cannot open" "$tmp/out" && fail "a path did not resolve"
  grep -q "unknown knob" "$tmp/out" && fail "a benchdnn knob was not read"
  [ "$(summary_field tests)" = 83 ] || fail "$(summary_field tests) results, benchdnn expands the file to 83 cases"
  [ "$(summary_field failed)" = 0 ] || fail "$(summary_field failed) FAILED"
  [ "$(summary_field invalid_arguments)" = 0 ] || fail "$(summary_field invalid_arguments) INVALID_ARGUMENTS"
  grep -E '^[0-9]+:' "$tmp/out" | grep -E 'mha/[^ /]*(training|bwd|backward|dmask)[^ /]*\.json' >"$tmp/training"
  [ "$(grep -c . "$tmp/training")" -ge 28 ] || fail "fewer than 28 training results"
  if grep -vE '^[0-9]+:(PASSED|MISTRUSTED|SKIPPED \(f16 needs)' "$tmp/training"; then fail "training lines above lack a verdict"; fi
  [ "$(grep -c ':PASSED' "$tmp/training")" -ge 14 ] || fail "fewer than 14 training lines PASSED"
  if grep -E '^[0-9]+:MISTRUSTED' "$tmp/out" | grep -v dmask; then fail "a MISTRUSTED line that is not a dMask graph"; fi
  ;;
roundtrip)
  # Export the graphs of descriptor cases, run the files back on both backends. (MHA with B = 1:
  # bf16 MHA with B >= 2, H_q >= 2 and a [1,1,S_q,S_kv] mask hits the vendor bug in cases/known/.)
  run --backend=ref --emit-onednn-json="$tmp/json" --dir=fwd_t,bwd --dt=f32,bf16 --mask=none,causal_br \
      b2hq4hkv2sq16d16 b1hq2sq16skv24dqk16dv8 --mask=bias --mask-shape=Bx1x1xSkv --mask-fill=zero b2hq2sq8d8
  [ "$rc" -eq 0 ] || fail "export run: exit code $rc"
  n=$(ls "$tmp/json"/*.json | wc -l)
  [ "$n" -eq 20 ] || fail "expected 20 JSON files, got $n"
  args=()
  for f in "$tmp/json"/*.json; do args+=("--case=$f"); done
  for backend in ref onednn; do
    run --backend=$backend "${args[@]}"
    [ "$rc" -eq 0 ] || fail "$backend on the exported files: exit code $rc"
    tests=$(summary_field tests); passed=$(summary_field passed); skipped=$(summary_field skipped)
    [ "$tests" -eq 20 ] && [ $((passed + skipped)) -eq 20 ] || fail "$backend: passed $passed skipped $skipped of $tests"
  done
  # Implicit causal masks, dropout device scalars and dMask graphs read back as the same problem.
  run --backend=ref --emit-onednn-json="$tmp/forms" --dir=fwd_t,bwd --mask=causal_tl,causal_br --mask-form=implicit \
      b1hq2sq16skv24d16 b2hq4hkv2sq17skv9d8 --reset --dir=bwd --dropout=0.2:3:4 --dropout-property=tensor b1hq2sq16d16 \
      --reset --dir=bwd --mask=bias --dmask=true --mask-shape=1x1xSqxSkv,BxHqxSqxSkv,Bx1x1xSkv b2hq2sq8skv12d8
  [ "$rc" -eq 0 ] || fail "export of the graph forms: exit code $rc"
  [ "$(ls "$tmp/forms"/*.json | wc -l)" -eq 12 ] || fail "expected 12 JSON files of the graph forms"
  forms=()
  for f in "$tmp/forms"/*.json; do forms+=("--case=$f"); done
  for backend in ref onednn; do
    run -v --backend=$backend --dropout=0.2:3:4 "${forms[@]}"
    [ "$rc" -eq 0 ] || fail "$backend on the graph forms: exit code $rc"
    # (an imported bias gets benchdnn's causal fill: a full-shape dMask is then mostly exact zeros, MISTRUSTED)
    [ $(( $(summary_field passed) + $(summary_field mistrusted) )) -eq 12 ] || fail "$backend: $(summary_field passed) of 12 graph forms PASSED"
    [ "$(grep -cE 'graph: .*--mask=causal_(tl|br) .*--mask-form=implicit' "$tmp/out")" -eq 8 ] || fail "implicit masks not read back"
    [ "$(grep -cE 'graph: .*--dropout-property=tensor' "$tmp/out")" -eq 1 ] || fail "dropout device scalars not read back"
    [ "$(grep -cE 'graph: .*--dmask=true' "$tmp/out")" -eq 3 ] || fail "dMask not read back"
    [ "$(grep -cE '^ +dMask: worst' "$tmp/out")" -eq 3 ] || fail "dMask not checked"
  done
  # Exporting an imported file again gives the same bytes.
  first=${args[0]#--case=}
  run --mode=L --emit-onednn-json="$tmp/again" --case="$first"
  cmp -s "$first" "$(ls "$tmp/again"/*.json | head -1)" || fail "re-export of $first differs"
  ;;
errors)
  # Malformed JSON: file, line and column; the other cases still run.
  printf '{\n  "graph": [\n    {"id": 1,,}\n  ]\n}\n' >"$tmp/bad.json"
  run --backend=ref --case="$tmp/bad.json" b1hq2sq8d8
  [ "$rc" -eq 3 ] || fail "malformed: exit code $rc, expected 3"
  grep -qF "$tmp/bad.json: error: malformed JSON at line 3, column 14: syntax error" "$tmp/out" || fail "no position"
  grep -qE "^0:INVALID_ARGUMENTS \(.*bad.json: error: malformed JSON" "$tmp/out" || fail "no INVALID_ARGUMENTS line"
  [ "$(summary_field passed)" = 1 ] || fail "the good case must still PASS"
  # Not an SDPA graph.
  printf '{"graph": [{"id": 1, "name": "relu", "kind": "ReLU", "inputs": [{"id": 0, "dtype": "f32", "shape": [2]}], "outputs": [{"id": 2, "dtype": "f32", "shape": [2]}]}]}\n' >"$tmp/relu.json"
  run --case="$tmp/relu.json"
  [ "$rc" -eq 3 ] || fail "non-SDPA: exit code $rc, expected 3"
  grep -qE "^0:INVALID_ARGUMENTS \(.*relu.json: error: not an SDPA training graph" "$tmp/out" || fail "non-SDPA not named"
  # An unsupported attribute in an SDPA graph: UNIMPLEMENTED naming the op (mode=none differs from
  # inf_as_zero only with a mask).
  run --mode=L --emit-onednn-json="$tmp/j" --mask=causal_tl b1hq2sq8d8
  sed 's/"inf_as_zero"/"none"/' "$tmp/j"/*.json >"$tmp/mode.json"
  run --case="$tmp/mode.json"
  [ "$rc" -eq 3 ] || fail "unsupported attr: exit code $rc, expected 3"
  grep -qE "^0:UNIMPLEMENTED \(.*op [0-9]+ \(SoftMax 'softmax'\): mode=none is not supported with a mask" "$tmp/out" || fail "op not named"
  [ "$(summary_field unimplemented)" = 1 ] || fail "expected one UNIMPLEMENTED"
  ;;
*) fail "unknown scenario" ;;
esac
echo "E2E OK ($scenario)"
