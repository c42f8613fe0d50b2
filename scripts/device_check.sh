#!/usr/bin/env bash
# The GPU check of the cuDNN backend, as one script for a machine with an NVIDIA GPU, nvcc, CMake
# and python3 with PyTorch (and its pip cuDNN), and no network. Under 8 minutes on an H200:
#   1. builds sdpabench with the cuDNN backend only (tests, oneDNN and the PyTorch plugin off);
#   2. runs cases/gpu/smoke.cases (fp8 and ragged included) in C mode: every status, the failures,
#      and what cuDNN wrote in fully masked and padded rows (the "observed:" lines of -v);
#   3. runs cases/gpu/perf.cases in P mode, warm and with --cold-cache;
#   4. times PyTorch's scaled_dot_product_attention on the same shapes with the cuDNN backend and
#      with the flash backend forced, fwd and bwd apart, warm and cold, and prints the table:
#      TFLOP/s of each, the ratio to sdpabench, and the percentage of the device's bf16 dense peak;
#   5. builds the PyTorch plugin against the machine's own torch package and runs
#      cases/torch/{conventions,conventions_cuda,smoke}.cases on torch:efficient, torch:cudnn, torch:flash:cuda and
#      torch:math:cuda (about 2 more minutes).
# Exit 0 only when the smoke run has no FAILED, INVALID_ARGUMENTS or SKIPPED case and something
# PASSED (an UNIMPLEMENTED case, a form cuDNN refuses with its message, is listed, not fatal), and
# the perf runs timed every case.
#
#   scripts/device_check.sh               run it (reports under $OUT, else build/device-check)
#   scripts/device_check.sh --torch-only  step 5 alone (the PyTorch CUDA rows)
#   scripts/device_check.sh --pack DIR    on the build machine: copy what the GPU machine lacks
#                                         (fmt, CLI11 and nlohmann-json headers with their CMake
#                                         files, the Boost.Math headers core/dropout.cpp includes,
#                                         the cuDNN frontend headers) into DIR (default
#                                         build/device-deps, about 10 MB), to carry along
# Through the device tool: run(command="bash scripts/device_check.sh", carry=["build/device-deps"],
# timeout_s=540), after `scripts/device_check.sh --pack build/device-deps` here.
# Environment: OUT (report folder), SDPABENCH_DEVICE_DEPS (a --pack folder), CUDAToolkit_ROOT,
# SDPABENCH_TORCH_ROOT (a torch package folder for step 5; default: python3's torch),
# SDPABENCH_CUDNN_ROOT (a cuDNN prefix; default: PyTorch's pip cuDNN, else the toolkit's).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
deps=${SDPABENCH_DEVICE_DEPS:-$root/build/device-deps}
frontend_pin=1.19.1

