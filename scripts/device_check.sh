#!/usr/bin/env bash
# The GPU check of the cuDNN backend and of PyTorch's CUDA rows, as one script for a machine with an
# NVIDIA GPU, nvcc, CMake >= 3.25 and python3 with PyTorch (and its pip cuDNN), and no network.
#
# Files under $OUT (default build/device-check-out): at most 4, the most valuable first:
#   device_check.log   each step's line with its time (also on stdout), and the final summary
#   smoke.txt          the cuDNN smoke's console output, file by file (fp8, ragged, core; each as its
#                      process ends: smoke-*.txt in reports.tgz grow case by case), the summed counts
#   reports.tgz        every report (the work folder's device-check/: configure and build logs,
#                      --version, JSONL reports, the torch rows' outputs, the PyTorch tables),
#                      rewritten after each step, so a run killed by its timeout still returns
#                      what was done
#   reports.tgz.part   only while reports.tgz is being rewritten (renamed over it when complete)
# stdout ends with a summary of at most ~10,000 characters (smoke statuses and the conventions
# cuDNN showed first), so a tool that keeps only the last 12,000 characters keeps all of it.
#
# One run, planned for the machine as it is (a device machine stays warm ~30 s after a command:
# there is no second run to fix things in). Each step has its own cap and runs only when its
# estimate fits in what is left of the budget (--budget, default 520 s); measured is what the
# same step took on this project's 2-core CPU machine (the dry run's configure; the build of the
# device configuration with the CPU compiler; the plugin's one translation unit; the smoke and
# conventions files' host side under the reference), planned the device's share on 16 cores:
#   step                                                         measured (2-core CPU)  planned (GPU host)
#   0. (no device) tools, PyTorch's pip cuDNN (a namespace package: found through
#      nvidia.cudnn.__path__, else next to the torch package), the torch package; configure ONE
#      build tree (cuDNN backend on, the plugin its own target); the pack check: every Boost,
#      fmt, CLI11 and nlohmann-json header of every translation unit from the --pack folder      5 s      10-20 s
#   1. build the sdpabench target (cudnn_backend.cpp is the critical path)                   201 s      60-120 s
#      then the PyTorch plugin (one TU against libtorch) in the background, niced,
#      while the cuDNN steps run; a plugin that fails costs the PyTorch rows only               8 s      10-40 s
#   2. smoke: cases/gpu/fp8.cases, ragged.cases, core.cases (160 cases; the newest forms
#      first), each in its own process in C mode with -v and --no-rerun-failed: every status,
#      what cuDNN wrote in masked and padded rows ("observed:"), a sticky CUDA error recorded
#      and confined to its file (measured: the host side alone, --backend=ref / test:fp8)     1.7 s     90-240 s
#   3. torch: cases/torch/conventions_cuda.cases on the four CUDA rows, one process
#      (measured: the same file on torch:math, the CPU row)                                   0.4 s      20-40 s
#   4. perf: cases/gpu/perf.cases in P mode, warm L2 (8 cases)                                      -      30-60 s
#   5. table: PyTorch on the same shapes (cuDNN and flash forced, warm), with its cuDNN
#      frontend's log (the plans PyTorch ran; scripts/device_check_table.py)                         -      20-40 s
#   6. cold: perf.cases with --cold-cache, then the table's cold pass                                -      45-75 s
#   7. more: cases/torch/conventions.cases and smoke.cases on the four CUDA rows                      -      45-120 s
# Planned: steps 0-5 take 4.5-8.5 minutes (the device's time goes to cuDNN's graph builds, about
# 194 in the smoke, and to loading CUDA, cuDNN and libtorch_cuda); 6 and 7 run only while the
# budget holds. The script ends within the budget plus ~10 s of packing. Measured with
# `scripts/device_check.sh --pack P && OUT=... SDPABENCH_DEVICE_DEPS=P scripts/device_check.sh
# --dry-run`, then `cmake --build build/device --target sdpabench` and `--target sdpabench_torch`
# (2026-12-06, Intel Xeon 2 cores, g++ 12, CUDA 13.0 headers, cuDNN 9.19.0, libtorch 2.15.0).
# Exit 0 when the smoke run has no FAILED, INVALID_ARGUMENTS or SKIPPED case and something PASSED
# (an UNIMPLEMENTED case, a form cuDNN refuses with its message, is listed, not fatal), perf warm
# timed every case and no torch conventions case FAILED or was SKIPPED; 1 when one of those
# failed (or the pack lacks a header); 3 when a step of 0-5 did not run or did not finish.
#
#   scripts/device_check.sh [--budget SECONDS] [--from=STEP]   run it; --from starts at STEP
#                                                (smoke torch perf table cold more), e.g. a later run
#                                                on the same build tree continues with --from=perf
#   scripts/device_check.sh --torch-only         steps 0, 1, 3 and 7 (the PyTorch CUDA rows)
#   scripts/device_check.sh --dry-run            step 0 and the packing only, no device needed:
#                                                catches probe, path, pack and configure errors on a
#                                                CPU machine (CTest scripts.device_check_dry_run)
#   scripts/device_check.sh --probe-cudnn        print the pip cuDNN prefix found (or nothing: exit 1)
#   scripts/device_check.sh --pack DIR           on the build machine: copy what the GPU machine
#                                                lacks (fmt, CLI11 and nlohmann-json headers with
#                                                their CMake files; the closure of every Boost header
#                                                the sources include, as g++ and clang++ need it;
#                                                the cuDNN frontend headers) into DIR
#                                                (default build/device-deps, about 12 MB)
#   scripts/device_check.sh --check-pack DIR COMPILE_COMMANDS [TU...]
#                                                every header the pack must carry comes from DIR for
#                                                each translation unit (exit 1 naming each that does not)
# Through the device tool, after `scripts/device_check.sh --pack build/device-deps` here:
#   run(command="bash scripts/device_check.sh", carry=["build/device-deps"], timeout_s=560)
# (about 1.5 min to start the machine + 9 min of run + 0.5 min idle: 11 of the 15 minutes, so one
# failed start still fits).
# Environment: OUT (the returned files), SDPABENCH_DEVICE_WORK (the build tree and reports;
# default build/), SDPABENCH_DEVICE_DEPS (a --pack folder), CUDAToolkit_ROOT, SDPABENCH_TORCH_ROOT
# (a torch package folder; default: python3's torch), SDPABENCH_CUDNN_ROOT (a cuDNN prefix;
# default: PyTorch's pip cuDNN, else the toolkit's).
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
deps=${SDPABENCH_DEVICE_DEPS:-$root/build/device-deps}
frontend_pin=1.19.1

