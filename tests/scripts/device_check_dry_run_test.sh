#!/usr/bin/env bash
# scripts/device_check.sh on a CPU machine, against stub layouts of the GPU machine's Python packages
# made in a temporary folder: the pip cuDNN probe finds a cu13-style cuDNN wheel (nvidia/cudnn with
# include/ and lib/ but no __init__.py: a namespace package), falls back to the folder next to the
# torch package, and says why when there is none; then `--pack` and `--dry-run` (everything before
# the device probe: the probe, the packed folder, one configure with the cuDNN backend and the
# PyTorch plugin) must take that cuDNN, leave at most 4 files in $OUT and a tarball of the reports;
# and every Boost, fmt, CLI11 and nlohmann-json header of every translation unit of that
# configuration must come from the pack (a planted Boost include the pack lacks fails the check).
# With SDPABENCH_EXE, also: scripts/device_check_table.py reads a real P-mode JSONL report (the fields
# and the shape names its table joins on). Skips (77) where this machine has no CUDA Toolkit with
# cuDNN 9 to copy the stub's library from.
# Usage: device_check_dry_run_test.sh SOURCE_DIR [SDPABENCH_EXE]
set -uo pipefail
src=$1 exe=${2:-}
script=$src/scripts/device_check.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL (device_check dry run): $*"; for f in "$tmp/probe.err" "$tmp/dry.out"; do [ -s "$f" ] && tail -n 30 "$f"; done; exit 1; }

cuda=${CUDAToolkit_ROOT:-/usr/local/cuda}
inc=$cuda/include lib=""
for d in "$cuda/lib64" "$cuda/lib"; do [ -f "$d/libcudnn.so.9" ] && lib=$d && break; done
if [ ! -f "$inc/cudnn_version.h" ] || [ -z "$lib" ] || ! command -v cmake >/dev/null; then
  echo "SKIP: no CUDA Toolkit with cuDNN 9 at $cuda (cudnn_version.h, libcudnn.so.9) to stub the pip wheel with"
  exit 77
fi

# stub_cudnn DIR: DIR/nvidia/cudnn as the nvidia-cudnn-cu13 wheel lays it out: include/ and
# lib/libcudnn.so.9, and no __init__.py in nvidia/ or nvidia/cudnn/ (the library copied, so that its
# real path is the stub's: cmake/cudnn.cmake names the folder it took).
stub_cudnn() {
  mkdir -p "$1/nvidia/cudnn/lib"
  ln -s "$inc" "$1/nvidia/cudnn/include"
  cp "$lib/libcudnn.so.9" "$1/nvidia/cudnn/lib/"
}
probe() {  # PYTHONPATH: what --probe-cudnn prints
  PYTHONPATH=$1 bash "$script" --probe-cudnn 2>"$tmp/probe.err"
}

# 1. The namespace package: nvidia.cudnn.__file__ is None, its __path__ names the folder.
stub_cudnn "$tmp/ns"
python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import nvidia.cudnn as m; assert m.__file__ is None, m.__file__' \
  "$tmp/ns" || fail "the stub is not a namespace package"
got=$(probe "$tmp/ns")
[ "$got" = "$tmp/ns/nvidia/cudnn" ] || fail "probe of a namespace-package cuDNN: got '$got', expected $tmp/ns/nvidia/cudnn"

# 2. A regular package 'nvidia' without cudnn earlier on the path: the folder next to torch.
mkdir -p "$tmp/shadow/nvidia" "$tmp/tw/torch"
touch "$tmp/shadow/nvidia/__init__.py" "$tmp/tw/torch/__init__.py"
stub_cudnn "$tmp/tw"
got=$(probe "$tmp/shadow:$tmp/tw")
[ "$got" = "$tmp/tw/nvidia/cudnn" ] || fail "fallback next to torch: got '$got', expected $tmp/tw/nvidia/cudnn"
grep -q 'import nvidia.cudnn: ModuleNotFoundError' "$tmp/probe.err" || fail "the probe must say why nvidia.cudnn failed"

# 3. Neither (unless this machine's own Python has one): nothing printed, exit 1, the reason on stderr.
mkdir -p "$tmp/empty"
if ! python3 -c 'import nvidia.cudnn' 2>/dev/null && ! python3 -c 'import torch' 2>/dev/null; then
  got=$(probe "$tmp/empty") && fail "a probe that found nothing must exit 1 (printed '$got')"
  [ -z "$got" ] || fail "a probe that found nothing printed '$got'"
  grep -q 'no torch package for python3' "$tmp/probe.err" || fail "the probe must say there is no torch"
fi

# 4. --pack, then --dry-run with the namespace stub: the configure takes the stub's cuDNN (a
#    toolkit's unversioned libcudnn.so must not win over the wheel's libcudnn.so.9), at most 4
#    files come back, the reports tarball holds the configure log.
bash "$script" --pack "$tmp/deps" >"$tmp/pack.out" 2>&1 || { cat "$tmp/pack.out"; fail "--pack: exit $?"; }
torch_root=/opt/sdpabench-deps/torch-2.15.0/torch
[ -f "$torch_root/lib/libtorch_cpu.so" ] || torch_root=""
OUT=$tmp/out SDPABENCH_DEVICE_WORK=$tmp/work SDPABENCH_DEVICE_DEPS=$tmp/deps PYTHONPATH=$tmp/ns \
  SDPABENCH_TORCH_ROOT=$torch_root bash "$script" --dry-run >"$tmp/dry.out" 2>&1
