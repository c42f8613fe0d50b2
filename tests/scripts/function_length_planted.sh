#!/usr/bin/env bash
# scripts/function_length.sh must fail on an 81-line function and name it, and pass the same
# function marked as a table ('#lizard forgives').
set -uo pipefail
script=$1
d=$(mktemp -d)
trap 'rm -rf "$d"' EXIT
{ echo 'int planted() {'; for _ in $(seq 79); do echo '  (void)0;'; done; echo '}'; } >"$d/long.cpp"
if out=$(bash "$script" "$d" 2>&1); then echo "FAIL: passed a planted 81-line function: $out"; exit 1; fi
grep -q 'planted has .* 81 length' <<<"$out" || { echo "FAIL: did not name the planted function: $out"; exit 1; }
sed -i '1i // #lizard forgives: a planted table' "$d/long.cpp"
out=$(bash "$script" "$d" 2>&1) || { echo "FAIL: a table marked '#lizard forgives' failed: $out"; exit 1; }
echo "ok: the planted 81-line function fails, marked as a table it passes"