# probe_cudnn: the prefix (include/cudnn_version.h, lib/) of PyTorch's pip cuDNN, or nothing; why it
# found none goes to stderr. The cu13 wheel has no nvidia/cudnn/__init__.py: nvidia.cudnn is a
# namespace package whose __file__ is None, so the folder comes from its __path__; else the folder
# next to the torch package (found without importing torch).
probe_cudnn() {
  python3 - <<'PY'
import importlib.util, os, sys
def has_headers(d):
    return bool(d) and os.path.isfile(os.path.join(d, "include", "cudnn_version.h"))
try:
    import nvidia.cudnn as m
    paths = list(m.__path__)
    for d in paths:
        if has_headers(d):
            print(d)
            sys.exit(0)
    print(f"nvidia.cudnn at {paths} has no include/cudnn_version.h", file=sys.stderr)
except Exception as e:
    print(f"import nvidia.cudnn: {type(e).__name__}: {e}", file=sys.stderr)
try:
    spec = importlib.util.find_spec("torch")
except Exception as e:
    spec = None
    print(f"find torch: {type(e).__name__}: {e}", file=sys.stderr)
if spec and spec.origin:
    d = os.path.normpath(os.path.join(os.path.dirname(spec.origin), "..", "nvidia", "cudnn"))
    if has_headers(d):
        print(d)
        sys.exit(0)
    print(f"no include/cudnn_version.h in {d} (next to torch)", file=sys.stderr)
else:
    print("no torch package for python3", file=sys.stderr)
sys.exit(1)
PY
}

# boost_includes: every Boost header the sources include (`#include <boost/...>` in the folders of
# the build, tests left out), one per line: what the pack must carry the closure of.
boost_includes() {
  (cd "$root" && git ls-files 2>/dev/null | grep -E '\.(cpp|hpp|h)$' | grep -v '^tests/' ||
     find core graph ref fillers compare backends reports driver -name '*.[ch]pp') |
    (cd "$root" && xargs grep -hoE '^[[:space:]]*#[[:space:]]*include[[:space:]]*<boost/[^>]+>') |
    grep -oE 'boost/[^>]+' | sort -u
}

# boost_deps COMPILER [FLAGS...]: the Boost headers the sources' Boost includes (boost_includes) need
# as COMPILER finds them (an -I folder first: a header a --pack folder lacks shows as /usr/...), and
# the compiler's "fatal error" line when one is found nowhere.
boost_deps() {
  local cxx=$1; shift
  boost_includes | sed 's|.*|#include <&>|' | "$cxx" -std=c++20 "$@" -x c++ -M - 2>&1 | tr ' \\' '\n\n' |
    grep -E '/boost/|fatal error'
}

# check_pack DEPS COMPILE_COMMANDS [TU...]: every translation unit of a configured build
# (compile_commands.json), and each extra TU, preprocessed (-M -MG) with DEPS/include first, must
# take every Boost, fmt, CLI11 and nlohmann-json header from DEPS: one found elsewhere (/usr/include)
# or nowhere is a header the pack lacks. Prints each (with a TU that needs it); exit 1 if any.
check_pack() {
  python3 - "$@" <<'PY'
import concurrent.futures, json, os, re, shlex, subprocess, sys
deps, ccjson, extra = os.path.realpath(sys.argv[1]), sys.argv[2], sys.argv[3:]
cxx = os.environ.get("CXX", "g++")
jobs = []
for e in json.load(open(ccjson)) if os.path.isfile(ccjson) else []:
    args = shlex.split(e["command"]) if "command" in e else list(e["arguments"])
    cmd, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in ("-o", "-MF", "-MT", "-MQ"):
            skip = True
        elif a not in ("-c", "-MD", "-MMD"):
            cmd.append(a)
    jobs.append((e["file"], [cmd[0], f"-I{deps}/include"] + cmd[1:] + ["-M", "-MG"], e["directory"]))
for tu in extra:
    jobs.append((tu, [cxx, "-std=c++20", f"-I{deps}/include", tu, "-M", "-MG"], os.getcwd()))
if not jobs:
    sys.exit(f"check_pack: no translation units ({ccjson} absent and none given)")
ours = re.compile(r"(^|/)(boost|fmt|CLI|nlohmann)/")
def deps_of(job):
    tu, cmd, cwd = job
    p = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    found = [d for d in p.stdout.replace("\\\n", " ").split() if ours.search(d)]
    bad = [d for d in found if not os.path.realpath(os.path.join(cwd, d)).startswith(deps + "/")]
    if p.returncode != 0:
        bad.append("(the preprocessor failed: " + p.stderr.strip().splitlines()[-1][:200] + ")" if p.stderr.strip() else "(failed)")
    return tu, bad
missing = {}
with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as ex:
    for tu, bad in ex.map(deps_of, jobs):
        for b in bad:
            missing.setdefault(b, tu)
for b, tu in sorted(missing.items()):
    print(f"{b} (needed by {tu})")
print(f"check_pack: {len(jobs)} translation unit(s), {len(missing)} header(s) not from {deps}", file=sys.stderr)
sys.exit(1 if missing else 0)
PY
}

