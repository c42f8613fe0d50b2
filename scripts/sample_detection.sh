#!/usr/bin/env bash
# Detection power of sampled checks, measured (docs/trust.md#sampled-checks): for each N,
# (a) every cases/selftest/KIND.cases with --backend=faulty:KIND, in full and with --check=sample:N:
#     caught when every case is FAILED (exit 1), as scripts/selftest.sh judges it; and its clean run
#     (--backend=ref, or the "# clean-backend: NAME" of the file) must PASS every case in both modes;
# (b) cases/ci/smoke.cases with every fault of `sdpabench --help`'s FAULT INJECTION but
#     bound_fraction, in full and with --check=sample:N: the FAILED cases of each mode, and whether
#     the sample caught the fault (>= 1 FAILED) wherever the full check did. The smoke set runs on
#     --backend=ref too, in both modes: a case FAILED there is a false alarm, and a fault's count
#     beyond those is what "new" counts (the catch is judged on the new ones).
# (c) with --random "SEEDS": the random cases of each seed (`--seed=S --random=M`) on ref and on every
#     fault, in full and with --check=sample:N, compared case by case: a fault's FAILED cases that
#     the sample PASSED (misses) or MISTRUSTED, and a right kernel's PASSED cases that the sample
#     did not pass (false alarms: the ref row).
# Prints a Markdown table per N, then per N the lines "sample:N misses: KIND..." (smoke: full
# caught, the sample did not), "sample:N selftest misses: KIND..." and "sample:N false alarms: ..."
# ("none" where there are none), and each smoke case a full check FAILED and the sample did not,
# with its sampled status line. A measurement, not a test: exits 0 when it ran, 2 on a bad argument.
#
# Usage: scripts/sample_detection.sh [--exe PATH] [--rows "N..."] [--random "SEED..."] [--random-cases M]
#   --exe PATH        the sdpabench binary (default build/release/sdpabench)
#   --rows "N..."     the sample sizes, query and key rows per head (default "8")
#   --random "SEED..." also (c), over these seeds (default: none)
#   --random-cases M  random cases per seed (default 400)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
exe="$root/build/release/sdpabench"
rows="8"
seeds=""
random_cases=400
while [ $# -gt 0 ]; do
  case "$1" in --exe|--rows|--random|--random-cases)
    [ $# -ge 2 ] || { echo "sample_detection: $1 takes a value (see --help)" >&2; exit 2; } ;;
  esac
  case "$1" in
    --exe) exe=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    --random) seeds=$2; shift 2 ;;
    --random-cases) random_cases=$2; shift 2 ;;
    -h|--help) sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "sample_detection: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[ -x "$exe" ] || { echo "sample_detection: $exe is not an executable (build first: scripts/build.sh)" >&2; exit 2; }
