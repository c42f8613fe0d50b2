#!/usr/bin/env bash
# Set up if needed, build, run every test (unit and end-to-end) through CTest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
SDPABENCH_TEST_DEPS=1 bash scripts/setup.sh  # also what the tests start: PostgreSQL, Slurm
bash scripts/build.sh
ctest --preset "${SDPABENCH_PRESET:-release}" -j "$(nproc)" "$@"
# SDPABENCH_SANITIZE=1 (set by .ci/run): also build the asan preset (ASan + UBSan) and run its
# tests (all but those labelled "long"; tests/sanitizers/README.md says which and why).
if [ "${SDPABENCH_SANITIZE:-0}" = 1 ]; then
  SDPABENCH_PRESET=asan bash scripts/build.sh
  ctest --preset asan -j "$(nproc)" "$@"
fi