if [ "${1:-}" = "--probe-cudnn" ]; then
  probe_cudnn
  exit
fi

if [ "${1:-}" = "--check-pack" ]; then
  shift
  [ $# -ge 2 ] || { echo "usage: $0 --check-pack DEPS COMPILE_COMMANDS [TU...]" >&2; exit 2; }
  check_pack "$@"
  exit
fi

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
  # Boost: the closure of every Boost header the sources include (boost_includes), as every
  # compiler here sees it, and the whole of boost/config and boost/predef (where compilers
  # differ), a few MB of Boost's 160.
  { for cxx in g++ clang++; do command -v "$cxx" >/dev/null && boost_deps "$cxx"; done
    find /usr/include/boost/config /usr/include/boost/predef -type f; } | grep '^/usr/include/boost/' | sort -u |
    sed 's|^/usr/include/||' | (cd /usr/include && xargs cp --parents -t "$dest/include")
  fe=${SDPABENCH_CUDNN_FRONTEND_ROOT:-/opt/sdpabench-deps/cudnn-frontend-$frontend_pin}
  mkdir -p "$dest/cudnn-frontend"
  cp -r "$fe/include" "$dest/cudnn-frontend/"
  du -sh "$dest"
  exit 0
fi

# The device steps in the order of their value (--from=STEP starts at one, the steps before it not run).
steps=(smoke torch perf table cold more)
step_index() { local i; for i in "${!steps[@]}"; do [ "${steps[$i]}" = "$1" ] && echo "$i" && return 0; done; return 1; }
mode=run budget=520 from=smoke
while [ $# -gt 0 ]; do
  case $1 in
    --torch-only) mode=torch ;;
    --dry-run) mode=dry ;;
    --budget) budget=${2:?--budget needs SECONDS}; shift ;;
    --budget=*) budget=${1#--budget=} ;;
    --from) from=${2:?--from needs a STEP}; shift ;;
    --from=*) from=${1#--from=} ;;
    *) echo "device_check.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
  shift
done
[[ $budget =~ ^[0-9]+$ ]] || { echo "device_check.sh: --budget needs whole seconds (got '$budget')" >&2; exit 2; }
first=$(step_index "$from") || { echo "device_check.sh: --from=$from: no such step (${steps[*]})" >&2; exit 2; }
# wanted STEP: true when STEP is at or after --from.
wanted() { [ "$(step_index "$1")" -ge "$first" ]; }

work=${SDPABENCH_DEVICE_WORK:-$root/build}
build=$work/device            # the one build tree (kept between runs on a warm machine)
reports=$work/device-check    # every report, packed into $out/reports.tgz after each step
out=${OUT:-$work/device-check-out}
# A run that continues (--from) keeps the reports of the steps before it (the table reads perf's).
[ "$first" -eq 0 ] && rm -rf "$reports"
mkdir -p "$reports" "$out"
rm -f "$out/device_check.log" "$out/smoke.txt" "$out/reports.tgz" "$out/reports.tgz.part"
t0=$(date +%s)
reserve=10  # seconds kept for the last packing and the summary
log() { echo "[device_check +$(( $(date +%s) - t0 ))s] $*" | tee -a "$out/device_check.log"; }
left() { echo $(( budget - ($(date +%s) - t0) - reserve )); }
verdict=0 incomplete=0

# pack: rewrite $out/reports.tgz from the reports folder, the log and smoke.txt (atomically: a
# timeout leaves the previous complete tarball).
pack() {
  # tar exits 1 for a file that changed while read (the background plugin build's log): still packed.
  tar -czf "$out/reports.tgz.part" -C "$reports" . -C "$out" $(cd "$out" && ls device_check.log smoke.txt 2>/dev/null) \
    2>/dev/null
  [ $? -le 1 ] && mv -f "$out/reports.tgz.part" "$out/reports.tgz"
}

# step NAME ESTIMATE LIMIT OUTPUT CMD...: runs CMD, its stdout and stderr into OUTPUT, under
# `timeout` of LIMIT seconds or what is left of the budget, whichever is less, when at least
# ESTIMATE seconds are left; returns CMD's status (124 after a timeout), or 99 without running it.
# Packs the reports afterwards.
step() {
  local name=$1 est=$2 limit=$3 output=$4 l rc
  shift 4
  l=$(left)
  if [ "$l" -lt "$est" ]; then
    log "$name: not run (${l}s of the budget left, it needs about ${est}s)"
    return 99
  fi
  [ "$l" -lt "$limit" ] && limit=$l
  timeout -k 15 "$limit" "$@" >"$output" 2>&1
  rc=$?
  [ "$rc" -eq 124 ] && log "$name: stopped after ${limit}s (timeout)"
  pack
  return "$rc"
}

