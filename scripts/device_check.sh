#!/usr/bin/env bash
# One short check of the cuDNN backend on a machine with an NVIDIA GPU (nvcc, cmake, python3 with
# torch; no network). Under 8 minutes: builds sdpabench with the cuDNN backend only (oneDNN off),
# runs cases/gpu/smoke.cases in C mode and cases/gpu/perf.cases in P mode, times PyTorch's
# scaled_dot_product_attention with the cuDNN backend forced on the same shapes (fwd and fwd+bwd),
# and prints sdpabench TFLOP/s vs PyTorch TFLOP/s and their ratio.
#
#   scripts/device_check.sh               run the check (reports under $OUT, else build/device-check)
#   scripts/device_check.sh --pack DIR    on a build machine: copy what the build needs and the GPU
#                                         machine may lack (fmt, CLI11, nlohmann-json, the cuDNN
#                                         frontend headers) into DIR, to carry along (a few MB)
# Environment: OUT (report folder), SDPABENCH_DEVICE_DEPS (a --pack folder; default
# build/device-deps), SDPABENCH_CUDNN_FRONTEND_ROOT (frontend prefix; default: the pack's, else
# /opt/sdpabench-deps/cudnn-frontend-1.19.1), CUDAToolkit_ROOT (default: CMake's search).
#
# Timings come from P mode's JSON Lines report (--mode=P --report=jsonl:PATH: "perf"."min_ms").
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
deps=${SDPABENCH_DEVICE_DEPS:-$root/build/device-deps}
frontend_pin=1.19.1

if [ "${1:-}" = "--pack" ]; then
  dest=${2:?usage: device_check.sh --pack DIR}
  # The same prefix-relative tree as Debian's, so the packages' CMake files find their files.
  mkdir -p "$dest/include" "$dest/lib/x86_64-linux-gnu/cmake" "$dest/share/cmake"
  cp -r /usr/include/fmt /usr/include/CLI /usr/include/nlohmann "$dest/include/"
  cp -P /usr/lib/x86_64-linux-gnu/libfmt.so* "$dest/lib/x86_64-linux-gnu/"
  cp -r /usr/lib/x86_64-linux-gnu/cmake/fmt "$dest/lib/x86_64-linux-gnu/cmake/"
  cp -r /usr/share/cmake/CLI11 /usr/share/cmake/nlohmann_json "$dest/share/cmake/"
  fe=${SDPABENCH_CUDNN_FRONTEND_ROOT:-/opt/sdpabench-deps/cudnn-frontend-$frontend_pin}
  mkdir -p "$dest/cudnn-frontend"
  cp -r "$fe/include" "$dest/cudnn-frontend/"
  du -sh "$dest"
  exit 0
fi

out=${OUT:-$root/build/device-check}
mkdir -p "$out"
log() { echo "[device_check $(date +%H:%M:%S)] $*" | tee -a "$out/device_check.log"; }
t0=$(date +%s)

log "GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 1)"

# --- Build (cuDNN backend only; tests off: GoogleTest and oneDNN are not needed here).
cmake_args=(-S "$root" -B "$root/build/device" -DCMAKE_BUILD_TYPE=Release -DSDPABENCH_TESTS=OFF
  -DSDPABENCH_ONEDNN=OFF -DSDPABENCH_CUDNN=ON)
if command -v ninja >/dev/null; then cmake_args+=(-G Ninja); fi
if [ -d "$deps/share/cmake" ]; then
  # A carried pack (--pack): its headers and libfmt through the packages' own CMake files.
  cmake_args+=(-Dfmt_DIR="$deps/lib/x86_64-linux-gnu/cmake/fmt" -DCLI11_DIR="$deps/share/cmake/CLI11"
    -Dnlohmann_json_DIR="$deps/share/cmake/nlohmann_json")
fi
if [ -n "${SDPABENCH_CUDNN_FRONTEND_ROOT:-}" ]; then
  cmake_args+=(-DSDPABENCH_CUDNN_FRONTEND_ROOT="$SDPABENCH_CUDNN_FRONTEND_ROOT")
elif [ -f "$deps/cudnn-frontend/include/cudnn_frontend.h" ]; then
  cmake_args+=(-DSDPABENCH_CUDNN_FRONTEND_ROOT="$deps/cudnn-frontend")
fi
log "configure: cmake ${cmake_args[*]}"
timeout 30 cmake "${cmake_args[@]}" >"$out/configure.log" 2>&1 || { log "configure failed"; tail -n 30 "$out/configure.log"; exit 1; }
timeout 200 cmake --build "$root/build/device" -j "$(nproc)" >"$out/build.log" 2>&1 || { log "build failed"; tail -n 30 "$out/build.log"; exit 1; }
exe=$root/build/device/sdpabench
"$exe" --version | tee "$out/version.txt"
log "built in $(( $(date +%s) - t0 )) s"

# --- Correctness: the GPU smoke set in C mode (exit 0 expected: everything PASSED).
set +e
timeout 90 "$exe" -v --backend=cudnn --mode=C --batch="$root/cases/gpu/smoke.cases" >"$out/smoke.txt" 2>&1
smoke_rc=$?
timeout 60 "$exe" -v --backend=cudnn --mode=C --dir=fwd_t,bwd,fwd_bwd --dt=bf16 --mask=none,causal_tl --dropout=0:1:1,0.1:7:3 b2hq4hkv2sq128skv96d64n=dropout_mask_mode >>"$out/smoke.txt" 2>&1 || smoke_rc=1  # dropout (cuDNN caller-supplied mask): its summary line joins the smoke lines below
set -e
grep -E '^(tests:|[0-9]+:(FAILED|UNIMPLEMENTED|SKIPPED|INVALID))' "$out/smoke.txt" | tail -n 25
log "smoke exit code $smoke_rc"

