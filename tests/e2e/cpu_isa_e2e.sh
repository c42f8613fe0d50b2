#!/usr/bin/env bash
# Verdicts that hold on every CPU (issue 36): --cpu-isa levels, each in a process of its own, in one
# run and in the run's order; a level the CPU lacks and a backend without an ISA cap SKIPPED with the
# reason; a level's repro line capping its own process; a timeout that kills a level's worker and
# the next case that starts a new one; --threads reaching the vendor and the run context.
# Usage: cpu_isa_e2e.sh SDPABENCH_EXE SOURCE_DIR
set -uo pipefail
exe=$1 src=$2
e2e_label=cpu_isa
. "$(dirname "${BASH_SOURCE[0]}")/e2e_lib.sh"
cd "$src"
# The total line, not a level's (summary_field reads the last match, and the level lines follow it).
total_field() { grep -E '^tests:' "$tmp/out" | tail -n 1 | grep -oE "(^| )$1:[0-9]+" | cut -d: -f2; }

"$exe" --version | grep -q '^onednn:' || { echo "cpu_isa e2e: no oneDNN in this build, skipped"; exit 0; }
best=$("$exe" --version | sed -n 's/^onednn:.*ISA \([a-z0-9_]*\).*/\1/p')
[ -n "$best" ] || fail "--version names no oneDNN ISA"

# 1. Two levels and the default, interleaved by the knob's expansion: results in the run's order,
#    each saying its level, the repro carrying it, a summary line per level.
run --cpu-isa=avx2,default --dir=fwd_t,bwd --report=jsonl:"$tmp/m.jsonl" b1hq2sq32d16 b2hq2hkv1sq16skv24d8
[ "$rc" -eq 0 ] || fail "mixed levels: exit $rc"
[ "$(total_field tests)" = 8 ] && [ "$(total_field passed)" = 8 ] || fail "mixed levels: 8 PASSED expected"
grep -E '^[0-9]+:' "$tmp/out" | cut -d: -f1 | tr '\n' ' ' | grep -qx '0 1 2 3 4 5 6 7 ' || fail "results out of the run's order"
grep -q '^3:PASSED .*__REPRO: --dir=bwd b1hq2sq32d16$' "$tmp/out" || fail "a default-level repro names no level"
grep -q '^0:PASSED .*__REPRO: --cpu-isa=avx2 b1hq2sq32d16$' "$tmp/out" || fail "the avx2 repro carries --cpu-isa=avx2"
grep -q '^cpu-isa=avx2: tests:4 passed:4 ' "$tmp/out" && grep -q '^cpu-isa=default: tests:4 passed:4 ' "$tmp/out" \
  || fail "one summary line per level"
python3 - "$tmp/m.jsonl" "$best" <<'PY' || fail "the results do not say the level they ran at"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
ctx, rs = recs[0]["context"], [r for r in recs[1:] if "end" not in r]
assert ctx["isa"] == sys.argv[2], ctx
for r in rs:
    want = "avx2" if r["cpu_isa"] == "avx2" else sys.argv[2]
    assert r["isa"] == want, (r["id"], r["cpu_isa"], r["isa"])
    assert all("avx512" not in k and "amx" not in k for k in r["impls"].split()) or r["cpu_isa"] != "avx2", r["impls"]
assert [r["cpu_isa"] for r in rs].count("avx2") == 4
PY

# 2. The repro line of a level runs alone, capping its own process.
run --report=jsonl:"$tmp/one.jsonl" --cpu-isa=avx2 --dir=bwd b1hq2sq32d16
[ "$rc" -eq 0 ] && grep -q '^0:PASSED ' "$tmp/out" || fail "a level's repro alone: exit $rc"
python3 -c "import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; assert r[0]['context']['isa']=='avx2' and r[1]['isa']=='avx2', r[1]['isa']" \
  "$tmp/one.jsonl" || fail "a level's repro alone must run at that level"

# 3. A level the CPU lacks, a backend without a cap, a type the level has no kernel for: SKIPPED
#    with the reason; a bad level is a usage error naming the accepted ones.
case "$best" in
  avx10_2*) ;;
  *)
    run --cpu-isa=avx10_2_512_amx_2 b1hq2sq16d16
    [ "$rc" -eq 0 ] && grep -q "^0:SKIPPED (--cpu-isa=avx10_2_512_amx_2: this CPU lacks that level (onednn dispatches to " "$tmp/out" \
      || fail "a level the CPU lacks must be SKIPPED with the reason: exit $rc" ;;