# summary FILE FIELD: the count after FIELD: in FILE's last summary line.
summary() { grep -E '^tests:' "$1" 2>/dev/null | tail -n 1 | grep -oE "(^| )$2:[0-9]+" | cut -d: -f2; }

# --- 0. Tools, cuDNN, torch, the --pack folder, configure (no device needed).
log "mode $mode, budget ${budget}s; host ${HOSTNAME:-?}, $(nproc) cores"
log "tools: $(cmake --version 2>&1 | head -n 1); $(${CXX:-g++} --version 2>&1 | head -n 1); nvcc $(nvcc --version 2>/dev/null | grep -oE 'release [0-9.]+' || echo 'not on PATH')"
cmake_v=$(cmake --version 2>/dev/null | grep -oE '[0-9]+\.[0-9]+' | head -n 1)
if [ -z "$cmake_v" ] || [ "$(printf '%s\n3.25\n' "$cmake_v" | sort -V | head -n 1)" != 3.25 ]; then
  log "CMake ${cmake_v:-missing} is older than 3.25 (CMakeLists.txt): nothing can be built"; pack; exit 3
fi

if [ -n "${SDPABENCH_CUDNN_ROOT:-}" ]; then
  cudnn_root=$SDPABENCH_CUDNN_ROOT
  log "cuDNN: $cudnn_root (SDPABENCH_CUDNN_ROOT)"
else
  cudnn_root=$(probe_cudnn 2>"$reports/cudnn-probe.err")
  [ -s "$reports/cudnn-probe.err" ] && log "cuDNN probe: $(tr '\n' ';' <"$reports/cudnn-probe.err")"
fi
if [ -n "$cudnn_root" ] && [ -f "$cudnn_root/include/cudnn_version.h" ]; then
  log "cuDNN: $cudnn_root ($(grep -E 'define CUDNN_(MAJOR|MINOR|PATCHLEVEL) ' "$cudnn_root/include/cudnn_version.h" | awk '{printf "%s.", $3}' | sed 's/\.$//'))"
  export LD_LIBRARY_PATH="$cudnn_root/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
else
  log "cuDNN: no pip cuDNN with headers${cudnn_root:+ at $cudnn_root}; using the toolkit's (cmake/cudnn.cmake)"
  cudnn_root=""
fi
# The frontend dlopens one libcudart (12 or 13), and cuDNN's engines dlopen libnvrtc: both from
# the toolkit's library folder.
for d in "${CUDAToolkit_ROOT:-/usr/local/cuda}/lib64" "${CUDAToolkit_ROOT:-/usr/local/cuda}/lib"; do
  [ -d "$d" ] && export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d"
done

torch_root=${SDPABENCH_TORCH_ROOT:-$(python3 -c 'import importlib.util, os; s = importlib.util.find_spec("torch"); print(os.path.dirname(s.origin) if s and s.origin else "")' 2>/dev/null)}
if [ -n "$torch_root" ] && [ -f "$torch_root/lib/libtorch_cpu.so" ]; then
  log "torch: $torch_root"
else
  log "torch: no torch package with lib/libtorch_cpu.so${torch_root:+ at $torch_root}: the PyTorch rows are not checked"
  torch_root=""
fi

# The plugin is its own target (SDPABENCH_TORCH_WITH_EXE=OFF): step 1 builds sdpabench alone, and
# a plugin that does not compile costs the PyTorch rows only. compile_commands.json: the pack check.
cmake_args=(-S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DSDPABENCH_TESTS=OFF -DSDPABENCH_ONEDNN=OFF
  -DSDPABENCH_FMT_HEADER_ONLY=ON -DSDPABENCH_STORE=OFF -DSDPABENCH_TORCH_WITH_EXE=OFF -DCMAKE_EXPORT_COMPILE_COMMANDS=ON)
command -v ninja >/dev/null && [ ! -f "$build/Makefile" ] && cmake_args+=(-G Ninja)
[ -n "$cudnn_root" ] && cmake_args+=(-DSDPABENCH_CUDNN_ROOT="$cudnn_root")
if [ -d "$deps/share/cmake" ]; then  # a carried --pack folder
  cmake_args+=(-DCMAKE_PREFIX_PATH="$deps" -Dfmt_DIR="$deps/lib/x86_64-linux-gnu/cmake/fmt"
    -DCLI11_DIR="$deps/share/cmake/CLI11" -Dnlohmann_json_DIR="$deps/share/cmake/nlohmann_json")
  log "pack: $deps (checked against every translation unit once configured)"
else
  log "pack: no --pack folder at $deps; the build uses this machine's fmt, CLI11, nlohmann-json and Boost"
fi
if [ -n "${SDPABENCH_CUDNN_FRONTEND_ROOT:-}" ]; then
  cmake_args+=(-DSDPABENCH_CUDNN_FRONTEND_ROOT="$SDPABENCH_CUDNN_FRONTEND_ROOT")
elif [ -f "$deps/cudnn-frontend/include/cudnn_frontend.h" ]; then
  cmake_args+=(-DSDPABENCH_CUDNN_FRONTEND_ROOT="$deps/cudnn-frontend")
fi

