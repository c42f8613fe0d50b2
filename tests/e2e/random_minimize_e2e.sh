#!/usr/bin/env bash
# End-to-end checks of --random (docs/knobs_run.md#random-cases---randomn) and --minimize
# (docs/knobs_run.md#minimizing-a-failure---minimize) through the real executable: random cases PASS
# on the reference, their listed repros run the same cases, a FAILED case shrinks to a repro that
# fails standalone the same way, the reports carry it, and bad values are usage errors.
# Usage: random_minimize_e2e.sh SDPABENCH_EXE SOURCE_DIR
set -uo pipefail
exe=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "E2E FAIL (random/minimize): $*"; echo "--- output tail:"; tail -n 20 "$tmp/out" 2>/dev/null; exit 1; }
run() { "$exe" "$@" >"$tmp/out" 2>"$tmp/err"; rc=$?; }
summary_field() { grep -oE "(^| )$1:[0-9]+" "$tmp/out" | tail -n 1 | cut -d: -f2; }
cd "$src"

# 1. 300 random cases on the reference: none FAILED (every knob drawn: the reference agrees with itself
#    and the checks raise no false alarm), exit 0, 300 counted.
run --backend=ref --seed=3 --random=300 --no-progress
[ "$rc" -eq 0 ] || fail "--random=300 on ref: exit $rc, expected 0"
[ "$(summary_field tests)" = 300 ] || fail "--random=300 must run 300 cases"
[ "$(summary_field failed)" = 0 ] || fail "--random=300 on ref FAILED some case"

# 2. --mode=L lists the drawn cases; each listed repro, run on its own, is the same case (same id).
run --mode=L --backend=ref --seed=9 --random=6
[ "$rc" -eq 0 ] || fail "--mode=L --random=6: exit $rc"
[ "$(grep -c '^[0-9]*:LISTED ' "$tmp/out")" = 6 ] || fail "--mode=L --random=6 must list 6 cases"
sed -n 's/^[0-9]*:LISTED .*__REPRO: /--reset /p' "$tmp/out" >"$tmp/listed.cases"  # knobs last to the end of a file
"$exe" --mode=L --batch="$tmp/listed.cases" >"$tmp/relisted" 2>&1 || fail "the listed repros do not parse"
diff <(sed -n 's/.*__REPRO: //p' "$tmp/out") <(sed -n 's/.*__REPRO: //p' "$tmp/relisted") >/dev/null ||
  fail "the listed repros do not list back as the same cases"
# Given knobs are kept: every drawn case is bwd.
run --mode=L --dir=bwd --random=20
[ "$(grep -c -- '--dir=bwd' "$tmp/out")" = 20 ] || fail "--dir=bwd --random=20 must draw only bwd cases"

# 3. --minimize: a wrong kernel on a large case shrinks; the minimized repro FAILS standalone the same
#    way and PASSES on the reference; the JSONL record carries it.
run --minimize --report=jsonl:"$tmp/min.jsonl" --backend=faulty:drop_last_key --dir=fwd_t --fill=normal \
  b2hq8hkv2sq100skv77d48
[ "$rc" -eq 1 ] || fail "--minimize on a FAILED case: exit $rc, expected 1"
line=$(grep -m1 '^    minimized (' "$tmp/out") || fail "no 'minimized' line"
minimized=${line#*): }
case "$minimized" in *"--backend=faulty:drop_last_key"*) ;; *) fail "minimized repro lost its backend: $minimized" ;; esac
# shellcheck disable=SC2086  # the repro is a list of case-language tokens
"$exe" $minimized >"$tmp/again" 2>&1
[ $? -eq 1 ] || fail "the minimized repro does not FAIL standalone: $minimized"
# shellcheck disable=SC2086
"$exe" ${minimized/--backend=faulty:drop_last_key/--backend=ref} >/dev/null 2>&1 ||
  fail "the minimized case does not PASS on the reference: $minimized"