esac
run --cpu-isa=avx2 --backend=ref b1hq2sq16d16
[ "$rc" -eq 0 ] && grep -q "^0:SKIPPED (--cpu-isa=avx2: backend ref has no ISA cap" "$tmp/out" || fail "a backend without a cap"
run --cpu-isa=avx2 --dt=bf16 b1hq2sq16d16
[ "$rc" -eq 0 ] && grep -q "^0:SKIPPED (bf16 needs avx512_core or avx2_vnni_2; oneDNN dispatches to avx2 here)" "$tmp/out" \
  || fail "bf16 at avx2 must be SKIPPED naming the level"
run --cpu-isa=avx513 b1hq2sq16d16
[ "$rc" -eq 3 ] && grep -q "unknown value 'avx513' for --cpu-isa (accepted: default|all|sse41|" "$tmp/out" || fail "a bad level: exit $rc"
run --mode=L --cpu-isa=all b1hq2sq16d16
[ "$rc" -eq 0 ] && grep -q "__REPRO: --cpu-isa=sse41 b1hq2sq16d16" "$tmp/out" && grep -q "__REPRO: --cpu-isa=$best b1hq2sq16d16" "$tmp/out" \
  || fail "--cpu-isa=all must list every level up to $best"

# 4. A timeout kills a level's worker (its process group); the next case of that level starts a new one.
run --cpu-isa=avx2 --timeout-per-case=1 --report=jsonl:"$tmp/to.jsonl" --dir=bwd b1hq16sq8192d128 b1hq2sq16d16
grep -q '^0:FAILED (timeout: ' "$tmp/out" || fail "the slow case must time out"
grep -q '^1:PASSED ' "$tmp/out" || fail "the case after a timeout must run in a new worker"
grep -q '^cpu-isa=avx2: tests:2 passed:1 .* failed:1 ' "$tmp/out" || fail "the timed-out case counts at its level"
python3 - "$tmp/to.jsonl" <<'PY' || fail "a timed-out case keeps what it was"
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])][1]
assert r["timed_out"] and r["cpu_isa"] == "avx2" and r["dir"] == "bwd" and r["B"] == 1 and r["S_q"] == 8192, r
ph = r["phases_ms"]
assert abs(sum(ph.values()) - r["case_ms"]) <= 0.02 * r["case_ms"], (ph, r["case_ms"])
PY
run --cpu-isa=avx2,default --timeout-per-case=60 --dir=bwd b1hq2sq16d16 b1hq2sq24d16
[ "$rc" -eq 0 ] && [ "$(total_field passed)" = 4 ] || fail "cases of two levels under --timeout-per-case: exit $rc"
run --cpu-isa=avx2,default --isolate --dir=bwd b1hq2sq16d16
[ "$rc" -eq 0 ] && [ "$(total_field passed)" = 2 ] || fail "cases of two levels under --isolate: exit $rc"

# 5. --threads reaches the vendor, and the context says so; a count past the CPUs is a usage error.
run --threads=1 --report=jsonl:"$tmp/t.jsonl" --dir=bwd b1hq2sq32d16
[ "$rc" -eq 0 ] || fail "--threads=1: exit $rc"
python3 - "$tmp/t.jsonl" <<'PY' || fail "--threads=1 must reach the run context and oneDNN"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
c = recs[0]["context"]
assert c["threads"] == 1 and c["cpus"] == 1, c
assert any(v.startswith("onednn: ") and " 1 (" in v for v in c["vendor_threads"]), c["vendor_threads"]
assert 0 < recs[1]["vendor_cpu_util"] < 1.5, recs[1]["vendor_cpu_util"]
PY
run --threads=100000 b1hq2sq16d16
[ "$rc" -eq 2 ] && grep -q "command line: error: --threads=100000: this process may run on [0-9]* CPU(s)" "$tmp/out" \
  || fail "--threads past the CPUs: exit $rc"
echo "cpu_isa e2e: ok"
