#!/usr/bin/env bash
# Fault-injection self-test: every cases/selftest/KIND.cases must be FAILED (all its cases, exit 1)
# with --backend=faulty:KIND and PASSED (all its cases, exit 0) with --backend=ref, or with the
# backend a "# clean-backend: NAME" line of the file names (test:fp8 for the fp8 faults: the
# reference backend runs no fp8).
# Prints one line per kind and "caught: N/M"; exits 0 only when every fault is caught and every
# clean run passes. Usage: scripts/selftest.sh [path/to/sdpabench [KNOB...]] (default
# build/release/sdpabench); the KNOBs go before each --batch, e.g. --check=sample:4 for the sampled
# check's self-test (CTest e2e.selftest_sampled, docs/trust.md#sampled-checks).
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exe="${1:-$root/build/release/sdpabench}"
knobs=("${@:2}")
[[ -x "$exe" ]] || { echo "selftest: $exe is not an executable (build first)" >&2; exit 2; }
caught=0 total=0 clean_ok=0 bad=0
for f in "$root"/cases/selftest/*.cases; do
    kind="$(basename "$f" .cases)"
    total=$((total + 1))
    faulty_out="$("$exe" --backend="faulty:$kind" "${knobs[@]}" --batch="$f" 2>&1)"; faulty_rc=$?
    clean="$(sed -nE 's/^# clean-backend: *([^ ]+).*/\1/p' "$f" | head -n 1)"
    ref_out="$("$exe" --backend="${clean:-ref}" "${knobs[@]}" --batch="$f" 2>&1)"; ref_rc=$?
    n="$(grep -c ':FAILED' <<<"$faulty_out")"
    cases="$(grep -oE '^tests:[0-9]+' <<<"$faulty_out" | cut -d: -f2)"
    ref_cases="$(grep -oE '^tests:[0-9]+' <<<"$ref_out" | cut -d: -f2)"
    ref_pass="$(grep -oE ' passed:[0-9]+' <<<"$ref_out" | cut -d: -f2)"
    verdict_f="missed" verdict_r="clean run failed"
    if [[ $faulty_rc -eq 1 && -n "$cases" && "$n" -eq "$cases" && "$cases" -gt 0 ]]; then
        verdict_f="caught"; caught=$((caught + 1))
    fi
    if [[ $ref_rc -eq 0 && -n "$ref_cases" && "$ref_pass" == "$ref_cases" && "$ref_cases" -gt 0 ]]; then
        verdict_r="clean run passed"; clean_ok=$((clean_ok + 1))
    fi
    printf '%-28s %-7s (%s/%s cases FAILED) %s\n' "$kind" "$verdict_f" "${n:-0}" "${cases:-?}" "$verdict_r"
    if [[ "$verdict_f" != caught || "$verdict_r" != "clean run passed" ]]; then
        bad=1
        grep -E '^[0-9]+:[A-Z_]+' <<<"$faulty_out" | sed 's/^/    faulty: /'
        grep -vE ':PASSED|^tests:' <<<"$ref_out" | sed 's/^/    ref: /'
    fi
done
echo "caught: $caught/$total"
echo "clean: $clean_ok/$total"
[[ $bad -eq 0 && $total -ge 13 ]]