python3 - "$tmp/min.jsonl" "$minimized" <<'EOF' || fail "the JSONL record has no or a wrong 'minimized'"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])][1:]
m = recs[0]["minimized"]
assert m["repro"] == sys.argv[2], (m, sys.argv[2])
assert m["signature"] == "O:bound" and m["runs"] > 0 and m["steps"] > 0 and m["hit_limit"] is False, m
EOF
# A case that PASSED is not minimized; a run limit is honoured.
run --minimize --backend=ref b1hq2sq16d16
grep -q 'minimized (' "$tmp/out" && fail "a PASSED case must not be minimized"
run --minimize --minimize-max-runs=3 --backend=faulty:drop_last_key --dir=fwd_t --fill=normal b2hq8hkv2sq100skv77d48
grep -q 'minimized (3 runs, .*run limit reached' "$tmp/out" || fail "--minimize-max-runs=3 must stop at 3 runs"

# A known-bug file whose cases a correct kernel gets MISTRUSTED on (the right dQ is zero): a fix
# must show as XPASS (exit 4), here simulated with the entries pointed at the reference.
sed 's/"backend": "onednn"/"backend": "ref"/' cases/known/expected.jsonl >"$tmp/expected_ref.jsonl"
run --backend=ref --expect="$tmp/expected_ref.jsonl" --batch=cases/known/onednn-bwd-s1-size1-strides.cases
[ "$rc" -eq 4 ] && [ "$(summary_field xpass)" = 4 ] || fail "a fixed S_q = 1 bug must be XPASS: exit $rc"

# A FAILED case of a longer run is rerun alone in a fresh process; one that then passes says so.
run --backend=test:stateful --report=jsonl:"$tmp/alone.jsonl" b1hq2sq16d16 b1hq2sq16d32
[ "$rc" -eq 1 ] || fail "test:stateful: exit $rc, expected 1"
grep -q '^1:FAILED .*run alone in a fresh process it is PASSED' "$tmp/out" || fail "case 1 must say it passes alone"
python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1])][2]; assert r['alone_status']=='PASSED', r" \
  "$tmp/alone.jsonl" || fail "jsonl alone_status must be PASSED"
run --backend=faulty:dq_no_scale --dir=bwd b1hq2sq32d64 b1hq2sq32d32
grep -q 'run alone' "$tmp/out" && fail "a failure that reproduces alone must not be flagged"
# --no-rerun-failed: the same run reruns nothing (a GPU check's time), the failure stays FAILED.
run --no-rerun-failed --backend=test:stateful --report=jsonl:"$tmp/noalone.jsonl" b1hq2sq16d16 b1hq2sq16d32
[ "$rc" -eq 1 ] && grep -q '^1:FAILED ' "$tmp/out" || fail "--no-rerun-failed with test:stateful: exit $rc, expected 1"
grep -q 'run alone' "$tmp/out" && fail "--no-rerun-failed must not rerun the FAILED case"
python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1])][2]; assert r['alone_status'] is None, r" \
  "$tmp/noalone.jsonl" || fail "--no-rerun-failed: jsonl alone_status must be null"

# 4. Bad values are usage errors (exit 2) that name the rule.
run --random=0
[ "$rc" -eq 2 ] && grep -q -- '--random needs a case count from 1 to 1000000' "$tmp/err" || fail "--random=0: exit $rc"
run --random=12x
[ "$rc" -eq 2 ] || fail "--random=12x: exit $rc, expected 2"
run --minimize-max-runs=0 b1hq1sq8d8
[ "$rc" -eq 2 ] || fail "--minimize-max-runs=0: exit $rc, expected 2"
run --backend=ref --result-fd=9 b1hq1sq8d8
[ "$rc" -eq 2 ] && grep -q -- '--result-fd=9: not a file descriptor open for writing' "$tmp/err" || fail "--result-fd=9 (closed): exit $rc"
run --result-fd=1 b1hq1sq8d8 b1hq1sq8d16
[ "$rc" -eq 2 ] && grep -q -- '--result-fd needs a run of exactly one case' "$tmp/err" || fail "--result-fd with 2 cases: exit $rc"
echo "E2E OK (random/minimize)"