# configure CUDNN TORCH: ON/OFF each; returns cmake's status.
configure() {
  local t=(-DSDPABENCH_TORCH=OFF)
  [ "$2" = ON ] && t=(-DSDPABENCH_TORCH=ON -DSDPABENCH_TORCH_ROOT="$torch_root")
  step "configure (cuDNN $1, torch $2)" 15 120 "$reports/configure.log" cmake "${cmake_args[@]}" -DSDPABENCH_CUDNN="$1" \
    "${t[@]}"
}
# --torch-only configures the same tree as a full run (so either reuses the other's build).
want_cudnn=ON want_torch=OFF
[ -n "$torch_root" ] && want_torch=ON
have_cudnn=OFF have_torch=OFF tried=""
for c in "$want_cudnn $want_torch" "$want_cudnn OFF" "OFF $want_torch"; do
  set -- $c
  { [ "$1" = OFF ] && [ "$2" = OFF ]; } || [[ $tried == *"[$c]"* ]] && continue
  tried+="[$c]"
  if configure "$1" "$2"; then
    have_cudnn=$1
    have_torch=$(grep -q 'PyTorch backend plugin with libtorch' "$reports/configure.log" && echo ON || echo OFF)
    break
  fi
  log "configure (cuDNN $1, torch $2) failed: $(grep -m1 -A3 'CMake Error' "$reports/configure.log" | tr '\n' ' ' | cut -c1-400)"
  cp "$reports/configure.log" "$reports/configure-failed-cudnn$1-torch$2.log"
done
grep -E '^-- sdpabench:' "$reports/configure.log" | sed 's/^/    /' | tee -a "$out/device_check.log"
# Every header the pack must carry comes from it, for every translation unit of this configuration
# with this compiler (check_pack): a header it lacks is named here, before the build needs it.
if [ -d "$deps/share/cmake" ]; then
  if check_pack "$deps" "$build/compile_commands.json" >"$reports/pack-check.txt" 2>&1; then
    log "pack: every Boost, fmt, CLI11 and nlohmann-json header of the build comes from $deps ($(tail -n 1 "$reports/pack-check.txt"))"
  else
    log "pack: $deps lacks headers the build needs: $(head -n 5 "$reports/pack-check.txt" | tr '\n' ' ' | cut -c1-600)"
    verdict=1
  fi
fi
log "configured: cuDNN backend $have_cudnn, PyTorch plugin $have_torch (want cuDNN $want_cudnn, torch $want_torch)"
# The cuDNN the build took must be the one probed (cmake/cudnn.cmake prints its library folder).
if [ "$have_cudnn" = ON ] && [ -n "$cudnn_root" ] &&
    ! grep -qF "($(realpath "$cudnn_root/lib" 2>/dev/null))" "$reports/configure.log"; then
  log "cuDNN: configure took another cuDNN than $cudnn_root: $(grep -E '^-- sdpabench: cuDNN' "$reports/configure.log")"
  verdict=1
fi
pack

if [ "$mode" = dry ]; then
  python3 -c 'import ast, sys; ast.parse(open(sys.argv[1]).read(), sys.argv[1])' "$root/scripts/device_check_table.py" ||
    verdict=1
  n=$(find "$out" -mindepth 1 | wc -l)
  log "dry run: stops before the device probe; $n file(s) in $out: $(cd "$out" && ls | tr '\n' ' ')"
  pack
  [ "$n" -le 4 ] || verdict=1
  [ "$have_cudnn" = "$want_cudnn" ] || verdict=1
  [ "$want_cudnn" = OFF ] || [ -n "$cudnn_root" ] || [ -n "${SDPABENCH_ALLOW_TOOLKIT_CUDNN:-}" ] || verdict=1
  exit "$verdict"
fi

# --- The device (from here on a GPU is needed).
log "GPU: $(nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 | head -n 1)"
log "python: $(python3 -c 'import torch; print("torch", torch.__version__, "CUDA", torch.version.cuda, "cuDNN", torch.backends.cudnn.version())' 2>&1 | tail -n 1)"
exe=$build/sdpabench

# --- 1. Build: the sdpabench target alone (the plugin is its own target: SDPABENCH_TORCH_WITH_EXE=OFF),
# then the plugin in the background (same tree) while the smoke runs.
# build_error: the first compiler error of build.log, or why there is none.
build_error() { grep -m1 -E 'error:|Error ' "$reports/build.log" | cut -c1-300 || echo "no compiler error (a timeout?)"; }
built=0
if [ "$have_cudnn" = ON ] || [ "$have_torch" = ON ]; then
  step "build sdpabench" 30 300 "$reports/build.log" cmake --build "$build" --target sdpabench -j "$(nproc)"
  rc=$?
  if [ "$rc" = 0 ]; then
    built=1
  elif [ "$have_cudnn" = ON ] && [ "$have_torch" = ON ] && grep -qE '^FAILED: .*backends/(cudnn|cuda)/' "$reports/build.log"; then
    # A cuDNN translation unit did not compile: the torch rows without it (a timeout is no reason).
    log "build sdpabench failed in the cuDNN backend: $(build_error); the torch rows without it"
    cp "$reports/build.log" "$reports/build-failed-cudnn.log"
    if configure OFF ON && step "build sdpabench (no cuDNN)" 30 300 "$reports/build.log" cmake --build "$build" \
        --target sdpabench -j "$(nproc)"; then
      built=1 have_cudnn=OFF
    fi
  fi
  [ "$built" = 1 ] || log "build failed (exit $rc): $(build_error)"
