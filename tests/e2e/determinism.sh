#!/usr/bin/env bash
# --mode=B end to end: oneDNN runs twice bitwise equal on a few training cases (exit 0, PASSED,
# repro keeps --mode=B); bf16 may be SKIPPED on a CPU without bf16 kernels (its reason names the
# ISA); usage: determinism.sh EXE
set -euo pipefail
exe="$1"
out="$("$exe" --mode=B --dir=fwd_t,bwd --dt=f32,bf16 --mask=causal_br b1hq4hkv2sq65skv129d64)"
echo "$out"
[[ "$(grep -cE '^[0-9]+:PASSED .*__REPRO: --mode=B (--dir=bwd )?--mask=causal_br ' <<<"$out")" -eq 2 ]]  # f32
[[ "$(grep -cE '^[0-9]+:(PASSED|SKIPPED \(bf16 needs [^)]*\)) .*__REPRO: --mode=B ' <<<"$out")" -eq 4 ]]
grep -qE '^tests:4 .* failed:0 ' <<<"$out"
