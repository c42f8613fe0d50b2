#!/usr/bin/env bash
# Prints the f32 reference's GFLOP/s (fwd, bwd) on Llama-3-8B-shaped heads (GQA group of 4,
# D = 128) at S = 1024, 2048, 4096, next to oneDNN's f32 matmul doing the same FLOPs, and the
# ratio. Extra arguments go to bench_ref (e.g. --seq=1024 --mask=none --reps=3 --no-matmul).
# Threads: OMP_NUM_THREADS for the reference (default: all cores); oneDNN's SYCL CPU engine
# uses all cores.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
preset=${SDPABENCH_PRESET:-release}
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" --target bench_ref >/dev/null
echo "# $(nproc) cores; load average: $(cut -d' ' -f1-3 /proc/loadavg)"
exec "build/$preset/bench_ref" "$@"