fi
[ "$built" = 1 ] || { have_cudnn=OFF have_torch=OFF; incomplete=1; }
[ "$built" = 1 ] && "$exe" --version >"$reports/version.txt" 2>&1 && log "built: $(grep -E '^cudnn:' "$reports/version.txt" | cut -c1-300)"
plugin_pid=""
if [ "$have_torch" = ON ] && [ "$built" = 1 ] && { wanted torch || wanted more; }; then
  # One translation unit against libtorch, on a few cores beside the smoke's reference.
  ( l=$(left); nice timeout "$(( l > 1 ? l : 1 ))" cmake --build "$build" --target sdpabench_torch -j 2 \
      >"$reports/torch-build.log" 2>&1
    echo $? >"$reports/torch-build.rc" ) &
  plugin_pid=$!
  log "torch: the plugin builds in the background (pid $plugin_pid); the cuDNN steps do not wait for it"
fi
pack

# --- 2. The cuDNN smoke set (C mode, no rerun of FAILED cases: each would restart CUDA and cuDNN), as
# its three files in three processes, the newest forms first (cases/gpu/smoke.cases): a sticky CUDA
# error (an illegal address or a launch failure leaves the context unusable) costs the rest of its
# own file only, and is recorded.
# sum_field FIELD FILE...: FIELD's count summed over the last summary line of each FILE ("" if none has one).
sum_field() {
  local f n total="" field=$1; shift
  for f in "$@"; do n=$(summary "$f" "$field"); [ -n "$n" ] && total=$(( ${total:-0} + n )); done
  echo "$total"
}
sticky='cudaErrorIllegalAddress|cudaErrorLaunchFailure|cudaErrorLaunchTimeout|cudaErrorIllegalInstruction|cudaErrorMisalignedAddress|cudaErrorHardwareStackError|cudaErrorAssert|illegal memory access'
smoke_rc="not run" smoke_rcs=""
if [ "$have_cudnn" = ON ] && [ "$mode" = run ] && wanted smoke; then
  : >"$out/smoke.txt"
  parts=() smoke_t0=$(date +%s) smoke_done=0
  for group in fp8 ragged core; do
    part=$reports/smoke-$group.txt
    parts+=("$part")
    # fp8 and ragged are small; the core matrix gets what is left of the smoke's 240 s (60 at least).
    cap=60
    if [ "$group" = core ]; then cap=$(( 240 - ($(date +%s) - smoke_t0) )); [ "$cap" -lt 60 ] && cap=60; fi
    step "smoke $group" 20 "$cap" "$part" "$exe" -v --no-progress --no-rerun-failed --backend=cudnn \
      --report=jsonl:"$reports/smoke-$group.jsonl" --batch="$root/cases/gpu/$group.cases"
    rc=$?
    { echo "=== cases/gpu/$group.cases (exit $rc)"; cat "$part" 2>/dev/null; } >>"$out/smoke.txt"
    smoke_rcs="${smoke_rcs:+$smoke_rcs, }$group $rc"
    [ -n "$(summary "$part" tests)" ] && smoke_done=$(( smoke_done + 1 ))
    if [ "$rc" -ge 128 ] && [ "$rc" -ne 99 ]; then
      log "smoke $group: the process died (exit $rc)"; verdict=1
    fi
    if hit=$(grep -m1 -E "^[0-9]+:FAILED .*($sticky)" "$part" 2>/dev/null); then
      log "smoke $group: a sticky CUDA error, the cases after it in this file tell nothing: $(echo "$hit" | cut -c1-240)"
      echo "=== sticky CUDA error in $group.cases: $(echo "$hit" | cut -c1-300)" >>"$out/smoke.txt"
      verdict=1
    fi
    log "smoke $group: exit $rc; $(grep -s -E '^tests:' "$part" | tail -n 1)"
  done
  smoke_rc=$smoke_rcs
  pack
  tests=$(sum_field tests "${parts[@]}"); passed=$(sum_field passed "${parts[@]}")
  skipped=$(sum_field skipped "${parts[@]}"); failed=$(sum_field failed "${parts[@]}")
  invalid=$(sum_field invalid_arguments "${parts[@]}"); unimpl=$(sum_field unimplemented "${parts[@]}")
  mistrusted=$(sum_field mistrusted "${parts[@]}")
  echo "tests:${tests:-0} passed:${passed:-0} skipped:${skipped:-0} mistrusted:${mistrusted:-0} unimplemented:${unimpl:-0} invalid_arguments:${invalid:-0} failed:${failed:-0} (the files that finished, summed: $smoke_done of 3)" \
    >>"$out/smoke.txt"
  log "smoke: $(tail -n 1 "$out/smoke.txt")"
  # What finished is judged even when a file did not finish (that alone is "incomplete").
  [ "$smoke_done" -lt 3 ] && incomplete=1
  if [ -n "$tests" ] && { [ "${passed:-0}" -eq 0 ] || [ "${skipped:-0}" -gt 0 ] || [ "${failed:-0}" -gt 0 ] ||
      [ "${invalid:-0}" -gt 0 ]; }; then
    log "smoke: NOT clean (passed ${passed:-?} of ${tests:-?}, failed ${failed:-?}, skipped ${skipped:-?}, invalid ${invalid:-?})"
    verdict=1
  fi
elif [ "$mode" = run ] && wanted smoke; then
  log "smoke: not run (no cuDNN backend built)"; incomplete=1