if [ "${1:-}" = "--pack" ]; then
  dest=${2:-$root/build/device-deps}
  set -e
  rm -rf "$dest"
  # The same prefix-relative tree as Debian's, so the packages' CMake files find their files.
  mkdir -p "$dest/include" "$dest/lib/x86_64-linux-gnu/cmake" "$dest/share/cmake"
  cp -r /usr/include/fmt /usr/include/CLI /usr/include/nlohmann "$dest/include/"
  # fmt's CMake targets check that libfmt exists; the build links fmt header-only all the same.
  cp -P /usr/lib/x86_64-linux-gnu/libfmt.so* "$dest/lib/x86_64-linux-gnu/"
  cp -r /usr/lib/x86_64-linux-gnu/cmake/fmt "$dest/lib/x86_64-linux-gnu/cmake/"
  cp -r /usr/share/cmake/CLI11 /usr/share/cmake/nlohmann_json "$dest/share/cmake/"
  # Boost.Math: exactly the headers the binomial distribution pulls in (about 4 MB of Boost's 160).
  echo '#include <boost/math/distributions/binomial.hpp>' | g++ -std=c++20 -x c++ -M - |
    tr ' \\' '\n\n' | grep '^/usr/include/boost/' | sort -u |
    while read -r h; do mkdir -p "$dest/include/$(dirname "${h#/usr/include/}")"; cp "$h" "$dest/include/${h#/usr/include/}"; done
  fe=${SDPABENCH_CUDNN_FRONTEND_ROOT:-/opt/sdpabench-deps/cudnn-frontend-$frontend_pin}
  mkdir -p "$dest/cudnn-frontend"
  cp -r "$fe/include" "$dest/cudnn-frontend/"
  du -sh "$dest"
  exit 0
fi

only_torch=0
[ "${1:-}" = "--torch-only" ] && only_torch=1
out=${OUT:-$root/build/device-check}
mkdir -p "$out"
t0=$(date +%s)
log() { echo "[device_check +$(( $(date +%s) - t0 ))s] $*" | tee -a "$out/device_check.log"; }
verdict=0

log "GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | head -n 1)"
log "python: $(python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())' 2>&1 | tail -n 1)"

# --- cuDNN: PyTorch's pip cuDNN unless one is named (review: the toolkit may have none).
cudnn_root=${SDPABENCH_CUDNN_ROOT:-$(python3 -c 'import nvidia.cudnn, os; print(os.path.dirname(nvidia.cudnn.__file__))' 2>/dev/null)}
if [ -n "$cudnn_root" ] && [ -f "$cudnn_root/include/cudnn_version.h" ]; then
  log "cuDNN: $cudnn_root ($(grep -E 'define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ' "$cudnn_root/include/cudnn_version.h" | awk '{printf "%s.", $3}' | sed 's/\.$//'))"
  export LD_LIBRARY_PATH="$cudnn_root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  cudnn_root=""
  log "cuDNN: no pip cuDNN with headers; using the toolkit's (cmake/cudnn.cmake)"
fi
# The frontend dlopens one libcudart (12 or 13), and cuDNN's engines dlopen libnvrtc: both from
# the toolkit's library folder.
for d in "${CUDAToolkit_ROOT:-/usr/local/cuda}/lib64" "${CUDAToolkit_ROOT:-/usr/local/cuda}/lib"; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
done

# summary FILE FIELD: the count after FIELD: in FILE's summary line.
summary() { grep -E '^tests:' "$1" | tail -n 1 | grep -oE "(^| )$2:[0-9]+" | cut -d: -f2; }

# --- 1. Build (the sdpabench target only).
cmake_args=(-S "$root" -B "$root/build/device" -DCMAKE_BUILD_TYPE=Release -DSDPABENCH_TESTS=OFF
  -DSDPABENCH_ONEDNN=OFF -DSDPABENCH_TORCH=OFF -DSDPABENCH_CUDNN=ON -DSDPABENCH_FMT_HEADER_ONLY=ON -DSDPABENCH_STORE=OFF)
command -v ninja >/dev/null && cmake_args+=(-G Ninja)
[ -n "$cudnn_root" ] && cmake_args+=(-DSDPABENCH_CUDNN_ROOT="$cudnn_root")
if [ -d "$deps/share/cmake" ]; then  # a carried --pack folder
  cmake_args+=(-DCMAKE_PREFIX_PATH="$deps" -Dfmt_DIR="$deps/lib/x86_64-linux-gnu/cmake/fmt"
    -DCLI11_DIR="$deps/share/cmake/CLI11" -Dnlohmann_json_DIR="$deps/share/cmake/nlohmann_json")
fi
if [ -n "${SDPABENCH_CUDNN_FRONTEND_ROOT:-}" ]; then
  cmake_args+=(-DSDPABENCH_CUDNN_FRONTEND_ROOT="$SDPABENCH_CUDNN_FRONTEND_ROOT")
elif [ -f "$deps/cudnn-frontend/include/cudnn_frontend.h" ]; then
  cmake_args+=(-DSDPABENCH_CUDNN_FRONTEND_ROOT="$deps/cudnn-frontend")
fi
smoke_rc="not run"
if [ "$only_torch" != 1 ]; then
log "configure: cmake ${cmake_args[*]}"
if ! timeout 60 cmake "${cmake_args[@]}" >"$out/configure.log" 2>&1; then
  log "configure failed"; tail -n 30 "$out/configure.log"; exit 1
fi
if ! timeout 300 cmake --build "$root/build/device" --target sdpabench -j "$(nproc)" >"$out/build.log" 2>&1; then
  log "build failed"; tail -n 30 "$out/build.log"; exit 1
fi
exe=$root/build/device/sdpabench
"$exe" --version | tee "$out/version.txt"
log "built"


# --- 2. Correctness: the GPU smoke set (a FAILED case is rerun alone in a fresh process by the
# driver itself, so a device fault left by an earlier case shows as such).
timeout 330 "$exe" -v --backend=cudnn --report=jsonl:"$out/smoke.jsonl" --batch="$root/cases/gpu/smoke.cases" \
  >"$out/smoke.txt" 2>&1
smoke_rc=$?
tests=$(summary "$out/smoke.txt" tests); passed=$(summary "$out/smoke.txt" passed)
skipped=$(summary "$out/smoke.txt" skipped); failed=$(summary "$out/smoke.txt" failed)
invalid=$(summary "$out/smoke.txt" invalid_arguments)
log "smoke: exit $smoke_rc; $(grep -E '^tests:' "$out/smoke.txt" | tail -n 1)"
echo "--- smoke: every case that did not PASS"
grep -E '^[0-9]+:(FAILED|UNIMPLEMENTED|SKIPPED|INVALID_ARGUMENTS|MISTRUSTED)' "$out/smoke.txt" | cut -c1-400
echo "--- smoke: what cuDNN wrote in fully masked and padded rows (compare/compare.hpp observed_masked_rows)"
grep -E '^ +(fwd: )?observed:' "$out/smoke.txt" | sort | uniq -c | sort -rn | head -n 12
echo "--- smoke: cuDNN plans used"
grep -oE 'cuDNN plan: [^ ]+' "$out/smoke.txt" | sort | uniq -c | sort -rn | head -n 8
if [ -z "$tests" ] || [ "${passed:-0}" -eq 0 ] || [ "${skipped:-0}" -gt 0 ] || [ "${failed:-0}" -gt 0 ] ||
    [ "${invalid:-0}" -gt 0 ]; then
  log "smoke: NOT clean (exit $smoke_rc, passed ${passed:-?} of ${tests:-?}, failed ${failed:-?}, skipped ${skipped:-?})"
  verdict=1
fi

# --- 3. Performance: P mode, warm and cold (L2 flushed before every timed run).
for mode in warm cold; do
  extra=()
  [ "$mode" = cold ] && extra=(--cold-cache)
  timeout 150 "$exe" --backend=cudnn --mode=P --max-ms-per-case=800 --min-runs=10 "${extra[@]}" \
    --report=jsonl:"$out/perf-$mode.jsonl" --batch="$root/cases/gpu/perf.cases" >"$out/perf-$mode.txt" 2>&1
  rc=$?
  log "perf ($mode): exit $rc; $(grep -E '^tests:' "$out/perf-$mode.txt" | tail -n 1)"
  [ "$rc" -eq 0 ] && [ "$(summary "$out/perf-$mode.txt" executed)" = "$(summary "$out/perf-$mode.txt" tests)" ] || verdict=1
done

# --- 4. PyTorch on the same shapes (its cuDNN and flash backends), and the table.
timeout 200 python3 - "$out" <<'PY' 2>&1 | tee "$out/table.txt"
import json, statistics, sys
out = sys.argv[1]
import torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend

def records(path):
    try:
        return [json.loads(l) for l in open(path) if l.strip()]
    except FileNotFoundError:
        return []

# sdpabench's P-mode results: one record per case, after the run-context record.
ours = {}
for mode in ("warm", "cold"):
    for r in records(f"{out}/perf-{mode}.jsonl"):
        if r.get("status") != "EXECUTED":
            continue
        perf = r.get("perf") or {}
        ours[(r["name"], r["dir"], mode)] = dict(ms=perf.get("median_ms"), flops=r.get("flops"),
                                                 peak=perf.get("peak_tflops"), prb=r.get("prb"))

flush = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")  # > 2x the H200's 60 MB L2

def time_ms(fn, cold, reps=15):
    fn(); fn(); torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        if cold:
            flush.zero_()
        # The GPU waits ~1 ms while Python enqueues fn: the events time the kernels, not the
        # launch overhead (the same gate sdpabench's EventTimer uses, backends/cuda/cuda_runtime.hpp).
        torch.cuda._sleep(2_000_000)
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)

