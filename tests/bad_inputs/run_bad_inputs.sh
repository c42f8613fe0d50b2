#!/usr/bin/env bash
# Runs every entry of tests/bad_inputs/manifest.tsv through the real executable and checks the
# exit code and that the expected substring appears in stdout+stderr; also that no output line
# carries raw control bytes (binary input must be escaped) and nothing crashed.
# Manifest lines: INPUT<TAB>EXPECTED SUBSTRING<TAB>EXIT CODE ('#' lines are comments).
#   INPUT.cases: run as  sdpabench --backend=ref --batch=INPUT.cases
#   INPUT.args:  one command-line argument per line:  sdpabench ARG...
# In EXPECTED, {choices:KNOB} stands for KNOB's accepted values as the knob table spells them
# ('sdpabench --list-knobs=tsv', driver/knobs.cpp), so a value added to a knob changes no line here.
# Runs in tests/bad_inputs/ so file names in messages are the manifest's.
# Usage: run_bad_inputs.sh SDPABENCH_EXE SOURCE_DIR
set -uo pipefail
exe=$(realpath "$1") src=$2
cd "$src/tests/bad_inputs"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
total=0 bad=0
declare -A choices
while IFS=$'\t' read -r name accepted _; do choices[$name]=$accepted; done < <("$exe" --list-knobs=tsv)
[ "${#choices[@]}" -ge 20 ] || { echo "sdpabench --list-knobs=tsv gave ${#choices[@]} knobs"; exit 1; }
while IFS=$'\t' read -r input expected code; do
  [[ -z "$input" || "$input" == \#* ]] && continue
  total=$((total + 1))
  while [[ "$expected" =~ \{choices:([a-z0-9-]+)\} ]]; do
    knob=${BASH_REMATCH[1]}
    [ -n "${choices[$knob]+x}" ] || { echo "BAD INPUT FAIL: $input: no knob '$knob' in --list-knobs=tsv"; bad=$((bad + 1)); continue 2; }
    expected=${expected//"{choices:$knob}"/"${choices[$knob]}"}
  done
  if [[ "$input" == *.args ]]; then
    mapfile -t args <"$input"
    "$exe" "${args[@]}" >"$tmp/out" 2>&1 </dev/null
  else
    "$exe" --backend=ref --batch="$input" >"$tmp/out" 2>&1 </dev/null
  fi
  rc=$?
  problem=""
  [ "$rc" = "$code" ] || problem="exit code $rc, expected $code"
  grep -qF -- "$expected" "$tmp/out" || problem="${problem:+$problem; }no '$expected' in the output"
  if LC_ALL=C grep -qP '[\x00-\x08\x0b-\x1f\x7f]' "$tmp/out"; then problem="${problem:+$problem; }raw control bytes in the output"; fi
  if [ -n "$problem" ]; then
    bad=$((bad + 1))
    echo "BAD INPUT FAIL: $input: $problem"
    sed 's/^/    | /' "$tmp/out" | head -n 8
  fi
done <manifest.tsv
echo "bad inputs: $((total - bad))/$total as expected"
[ "$total" -ge 40 ] || { echo "the corpus must hold at least 40 inputs (has $total)"; exit 1; }
[ "$bad" -eq 0 ]