fi

# torch_run NAME ESTIMATE LIMIT FILE...: the four CUDA rows on the case files, in one process.
rows=torch:efficient,torch:cudnn,torch:flash:cuda,torch:math:cuda
torch_ready=0
torch_run() {
  local name=$1 est=$2 limit=$3 f batches=()
  shift 3
  for f in "$@"; do batches+=(--batch="$root/cases/torch/$f.cases"); done
  step "torch $name" "$est" "$limit" "$reports/torch-$name.txt" "$exe" -v --no-progress --no-rerun-failed \
    --backend="$rows" --report=jsonl:"$reports/torch-$name.jsonl" "${batches[@]}"
  local rc=$?
  [ "$rc" -eq 99 ] && return 99
  log "torch $name: exit $rc; $(grep -E '^tests:' "$reports/torch-$name.txt" | tail -n 1)"
  # Cut by its time (no summary line): not finished, which is no failure.
  [ -n "$(summary "$reports/torch-$name.txt" tests)" ] || return 124
  for r in ${rows//,/ }; do
    log "    $r: $(grep -E "^[0-9]+:[A-Z_]+ .*--backend=$r( |$)" "$reports/torch-$name.txt" | grep -oE '^[0-9]+:[A-Z_]+' |
      cut -d: -f2 | sort | uniq -c | awk '{printf "%s %s, ", $1, $2}')"
  done
  # FAILED or SKIPPED fail the check; UNIMPLEMENTED (exit 3: math:cuda has no log-sum-exp of its
  # forward, flash:cuda no top-left causal with S_q != S_kv) is a form the row does not take.
  [ "$(summary "$reports/torch-$name.txt" failed)" = 0 ] && [ "$(summary "$reports/torch-$name.txt" skipped)" = 0 ] || verdict=1
  return 0
}
# --- 3. The torch CUDA rows' conventions (the plugin built meanwhile; only the torch steps wait for it).
if [ -n "$plugin_pid" ] && { wanted torch || wanted more; }; then
  wait "$plugin_pid"
  if [ "$(cat "$reports/torch-build.rc" 2>/dev/null)" = 0 ]; then
    torch_ready=1
    "$exe" --version 2>&1 | grep -E '^torch:' >>"$reports/version.txt"
    log "torch: plugin built; $(grep -m1 -E '^torch:efficient' "$reports/version.txt" | cut -c1-300)"
  else
    log "torch: the plugin did not build (exit $(cat "$reports/torch-build.rc" 2>/dev/null)): $(grep -m1 -E 'error:|Error ' \
      "$reports/torch-build.log" | cut -c1-300); the run goes on without it"
    verdict=1
  fi
fi
if [ "$torch_ready" = 1 ]; then
  if wanted torch; then torch_run conventions_cuda 20 120 conventions_cuda || incomplete=1; fi
elif [ "$mode" = torch ] || [ -n "$torch_root" ]; then
  log "torch: no plugin: the PyTorch CUDA rows are not checked (the cuDNN steps are not affected)"
  incomplete=1
fi

# --- 4, 5. Performance, warm L2: sdpabench's P mode, then PyTorch on the same shapes.
# perf warm|cold ESTIMATE: returns 0 when every case was timed, 99 when not run, else 1.
perf() {
  local extra=() rc
  [ "$1" = cold ] && extra=(--cold-cache)
  step "perf $1" "$2" 150 "$reports/perf-$1.txt" "$exe" --no-progress --backend=cudnn --mode=P --max-ms-per-case=800 \
    --min-runs=10 "${extra[@]}" --report=jsonl:"$reports/perf-$1.jsonl" --batch="$root/cases/gpu/perf.cases"
  rc=$?
  [ "$rc" -eq 99 ] && return 99
  log "perf $1: exit $rc; $(grep -E '^tests:' "$reports/perf-$1.txt" | tail -n 1)"
  [ "$rc" -eq 0 ] && [ "$(summary "$reports/perf-$1.txt" executed)" = "$(summary "$reports/perf-$1.txt" tests)" ]
}
table() {  # warm|cold ESTIMATE
  [ -s "$reports/perf-$1.jsonl" ] || { log "table $1: not run (no perf-$1.jsonl: perf $1 did not run)"; return 99; }
  # The cuDNN frontend inside libtorch logs the plans PyTorch's cuDNN attention built and ran: the
  # evidence on PyTorch's side of a comparison with sdpabench's cuDNN plan (perf-*.jsonl "impl").
  step "table $1" "$2" 200 "$reports/table-$1.txt" env CUDNN_FRONTEND_LOG_INFO=1 \
    CUDNN_FRONTEND_LOG_FILE="$reports/torch-fe-$1.log" python3 "$root/scripts/device_check_table.py" "$reports" "$1"
  local rc=$?
  [ "$rc" -eq 99 ] && return 99
  log "table $1: exit $rc, $(grep -c '^| llama' "$reports/table-$1.txt") row(s)"
  return "$rc"
}
if [ "$have_cudnn" = ON ] && [ "$mode" = run ]; then
  if wanted perf; then
    perf warm 30
    case $? in 0) ;; 99) incomplete=1 ;; *) verdict=1 ;; esac
  fi
  if wanted table; then table warm 20 || incomplete=1; fi
  # --- 6, 7. Only while the budget holds.
  if wanted cold; then perf cold 40 && table cold 25; fi