def shape(prb):  # "b2hq32hkv8sq2048d128"
    import re
    m = re.fullmatch(r"b(\d+)hq(\d+)hkv(\d+)sq(\d+)d(\d+)", prb)
    return tuple(map(int, m.groups()))

rows = []
names = sorted({(n, v["prb"]) for (n, d, m), v in ours.items()})
for name, prb in names:
    B, Hq, Hkv, S, D = shape(prb)
    g = torch.Generator(device="cuda").manual_seed(1)
    mk = lambda h: torch.randn(B, h, S, D, device="cuda", dtype=torch.bfloat16, generator=g)
    q, k, v, do = mk(Hq).requires_grad_(), mk(Hkv).requires_grad_(), mk(Hkv).requires_grad_(), mk(Hq)
    for label, backend in (("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)):
        note = "enable_gqa"
        def fwd():
            with sdpa_kernel(backend):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        for mode in ("warm", "cold"):
            cold = mode == "cold"
            try:  # a backend PyTorch refuses for this shape is a line, not the end of the table
                t_f = time_ms(lambda: fwd(), cold)
                o = fwd()
                t_b = time_ms(lambda: torch.autograd.grad(o, (q, k, v), do, retain_graph=True), cold)
            except Exception as e:
                print(f"{name}: torch {label} ({mode}): {type(e).__name__}: {(str(e).splitlines() or [''])[0][:160]}")
                break
            for d, t in (("fwd_t", t_f), ("bwd", t_b)):
                us = ours.get((name, d, mode))
                if not us or not us["ms"]:
                    continue
                tf = lambda ms: us["flops"] / (ms * 1e-3) / 1e12
                rows.append(dict(case=name, dir=d, cache=mode, torch_backend=label, torch_ms=t, sdpabench_ms=us["ms"],
                                 torch_tflops=tf(t), sdpabench_tflops=tf(us["ms"]), ratio=t / us["ms"],
                                 pct_peak=100 * tf(us["ms"]) / us["peak"] if us["peak"] else None, torch_note=note))
    del q, k, v, do
    torch.cuda.empty_cache()

print("| case | dir | L2 | sdpabench TFLOP/s | % of bf16 peak | torch backend | torch TFLOP/s | torch ms / sdpabench ms |")
print("|---|---|---|---|---|---|---|---|")
for r in rows:
    pct = f"{r['pct_peak']:.1f}" if r["pct_peak"] is not None else "?"
    print(f"| {r['case']} | {r['dir']} | {r['cache']} | {r['sdpabench_tflops']:.1f} | {pct} | {r['torch_backend']} | "
          f"{r['torch_tflops']:.1f} | {r['ratio']:.3f} |")
json.dump(rows, open(f"{out}/comparison.json", "w"), indent=1)
PY
fi  # steps 1-4
# --- 5. PyTorch's CUDA variants (docs/torch.md): the plugin built against this machine's own torch
# package (its libtorch_cuda.so and NVIDIA's pip libraries, the layout scripts/setup.sh installs),
# then cases/torch/conventions.cases and cases/torch/smoke.cases on each CUDA row: the status
# counts, every FAILED line and what each variant wrote in fully masked rows. Not fatal to the
# verdict unless a case FAILED or a row was SKIPPED (the plugin found no GPU).
torch_step() {
  if [ $(( $(date +%s) - t0 )) -gt 380 ]; then
    log "torch: not run (too little of the check's time is left to build the plugin): rerun with --torch-only"
    return 0
  fi
  local torch_root
  torch_root=${SDPABENCH_TORCH_ROOT:-$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))' 2>/dev/null)}
  [ -n "$torch_root" ] || { log "torch: no PyTorch for python3 here; the CUDA rows are not checked"; return 0; }
  # cmake_args without its -S/-B pair; the later -D settings win.
  if ! timeout 60 cmake -S "$root" -B "$root/build/device-torch" "${cmake_args[@]:4}" -DSDPABENCH_TORCH=ON \
      -DSDPABENCH_CUDNN=OFF -DSDPABENCH_TORCH_ROOT="$torch_root" >"$out/torch-configure.log" 2>&1 ||
     ! timeout 150 cmake --build "$root/build/device-torch" --target sdpabench sdpabench_torch -j "$(nproc)" \
      >"$out/torch-build.log" 2>&1; then
    log "torch: the plugin did not build against $torch_root"; tail -n 20 "$out/torch-configure.log" "$out/torch-build.log"
    verdict=1; return 0
  fi
  local texe=$root/build/device-torch/sdpabench
  "$texe" --version | grep '^torch:' | tee -a "$out/version.txt"
  for v in efficient cudnn flash:cuda math:cuda; do
    for f in conventions conventions_cuda smoke; do
      local o="$out/torch-${v/:/-}-$f.txt"
      if [ $(( $(date +%s) - t0 )) -gt 450 ]; then log "torch:$v $f: not run (the check's time is spent)"; continue; fi
      timeout 45 "$texe" -v --backend=torch:$v --batch="$root/cases/torch/$f.cases" >"$o" 2>&1
      log "torch:$v $f: exit $?; $(grep -E '^tests:' "$o" | tail -n 1)"
      grep -E '^[0-9]+:(FAILED|SKIPPED|INVALID_ARGUMENTS|MISTRUSTED)' "$o" | cut -c1-300 | head -n 15
      grep -oE 'PyTorch returned its log-sum-exp as [^;]*' "$o" | sort | uniq -c | head -n 3
      grep -E '^ +(fwd: )?observed:' "$o" | sort | uniq -c | sort -rn | head -n 4
      [ "$(summary "$o" failed)" = 0 ] && [ "$(summary "$o" skipped)" = 0 ] || verdict=1
    done
  done
}
torch_step

log "done (smoke exit $smoke_rc; verdict $verdict); reports in $out"
exit "$verdict"