read -r -a row_list <<<"$rows"
[ ${#row_list[@]} -gt 0 ] || { echo "sample_detection: --rows is empty" >&2; exit 2; }
for n in "${row_list[@]}"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "sample_detection: --rows takes positive integers, got '$n'" >&2; exit 2; }
done
read -r -a seed_list <<<"$seeds"
for n in "${seed_list[@]}"; do
  [[ "$n" =~ ^[0-9]+$ ]] || { echo "sample_detection: --random takes non-negative integer seeds, got '$n'" >&2; exit 2; }
done
[[ "$random_cases" =~ ^[1-9][0-9]*$ ]] ||
  { echo "sample_detection: --random-cases takes a positive integer, got '$random_cases'" >&2; exit 2; }
fault_kinds=$("$exe" --help | grep '^FAULT INJECTION' | grep -oE 'faulty:[a-z0-9_]+' | cut -d: -f2 |
  grep -vx bound_fraction || true)
[ -n "$fault_kinds" ] || { echo "sample_detection: $exe --help lists no FAULT INJECTION kinds" >&2; exit 2; }
smoke="$root/cases/ci/smoke.cases"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# run OUT ARGS...: sdpabench ARGS into OUT, its exit code into OUT.rc
run() {
  local out=$1 rc=0
  shift
  "$exe" --no-progress "$@" >"$out" 2>&1 || rc=$?
  echo "$rc" >"$out.rc"
}
failed() { grep -c ':FAILED' "$1" || true; }
# summary OUT NAME: the count NAME (tests, passed) of OUT's summary line
summary() { { grep -m1 -oE "(^| )$2:[0-9]+" "$1" || true; } | cut -d: -f2; }
failed_ids() { grep -oE '^[0-9]+:FAILED' "$1" | cut -d: -f1 | sort -u || true; }
# selftest_cell FAULTY CLEAN: scripts/selftest.sh's verdicts, in one cell
selftest_cell() {
  local n cases ref_cases ref_pass f r
  n=$(failed "$1"); cases=$(summary "$1" tests); ref_cases=$(summary "$2" tests); ref_pass=$(summary "$2" passed)
  f="missed"; r="clean: ${ref_pass:-0}/${ref_cases:-?} passed"
  if [ "$(cat "$1.rc")" -eq 1 ] && [ -n "$cases" ] && [ "$n" -eq "$cases" ] && [ "$cases" -gt 0 ]; then f="caught"; fi
  if [ "$(cat "$2.rc")" -eq 0 ] && [ -n "$ref_cases" ] && [ "$ref_pass" = "$ref_cases" ] && [ "$ref_cases" -gt 0 ]; then
    r="clean passed"
  fi
  echo "$f (${n:-0}/${cases:-?} FAILED), $r"
}
# new_failures OUT CLEAN: the FAILED cases of OUT that the clean run of the same mode did not fail
new_failures() { comm -23 <(failed_ids "$1") <(failed_ids "$2") | wc -l; }

checks=(full)
for n in "${row_list[@]}"; do checks+=("sample:$n"); done
echo "sample_detection: $exe ($("$exe" --version 2>/dev/null | head -n 1)); N = ${row_list[*]}" >&2
for c in "${checks[@]}"; do
  run "$tmp/smoke.clean.$c" --check="$c" --backend=ref --batch="$smoke"
  for f in "$root"/cases/selftest/*.cases; do
    kind=$(basename "$f" .cases)
    clean=$(sed -nE 's/^# clean-backend: *([^ ]+).*/\1/p' "$f" | head -n 1)
    echo "sample_detection: --check=$c selftest $kind" >&2
    run "$tmp/self.$kind.$c" --check="$c" --backend="faulty:$kind" --batch="$f"
    run "$tmp/self.clean.$kind.$c" --check="$c" --backend="${clean:-ref}" --batch="$f"
  done
  for kind in $fault_kinds; do
    echo "sample_detection: --check=$c smoke $kind" >&2
    run "$tmp/smoke.$kind.$c" --check="$c" --backend="faulty:$kind" --batch="$smoke"
  done
done

# The kinds of both lists: --help's order, then a self-test file's kind that --help does not list.
kinds=$( (echo "$fault_kinds"; for f in "$root"/cases/selftest/*.cases; do basename "$f" .cases; done) | awk '!seen[$0]++')
for n in "${row_list[@]}"; do
  s="sample:$n"
  misses=() self_misses=() lost_cases=()
  echo
  echo "### --check=$s"
  echo
  echo "| kind | selftest (full) | selftest ($s) | smoke FAILED full | smoke FAILED $s | caught by sample |"
  echo "|---|---|---|---|---|---|"
  echo "| ref (no fault) | - | - | $(failed "$tmp/smoke.clean.full") | $(failed "$tmp/smoke.clean.$s") | - |"
  for kind in $kinds; do
    st_full="-" st_sample="-" sm_full="-" sm_sample="-" caught="-"
    if [ -f "$tmp/self.$kind.full" ]; then
      st_full=$(selftest_cell "$tmp/self.$kind.full" "$tmp/self.clean.$kind.full")
      st_sample=$(selftest_cell "$tmp/self.$kind.$s" "$tmp/self.clean.$kind.$s")
      if [[ "$st_full" == caught* && "$st_sample" != caught* ]]; then self_misses+=("$kind"); fi
    fi
    if [ -f "$tmp/smoke.$kind.full" ]; then
      new_full=$(new_failures "$tmp/smoke.$kind.full" "$tmp/smoke.clean.full")
      new_sample=$(new_failures "$tmp/smoke.$kind.$s" "$tmp/smoke.clean.$s")
      sm_full="$(failed "$tmp/smoke.$kind.full") ($new_full new)"
      sm_sample="$(failed "$tmp/smoke.$kind.$s") ($new_sample new)"
      lost=$(comm -23 <(failed_ids "$tmp/smoke.$kind.full") <(failed_ids "$tmp/smoke.$kind.$s") | sort -n)
      for i in $lost; do  # a case the full check FAILED and the sample did not: its sampled line
        lost_cases+=("$kind: $(grep -m1 "^$i:" "$tmp/smoke.$kind.$s" | cut -c1-400)")
      done
      if [ "$new_full" -eq 0 ]; then caught="n/a (full: none)"
      elif [ "$new_sample" -gt 0 ]; then caught="yes"
      else caught="**no**"; misses+=("$kind")
      fi
    fi
    echo "| $kind | $st_full | $st_sample | $sm_full | $sm_sample | $caught |"
  done
  alarms=$(failed_ids "$tmp/smoke.clean.$s" | paste -sd, -)
  bad_clean=()
  for f in "$root"/cases/selftest/*.cases; do
    kind=$(basename "$f" .cases)
    [[ "$(selftest_cell "$tmp/self.$kind.$s" "$tmp/self.clean.$kind.$s")" == *"clean passed" ]] || bad_clean+=("$kind")
  done
  echo
  echo "$s misses: ${misses[*]:-none}"
  echo "$s selftest misses: ${self_misses[*]:-none}"
  echo "$s false alarms: smoke on ref ${alarms:-none}; selftest clean runs ${bad_clean[*]:-none}"
  echo "$s smoke cases FAILED in full and not sampled: ${#lost_cases[@]}"
  for l in "${lost_cases[@]}"; do echo "- $l"; done
done
# (c) --random "SEEDS": `--seed=S --random=M` (random cases, docs/random_and_minimize.md) on ref and
# on every fault, in full and with --check=sample:N, compared case by case.
if [ ${#seed_list[@]} -gt 0 ]; then
  for s in "${seed_list[@]}"; do
    for c in "${checks[@]}"; do
      for b in ref $(printf 'faulty:%s ' $fault_kinds); do
        echo "sample_detection: --check=$c --seed=$s --random=$random_cases $b" >&2
        run "$tmp/rand.$b.$s.$c" --check="$c" --backend="$b" --seed="$s" --random="$random_cases"
      done
    done
  done
  # statuses FILE: "ID STATUS" per case, sorted by ID
  statuses() { grep -oE '^[0-9]+:[A-Z_]+' "$1" | tr ':' ' ' | sort -k1,1 || true; }
  for n in "${row_list[@]}"; do
    sm="sample:$n"
    echo
    echo "### random cases: --check=$sm against full (--random=$random_cases, seeds ${seed_list[*]})"
    echo
    echo "| backend | FAILED full | FAILED $sm | full FAILED, $sm PASSED | full FAILED, $sm MISTRUSTED | full FAILED, $sm other | full PASSED, $sm MISTRUSTED | full PASSED, $sm FAILED |"
    echo "|---|---|---|---|---|---|---|---|"
    for b in ref $(printf 'faulty:%s ' $fault_kinds); do
      for s in "${seed_list[@]}"; do
        join -j1 <(statuses "$tmp/rand.$b.$s.full") <(statuses "$tmp/rand.$b.$s.$sm")
      done | awk -v b="$b" '
        { ff += $2 == "FAILED"; fs += $3 == "FAILED" }
        $2 == "FAILED" && $3 == "PASSED" { fp++ }
        $2 == "FAILED" && $3 == "MISTRUSTED" { fm++ }
        $2 == "FAILED" && $3 != "FAILED" && $3 != "PASSED" && $3 != "MISTRUSTED" { fo++ }
        $2 == "PASSED" && $3 == "MISTRUSTED" { pm++ }
        $2 == "PASSED" && $3 == "FAILED" { pf++ }
        END { printf "| %s | %d | %d | %d | %d | %d | %d | %d |\n", b, ff, fs, fp, fm, fo, pm, pf }'
    done
  done
fi
