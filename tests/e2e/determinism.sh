#!/usr/bin/env bash
# --mode=B end to end: oneDNN runs twice bitwise equal on a few training cases (exit 0, all
# PASSED, repro keeps --mode=B); usage: determinism.sh EXE
set -euo pipefail
exe="$1"
out="$("$exe" --mode=B --dir=fwd_t,bwd --dt=f32,bf16 --mask=causal_br b1hq4hkv2sq65skv129d64)"
echo "$out"
grep -q '^tests:4 passed:4 ' <<<"$out"
[[ "$(grep -c '__REPRO: --mode=B ' <<<"$out")" -eq 4 ]]
