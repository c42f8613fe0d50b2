#!/usr/bin/env bash
# Installs everything sdpabench needs, from Debian packages and PyPI only. Idempotent: a second
# run checks and returns in seconds. Runs as root, or with sudo when it is available.
#   SDPABENCH_DEPS   where the oneDNN venv goes (default /opt/sdpabench-deps)
#   SDPABENCH_NO_PY  set to 1 to skip the Python venv for scripts/plot.py
#   SDPABENCH_NO_TORCH  set to 1 to skip libtorch (the PyTorch backend is then not built)
#   SDPABENCH_NO_TORCH_CUDA  set to 1 to skip libtorch's CUDA libraries on a machine with a GPU
#   SDPABENCH_TEST_DEPS  set to 1 (scripts/test.sh does) to also install what the tests start:
#                    PostgreSQL's server, a single-node Slurm with munge, and Chromium (headless)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
deps=${SDPABENCH_DEPS:-/opt/sdpabench-deps}
onednn_venv="$deps/onednn-2026.1.0"

if [ "$(id -u)" -eq 0 ]; then sudo=""; elif command -v sudo >/dev/null; then sudo="sudo"; else
  echo "setup.sh: needs root or sudo to install Debian packages" >&2; exit 1; fi

# python3-markdown-it and universal-ctags: the docs test (scripts/check_docs.py) reads the docs with
# a Markdown parser and finds the code's names with ctags. The results store (reports/results_store.cpp,
# docs/tracking.md): SOCI with its SQLite and PostgreSQL backends and their client headers.
apt_pkgs=(g++ cmake ninja-build libfmt-dev libcli11-dev nlohmann-json3-dev libgtest-dev libboost-math-dev python3
  python3-markdown-it universal-ctags libsoci-dev libsqlite3-dev libpq-dev)
# What the tests start (SDPABENCH_TEST_DEPS=1, set by scripts/test.sh): PostgreSQL's server for the
# store's tests (scripts/pg_cluster.sh, a throwaway cluster), a single-node Slurm cluster for
# e2e.slurm (scripts/slurm/cluster.sh: the controller, the node daemon, the client commands, munge),
# and Chromium, in which scripts.history_page loads scripts/history's page headless.
if [ "${SDPABENCH_TEST_DEPS:-0}" = 1 ]; then apt_pkgs+=(postgresql slurmctld slurmd slurm-client munge chromium); fi
# scripts/fuzz.sh sets SDPABENCH_FUZZ_DEPS=1: clang with libFuzzer and the sanitizer runtimes
# (libclang-rt-14-dev) and clang's OpenMP (Debian 12's clang is 14).
if [ "${SDPABENCH_FUZZ_DEPS:-0}" = 1 ]; then apt_pkgs+=(clang libclang-rt-14-dev libomp-14-dev); fi
missing=()
for p in "${apt_pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup.sh: installing Debian packages: ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

# oneDNN >= 3.9 with the Graph API: Intel's oneAPI wheels (Debian 12 only has 2.6).
stamp="$onednn_venv/.sdpabench-ok"
if [ ! -f "$stamp" ] || ! cmp -s "$here/onednn-requirements.txt" "$stamp"; then
  echo "setup.sh: installing oneDNN wheels into $onednn_venv"
  $sudo mkdir -p "$deps"
  $sudo rm -rf "$onednn_venv"
  $sudo python3 -m venv "$onednn_venv"
  $sudo "$onednn_venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
      -r "$here/onednn-requirements.txt"
  test -f "$onednn_venv/include/oneapi/dnnl/dnnl_graph.hpp"
  $sudo cp "$here/onednn-requirements.txt" "$stamp"
fi
# cuDNN frontend (header-only, for the cuDNN backend), only where a CUDA Toolkit is installed:
# the nvidia-cudnn-frontend wheel ships include/cudnn_frontend.h. 1.19.x is the release line for
# cuDNN 9.19 (cmake/cudnn.cmake reads the installed cuDNN's version).
frontend_version=1.19.1
frontend_dir="$deps/cudnn-frontend-$frontend_version"
if { command -v nvcc >/dev/null || [ -f /usr/local/cuda/include/cuda.h ]; } && [ ! -f "$frontend_dir/include/cudnn_frontend.h" ]; then
  echo "setup.sh: installing nvidia-cudnn-frontend==$frontend_version into $frontend_dir"
  $sudo "$onednn_venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
      --target "$frontend_dir" "nvidia-cudnn-frontend==$frontend_version"
  test -f "$frontend_dir/include/cudnn_frontend.h"
