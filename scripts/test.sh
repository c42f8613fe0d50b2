#!/usr/bin/env bash
# Set up if needed, build, run every test (unit and end-to-end) through CTest.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
bash scripts/build.sh
ctest --preset "${SDPABENCH_PRESET:-release}" -j "$(nproc)" "$@"
