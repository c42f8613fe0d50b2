#!/usr/bin/env bash
# Timer overhead: sdpabench's median time per run for a oneDNN case next to a bare loop around
# the same compiled partitions, and their ratio (target <= 1.02). Builds the benchmark program
# (scripts/bench/bench_overhead.cpp, CMake target sdpabench_bench_overhead) first.
# Usage: scripts/bench_overhead.sh [ROUNDS RUNS] [CASE_TOKENS...]
#   default: 5 rounds x 50 runs of --dt=bf16 --mask=causal_tl b1hq16sq512d64
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
[ -f build/release/build.ninja ] || cmake --preset release >/dev/null
cmake --build --preset release --target sdpabench_bench_overhead >/dev/null
args=("$@")
[ ${#args[@]} -gt 0 ] || args=(5 50 --dt=bf16 --mask=causal_tl b1hq16sq512d64)
exec build/release/sdpabench_bench_overhead "${args[@]}"