fi

# libtorch for the PyTorch backend (--backend=torch:VARIANT): PyPI's torch wheel, pinned, without
# its dependencies (about 540 MB to download, 1.2 GB unpacked); cmake/torch.cmake builds the plugin
# against its torch/ folder (headers, libtorch_cpu.so, libc10.so) and nothing of Python is used.
torch_version=2.15.0
torch_dir="$deps/torch-$torch_version"
if [ "${SDPABENCH_NO_TORCH:-0}" != 1 ] && [ ! -f "$torch_dir/torch/lib/libtorch_cpu.so" ]; then
  echo "setup.sh: installing torch==$torch_version (libtorch only, --no-deps) into $torch_dir"
  $sudo rm -rf "$torch_dir"
  $sudo "$onednn_venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps \
      --target "$torch_dir" "torch==$torch_version"
  test -f "$torch_dir/torch/include/ATen/ATen.h"
fi

# On a machine with an NVIDIA GPU, the CUDA rows (torch:efficient, torch:cudnn, torch:flash:cuda,
# torch:math:cuda) need the NVIDIA libraries libtorch_cuda.so loads: the PyPI wheels the torch
# wheel itself requires (its METADATA's Linux requirements named nvidia-* and cuda-toolkit, pins
# included), installed with their dependencies into the same folder, where libtorch_cuda.so's
# RPATH ($ORIGIN/../../nvidia/...) looks. Several GB; SDPABENCH_NO_TORCH_CUDA=1 skips it.
if [ "${SDPABENCH_NO_TORCH:-0}" != 1 ] && [ "${SDPABENCH_NO_TORCH_CUDA:-0}" != 1 ] &&
    command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1 && [ ! -f "$torch_dir/.sdpabench-cuda-ok" ]; then
  mapfile -t cuda_reqs < <(sed -n 's/^Requires-Dist: \(\(nvidia-\|cuda-toolkit\)[^; ]*\) *;.*platform_system == "Linux".*/\1/p' \
    "$torch_dir"/torch-"$torch_version".dist-info/METADATA)
  echo "setup.sh: a GPU is here: installing libtorch's CUDA libraries (${cuda_reqs[*]}) into $torch_dir"
  $sudo "$onednn_venv/bin/python" -m pip install -q --disable-pip-version-check --target "$torch_dir" "${cuda_reqs[@]}"
  $sudo touch "$torch_dir/.sdpabench-cuda-ok"
fi

# Python packages for scripts/plot.py (matplotlib), scripts/compare_runs.py (SciPy's U test) and
# scripts/history (Apache Otava's change points, psycopg for PostgreSQL stores, tabulate, matplotlib,
# and Plotly for its page: the wheel ships plotly.min.js, which the page loads from its own folder),
# pinned in py-requirements.txt, in their own venv.
setup_python_venv() {
  local venv="$deps/py" pstamp="$deps/py/.sdpabench-ok"
  if [ -f "$pstamp" ] && cmp -s "$here/py-requirements.txt" "$pstamp"; then return 0; fi
  echo "setup.sh: installing Python packages for scripts/plot.py, compare_runs.py and history into $venv"
  $sudo mkdir -p "$deps"
  $sudo rm -rf "$venv"
  $sudo python3 -m venv "$venv"
  $sudo "$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$here/py-requirements.txt"
  "$venv/bin/python" -c "import matplotlib, scipy.stats, otava.series, psycopg, tabulate, plotly, lizard"
  $sudo cp "$here/py-requirements.txt" "$pstamp"
}
[ "${SDPABENCH_NO_PY:-0}" = 1 ] || setup_python_venv

echo "setup.sh: ok (oneDNN in $onednn_venv, libtorch in $torch_dir, plot venv in $deps/py)"
