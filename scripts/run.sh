#!/usr/bin/env bash
# The main job: set up if needed, build, run cases/ci/smoke.cases on the oneDNN backend.
# Extra arguments go to sdpabench; without a --batch or a problem among them the smoke file is
# added (scripts/run.sh -v runs the smoke file verbosely; scripts/run.sh --batch=FILE runs FILE);
# --help, --version, --list-knobs=FMT and --list-torch-variants go to sdpabench alone.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh >&2  # set-up and build talk on stderr: stdout is sdpabench's
bash scripts/build.sh >&2
exe=build/${SDPABENCH_PRESET:-release}/sdpabench
has_cases=0
for a in "$@"; do
  case $a in
    # The options that print something and run no case go to sdpabench as they are.
    --help|-h|--version|--list-knobs=*|--list-torch-variants) exec "$exe" "$@" ;;
    --batch=*|--case=*|--random=*|[!-]*) has_cases=1 ;;
  esac
done
[ "$has_cases" = 1 ] || set -- "$@" --batch=cases/ci/smoke.cases
exec "$exe" --backend=onednn "$@"
