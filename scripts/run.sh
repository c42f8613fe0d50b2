#!/usr/bin/env bash
# The main job: set up if needed, build, run cases/ci/smoke.cases on the oneDNN backend.
# Extra arguments go to sdpabench (e.g. scripts/run.sh -v, or another --batch=FILE).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
bash scripts/build.sh
if [ $# -eq 0 ]; then set -- --batch=cases/ci/smoke.cases; fi
exec build/${SDPABENCH_PRESET:-release}/sdpabench --backend=onednn "$@"