# --- Performance: P mode with a JSON Lines report.
set +e
timeout 60 "$exe" --backend=cudnn --mode=P --report=jsonl:"$out/perf.jsonl" --batch="$root/cases/gpu/perf.cases" >"$out/perf.txt" 2>&1
perf_rc=$?
set -e
tail -n 12 "$out/perf.txt"
log "perf exit code $perf_rc"

# --- PyTorch's cuDNN attention on the same shapes, then the comparison table.
timeout 90 python3 - "$root/cases/gpu/perf.cases" "$out/perf.jsonl" "$out" <<'PY' 2>&1 | tee "$out/table.txt"
import json, re, sys, statistics
cases_file, jsonl, out = sys.argv[1], sys.argv[2], sys.argv[3]
import torch
import torch.nn.functional as F
from torch.nn.attention import sdpa_kernel, SDPBackend

def shapes():
    """(name, B, Hq, Hkv, S, D) from the descriptors of the perf case file."""
    for line in open(cases_file):
        line = line.split('#')[0]
        for tok in line.split():
            m = re.fullmatch(r'b(\d+)hq(\d+)hkv(\d+)sq(\d+)d(\d+)n=(\S+)', tok)
            if m:
                b, hq, hkv, s, d = map(int, m.groups()[:5])
                yield m.group(6), b, hq, hkv, s, d

def causal_flops(b, hq, s, d):
    n = b * hq * s * (s + 1) // 2  # visible scores of a causal square (cuDNN's convention)
    return 4 * n * d, 10 * n * d    # fwd 2*N*(Dqk+Dv), bwd 2*N*(3*Dqk+2*Dv)

def time_ms(fn, warm=3, reps=10):
    for _ in range(warm): fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); fn(); b.record(); b.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)

torch_res = {}
for name, b, hq, hkv, s, d in shapes():
    dev, dt = 'cuda', torch.bfloat16
    q = torch.randn(b, hq, s, d, device=dev, dtype=dt, requires_grad=True)
    k = torch.randn(b, hkv, s, d, device=dev, dtype=dt, requires_grad=True)
    v = torch.randn(b, hkv, s, d, device=dev, dtype=dt, requires_grad=True)
    do = torch.randn(b, hq, s, d, device=dev, dtype=dt)
    gqa = 'enable_gqa'
    def attn():
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
    try:
        attn()
    except Exception as e:  # cuDNN path without GQA support: expand K/V (same FLOPs)
        gqa = 'expanded K/V'
        k = k.detach().repeat_interleave(hq // hkv, dim=1).requires_grad_()
        v = v.detach().repeat_interleave(hq // hkv, dim=1).requires_grad_()
        def attn():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)
    fwd_ms = time_ms(lambda: attn())
    def fb():
        q.grad = k.grad = v.grad = None
        attn().backward(do)
    fb_ms = time_ms(fb)
    torch_res[name] = (fwd_ms, fb_ms, gqa, (b, hq, s, d))
    del q, k, v, do
    torch.cuda.empty_cache()

# sdpabench P-mode records: one JSON object per line. Field names are read defensively: the
# case name from "name" or the n= of "repro"/"problem", the direction from "dir" or --dir=, the
# median time ("perf"."median_ms"), compared with PyTorch's median.
def field(rec, keys):
    for k in keys:
        if k in rec and rec[k] is not None: return rec[k]
        for sub in ('perf', 'timing', 'time'):
            if isinstance(rec.get(sub), dict) and rec[sub].get(k) is not None: return rec[sub][k]
    return None
sdpa = {}
try:
    for line in open(jsonl):
        rec = json.loads(line)
        text = ' '.join(str(rec.get(k, '')) for k in ('repro', 'problem', 'case'))
        name = rec.get('name') or (re.search(r'n=(\S+)', text) or [None, None])[1]
        d = rec.get('dir') or (re.search(r'--dir=(\w+)', text) or [None, 'fwd_t'])[1]
        ms = field(rec, ('median_ms',))  # the median, like the PyTorch timing above
        if name and ms: sdpa[(name, d)] = float(ms)
except FileNotFoundError:
    print(f'no {jsonl}: P mode did not write a report')

rows = []
print(f"{'case':<18} {'pass':<8} {'sdpabench TFLOP/s':>18} {'PyTorch TFLOP/s':>16} {'ratio':>7}  note")
for name, (fwd_ms, fb_ms, gqa, (b, hq, s, d)) in torch_res.items():
    ff, fbw = causal_flops(b, hq, s, d)
    ours_f = sdpa.get((name, 'fwd_t'))
    ours_b = sdpa.get((name, 'bwd'))
    for label, fl, t_ms, o_ms in (('fwd', ff, fwd_ms, ours_f), ('fwd+bwd', ff + fbw, fb_ms, (ours_f + ours_b) if ours_f and ours_b else None)):
        pt = fl / (t_ms * 1e-3) / 1e12
        us = fl / (o_ms * 1e-3) / 1e12 if o_ms else float('nan')
        ratio = us / pt if o_ms else float('nan')
        rows.append(dict(case=name, pass_=label, sdpabench_tflops=us if o_ms else None, torch_tflops=pt,
                         ratio=ratio if o_ms else None, torch_ms=t_ms, sdpabench_ms=o_ms, torch_gqa=gqa))
        print(f"{name:<18} {label:<8} {us:>18.1f} {pt:>16.1f} {ratio:>7.3f}  torch {gqa}")
with open(f'{out}/comparison.json', 'w') as f:
    json.dump(rows, f, indent=1)
PY
log "done in $(( $(date +%s) - t0 )) s (smoke exit $smoke_rc, perf exit $perf_rc); reports in $out"
[ "$smoke_rc" -eq 0 ]
