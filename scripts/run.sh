#!/usr/bin/env bash
# The main job: set up if needed, build, run cases/ci/smoke.cases on the oneDNN backend, with the
# project's known vendor bugs (cases/known/expected.jsonl) expected: a case one of them explains is
# XFAIL on the CPUs where the bug shows and PASSED elsewhere.
# Extra arguments go to sdpabench; without a --batch or a problem among them the smoke file is
# added (scripts/run.sh -v runs the smoke file verbosely; scripts/run.sh --batch=FILE runs FILE);
# an --expect among them replaces the project's file; --help, --version, --list-knobs=FMT,
# --list-statuses[=FMT] and --list-torch-variants go to sdpabench alone.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash scripts/setup.sh >&2  # set-up and build talk on stderr: stdout is sdpabench's
bash scripts/build.sh >&2
exe=build/${SDPABENCH_PRESET:-release}/sdpabench
has_cases=0 has_expect=0 value_next=0
for a in "$@"; do
  if [ "$value_next" = 1 ]; then value_next=0; continue; fi  # the value of '--option VALUE'
  case $a in
    # The options that print something and run no case go to sdpabench as they are.
    --help|-h|--version|--list-knobs=*|--list-statuses|--list-statuses=*|--list-torch-variants) exec "$exe" "$@" ;;
    --expect=*) has_expect=1 ;;
    --expect) has_expect=1; value_next=1 ;;
    --batch=*|--case=*|--random=*|[!-]*) has_cases=1 ;;
    # sdpabench's flags; any other global option without '=' takes the next argument as its value
    # (knobs of the case language always carry theirs after '=').
    -v|--verbose|--cold-cache|--no-progress|--isolate|--no-rerun-failed|--minimize|--reset|--*=*|-v[0-9]*) ;;
    --*) value_next=1 ;;
  esac
done
[ "$has_cases" = 1 ] || set -- "$@" --batch=cases/ci/smoke.cases
[ "$has_expect" = 1 ] || set -- --expect=cases/known/expected.jsonl "$@"
exec "$exe" --backend=onednn "$@"