rc=$?
[ "$rc" -eq 0 ] || fail "--dry-run: exit $rc"
grep -qF "cuDNN: $tmp/ns/nvidia/cudnn (9." "$tmp/dry.out" || fail "--dry-run did not find the stub's pip cuDNN"
grep -qF "sdpabench: cuDNN 9." "$tmp/work/device-check/configure.log" &&
  grep -qF "($(realpath "$tmp/ns/nvidia/cudnn/lib"))" "$tmp/work/device-check/configure.log" ||
  fail "the configure did not take the stub's cuDNN: $(grep 'sdpabench: cuDNN' "$tmp/work/device-check/configure.log")"
grep -q 'pack: every Boost, fmt, CLI11 and nlohmann-json header of the build comes from' "$tmp/dry.out" ||
  fail "the pack does not carry every header the device build needs"
grep -q 'SDPABENCH_TORCH_WITH_EXE:BOOL=OFF' "$tmp/work/device/CMakeCache.txt" ||
  fail "the device build must leave the PyTorch plugin to its own step (SDPABENCH_TORCH_WITH_EXE=OFF)"
# The pack check is real: a translation unit with a Boost header the pack does not carry fails it,
# naming the header (a planted include, as a source that gained one after the pack was made).
printf '#include <boost/algorithm/string/trim.hpp>\nint main() {}\n' >"$tmp/planted.cpp"
bash "$script" --check-pack "$tmp/deps" "$tmp/work/device/compile_commands.json" "$tmp/planted.cpp" >"$tmp/planted.out" 2>&1 &&
  fail "--check-pack passed a translation unit with a Boost header the pack lacks"
grep -q 'boost/algorithm/string/trim.hpp (needed by' "$tmp/planted.out" || fail "--check-pack must name the missing header: $(head -n 3 "$tmp/planted.out")"
bash "$script" --check-pack "$tmp/deps" "$tmp/work/device/compile_commands.json" >"$tmp/pack-check.out" 2>&1 ||
  fail "--check-pack fails on main: $(head -n 5 "$tmp/pack-check.out")"
grep -qE 'check_pack: [0-9]{2,} translation unit\(s\), 0 header\(s\)' "$tmp/pack-check.out" || fail "--check-pack checked too few units"
# --from names a step, or is refused before anything runs.
bash "$script" --dry-run --from=nope >"$tmp/from.out" 2>&1; rc=$?
[ "$rc" -eq 2 ] && grep -q -- '--from=nope: no such step (smoke torch perf table cold more)' "$tmp/from.out" || fail "--from=nope: exit $rc"
[ -z "$torch_root" ] || grep -q 'configured: cuDNN backend ON, PyTorch plugin ON' "$tmp/dry.out" ||
  fail "one build tree must configure the cuDNN backend and the PyTorch plugin together"
n=$(find "$tmp/out" -mindepth 1 | wc -l)
[ "$n" -le 4 ] || fail "$n files in OUT (at most 4): $(ls "$tmp/out")"
[ -f "$tmp/out/device_check.log" ] && [ -f "$tmp/out/reports.tgz" ] || fail "OUT lacks device_check.log or reports.tgz: $(ls "$tmp/out")"
# The listing first: grep -q stops reading at its match, and tar's SIGPIPE would fail the pipeline.
listing=$(tar -tzf "$tmp/out/reports.tgz")
grep -qx './configure.log' <<<"$listing" || fail "reports.tgz lacks configure.log: $listing"
grep -qx 'device_check.log' <<<"$listing" || fail "reports.tgz lacks device_check.log"

# 5. The table's reading of sdpabench's P-mode report: the executed cases by (name, dir), their
#    median time, FLOPs and shape (what it times PyTorch on).
if [ -n "$exe" ]; then
  "$exe" --no-progress --backend=ref --mode=P --fix-times=2 --dir=fwd_t,bwd --dt=bf16 --mask=causal_tl \
    --report=jsonl:"$tmp/perf-warm.jsonl" b1hq4hkv2sq64d32n=tiny >"$tmp/perf.out" 2>&1 || fail "P-mode run: exit $?"
  PYTHONDONTWRITEBYTECODE=1 python3 - "$src/scripts" "$tmp" <<'PY' || fail "device_check_table.py does not read the P-mode report"
import sys
sys.path.insert(0, sys.argv[1])
import device_check_table as t
us = t.ours(sys.argv[2], "warm")
assert set(us) == {("tiny", "fwd_t"), ("tiny", "bwd")}, us
for r in us.values():
    assert r["ms"] > 0 and r["flops"] > 0, r
    assert t.shape(r["prb"]) == (1, 4, 2, 64, 32), r["prb"]
assert t.ours(sys.argv[2], "cold") == {}
PY
fi
echo "OK (device_check dry run)"
