#!/usr/bin/env bash
# The main job: set up if needed, build, run cases/ci/smoke.cases on the oneDNN backend.
# Extra arguments go to sdpabench; without a --batch or a problem among them the smoke file is
# added (scripts/run.sh -v runs the smoke file verbosely; scripts/run.sh --batch=FILE runs FILE).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh
bash scripts/build.sh
has_cases=0
for a in "$@"; do
  case $a in --batch=*|--case=*|--random=*|[!-]*) has_cases=1 ;; esac
done
[ "$has_cases" = 1 ] || set -- "$@" --batch=cases/ci/smoke.cases
exec build/${SDPABENCH_PRESET:-release}/sdpabench --backend=onednn "$@"