fi
# --- 8. The other torch files on the CUDA rows.
[ "$torch_ready" = 1 ] && wanted more && torch_run more 45 200 conventions smoke

# observed FILE: the "observed:" lines of a -v run (compare/compare.hpp observed_masked_rows) summed
# per backend and direction: the stats values of fully masked rows with their counts, and per output
# the elements past the valid lengths left unwritten (NaN prefill), zero or other.
observed() {
  python3 - "$1" <<'PY'
import collections, re, sys
stats, past, backend = collections.Counter(), collections.defaultdict(lambda: [0, 0, 0]), "?"
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r"__REPRO: .*?--backend=(\S+)", line)
    if m:
        backend = m.group(1)
    m = re.match(r"\s+(?:(fwd|bwd): )?observed: (.*)", line)
    if not m:
        continue
    where = f"{backend} {m.group(1) or ''}".strip()
    for v, n in re.findall(r"(\S+) x(\d+)", m.group(2).split("; their stats:")[-1].split(";")[0]) if "their stats:" in m.group(2) else []:
        stats[(where, v)] += int(n)
    for out, a, b, c in re.findall(r"(\w+) past the valid \w+ lengths: (\d+) unwritten \(NaN prefill\), (\d+) zero, (\d+) other", m.group(2)):
        for k, x in enumerate((a, b, c)):
            past[(where, out)][k] += int(x)
for (where, v), n in sorted(stats.items()):
    print(f"{where}: stats of fully masked rows {v} x{n}")
for (where, out), (a, b, c) in sorted(past.items()):
    print(f"{where}: {out} past the valid lengths: {a} unwritten (NaN prefill), {b} zero, {c} other")
PY
}

# --- Summary: at most 10,000 characters, so that all of it stays in a 12,000-character tail of stdout.
{
  echo "=== device_check summary (verdict $verdict, incomplete $incomplete, $(( $(date +%s) - t0 ))s of ${budget}s)"
  if [ -s "$out/smoke.txt" ]; then
    echo "--- smoke: $(grep -E '^tests:' "$out/smoke.txt" | tail -n 1)"
    echo "--- smoke: cases that did not PASS, FAILED first (16 at most, cut at 220 characters; all in smoke.txt)"
    { grep -E '^[0-9]+:FAILED' "$out/smoke.txt"
      grep -E '^[0-9]+:[A-Z_]+' "$out/smoke.txt" | grep -vE '^[0-9]+:(PASSED|FAILED)'; } | cut -c1-220 | head -n 16
    echo "--- smoke: what cuDNN wrote in fully masked and padded rows, summed over the cases (-v's observed: lines)"
    observed "$out/smoke.txt"
    echo "--- smoke: cuDNN plans used"
    grep -oE 'cuDNN plan: [^ ]+' "$out/smoke.txt" | sort | uniq -c | sort -rn | head -n 4 | cut -c1-160
  fi
  if [ -f "$reports/torch-conventions_cuda.txt" ]; then
    echo "--- torch CUDA rows, conventions_cuda.cases: $(grep -E '^tests:' "$reports/torch-conventions_cuda.txt" | tail -n 1)"
    grep -E '^[0-9]+:[A-Z_]+' "$reports/torch-conventions_cuda.txt" | grep -vE '^[0-9]+:PASSED' | cut -c1-200 | head -n 8
    grep -oE 'PyTorch returned its log-sum-exp as [^;]*' "$reports/torch-conventions_cuda.txt" | sort | uniq -c | head -n 4 |
      cut -c1-160
    observed "$reports/torch-conventions_cuda.txt"
  fi
  for m in warm cold; do
    [ -f "$reports/perf-$m.txt" ] && echo "--- perf $m: $(grep -E '^tests:' "$reports/perf-$m.txt" | tail -n 1)"
  done
  [ -f "$reports/table-warm.txt" ] && { echo "--- PyTorch beside sdpabench (warm L2; the cold pass in reports.tgz)"; head -c 2500 "$reports/table-warm.txt"; }
  if [ -f "$reports/perf-warm.jsonl" ]; then
    echo "--- sdpabench's cuDNN plans in perf warm (JSONL impl)"
    python3 -c 'import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if "id" in r: print(r.get("name") or "", r.get("dir") or "", r.get("impl") or "")' "$reports/perf-warm.jsonl" 2>/dev/null |
      head -n 10 | cut -c1-200
  fi
  if [ -s "$reports/torch-fe-warm.log" ]; then
    echo "--- PyTorch's cuDNN plans (its frontend's log, torch-fe-warm.log; lines naming a plan or engine)"
    grep -iE 'plan|engine|tag' "$reports/torch-fe-warm.log" | sed -E 's/^\[[^]]*\] *//' | sort | uniq -c | sort -rn | head -n 8 |
      cut -c1-200
  fi
  [ -f "$reports/torch-more.txt" ] && echo "--- torch CUDA rows, conventions + smoke: $(grep -E '^tests:' "$reports/torch-more.txt" | tail -n 1)"
} 2>&1 | head -c 10000 >"$reports/summary.txt"
cat "$reports/summary.txt" >>"$out/device_check.log"
cat "$reports/summary.txt"
[ "$incomplete" = 1 ] && [ "$verdict" = 0 ] && verdict=3
log "done (smoke exit $smoke_rc; verdict $verdict); reports in $reports, returned: $(cd "$out" && ls | tr '\n' ' ')"
pack
exit "$verdict"
