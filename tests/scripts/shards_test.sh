#!/usr/bin/env bash
# Shards (docs/ci.md#shards---shardin-scriptsmerge_reportspy): two shards of cases/ci/smoke.cases,
# merged by scripts/merge_reports.py, equal one unsharded run case for case (jsonl, csv and JUnit);
# a missing, repeated or foreign shard is refused. Usage: shards_test.sh SDPABENCH_EXE SOURCE_DIR
set -uo pipefail
exe=$1 src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL (shards): $*"; tail -n 20 "$tmp/out" 2>/dev/null; exit 1; }
cd "$src"
# With the project's known bugs expected, as scripts/run.sh runs smoke: green on every CPU.
reports() { echo --expect=cases/known/expected.jsonl --report=jsonl:"$tmp/$1.jsonl" --report=csv:"$tmp/$1.csv" --report=junit:"$tmp/$1.xml"; }
"$exe" --no-progress $(reports all) --batch=cases/ci/smoke.cases >"$tmp/out" 2>&1 || fail "unsharded run: exit $?"
for i in 0 1; do
  "$exe" --no-progress --shard=$i/2 $(reports s$i) --batch=cases/ci/smoke.cases >"$tmp/out" 2>&1 || fail "shard $i: exit $?"
done
for ext in jsonl csv xml; do
  python3 "$src/scripts/merge_reports.py" "$tmp/m.$ext" "$tmp/s1.$ext" "$tmp/s0.$ext" >"$tmp/out" 2>&1 \
    || fail "merge .$ext: exit $?"
done
python3 - "$tmp" <<'PY' || fail "merged reports differ from the unsharded run"
import csv, json, sys
import xml.etree.ElementTree as ET
t = sys.argv[1]
def cases(path):
    recs = [json.loads(l) for l in open(path)]
    return recs[0]["context"], [r for r in recs[1:] if "end" not in r]
def end(path):  # the end record's object: the last line of a report whose run ended
    return json.loads(open(path).read().splitlines()[-1]).get("end")
# Left out: the wall times and timings, and the implementations inside a plan (their times, and the
# implementation oneDNN's primitive cache hands a case after the cases run before it in its
# process: docs/onednn.md#conventions-and-platform), with the fields derived from them.
HISTORY = ("case_ms", "phases_ms", "perf", "impl_parts", "ref_fallback", "ref_parts", "impls", "vendor_cpu_util")
def same(r):
    return {k: v for k, v in r.items() if k not in HISTORY}
ca, a = cases(f"{t}/all.jsonl")
cm, m = cases(f"{t}/m.jsonl")
assert len(a) == len(m) > 100, (len(a), len(m))
s0 = cases(f"{t}/s0.jsonl")[1]
assert 0 < len(s0) < len(a), "each shard holds part of the run"
for x, y in zip(a, m):
    assert same(x) == same(y), f"case {x['idx']} differs:\n{same(x)}\n{same(y)}"
assert cm["shard"] is None and ca["shard"] is None
# One end record: the shards' counts summed, the end noise of the shard whose context heads the merge.
assert end(f"{t}/m.jsonl")["cases"] == end(f"{t}/all.jsonl")["cases"] == len(a), (end(f"{t}/m.jsonl"), len(a))
assert end(f"{t}/m.jsonl")["noise"] == end(f"{t}/s1.jsonl")["noise"] and cm["noise"] == cases(f"{t}/s1.jsonl")[0]["noise"]
def rows(path):
    lines = [l for l in open(path, newline="") if not l.startswith("# ")]
    timing = lambda k: k in HISTORY or k == "runs" or k.endswith("_ms") or k.startswith(("gflops", "tflops", "gbytes"))
    return [{k: v for k, v in r.items() if not timing(k)} for r in csv.DictReader(lines)]
assert rows(f"{t}/all.csv") == rows(f"{t}/m.csv")
def junit(path):
    s = ET.parse(path).getroot().find("testsuite")
    return {k: s.get(k) for k in ("tests", "failures", "errors", "skipped")}, sorted(c.get("name") for c in s.findall("testcase"))
assert junit(f"{t}/all.xml") == junit(f"{t}/m.xml"), (junit(f"{t}/all.xml")[0], junit(f"{t}/m.xml")[0])
# The merged JUnit names each shard's command and keeps the shard properties of the run.
props = {p.get("name"): p.get("value") for p in ET.parse(f"{t}/m.xml").getroot().find("testsuite").find("properties")}
for i in (0, 1):
    assert f"--shard={i}/2" in props[f"shard.{i}.command"], props
    assert f"shard.{i}.host" in props and f"shard.{i}.start" in props, props
assert props["shard.count"] == "2" and int(props["shard.cases_total"]) == len(a), props
assert "shard.cases_fingerprint" in props and "command" not in props and "shard.index" not in props, props
PY
# Refusals: a missing shard, a shard given twice, a report of an unsharded run.
python3 "$src/scripts/merge_reports.py" "$tmp/x.jsonl" "$tmp/s0.jsonl" >"$tmp/out" 2>&1
[ $? -eq 1 ] && grep -q "missing shard(s) 1 of 2" "$tmp/out" || fail "a missing shard must be refused"
python3 "$src/scripts/merge_reports.py" "$tmp/x.jsonl" "$tmp/s0.jsonl" "$tmp/s0.jsonl" "$tmp/s1.jsonl" >"$tmp/out" 2>&1
[ $? -eq 1 ] && grep -q "shard 0 is given twice" "$tmp/out" || fail "a repeated shard must be refused"
python3 "$src/scripts/merge_reports.py" "$tmp/x.jsonl" "$tmp/s0.jsonl" "$tmp/all.jsonl" >"$tmp/out" 2>&1
[ $? -eq 1 ] && grep -q "not the report of a sharded run" "$tmp/out" || fail "an unsharded report must be refused"
"$exe" --shard=2/2 b1hq1sq8d8 >"$tmp/out" 2>&1
[ $? -eq 2 ] || fail "--shard=2/2 must be a usage error"
# Shards of another case list (same N, same count) are another run; a cut csv row; one shard.
printf 'b1hq2sq16d16\nb1hq2sq16d24\n' >"$tmp/a.cases"
printf 'b1hq2sq16d16\nb1hq2sq16d32\n' >"$tmp/b.cases"
"$exe" --backend=ref --shard=0/2 --report=jsonl:"$tmp/a0.jsonl" --report=csv:"$tmp/a0.csv" --batch="$tmp/a.cases" >/dev/null 2>&1
"$exe" --backend=ref --shard=1/2 --report=jsonl:"$tmp/b1.jsonl" --batch="$tmp/b.cases" >/dev/null 2>&1
python3 "$src/scripts/merge_reports.py" "$tmp/x.jsonl" "$tmp/a0.jsonl" "$tmp/b1.jsonl" >"$tmp/out" 2>&1
[ $? -eq 1 ] && grep -q "different runs (another case list or N)" "$tmp/out" || fail "shards of another case list must be refused"
"$exe" --backend=ref --shard=1/2 --report=csv:"$tmp/a1.csv" --batch="$tmp/a.cases" >/dev/null 2>&1
head -c -20 "$tmp/a1.csv" >"$tmp/cut.csv"
python3 "$src/scripts/merge_reports.py" "$tmp/x.csv" "$tmp/a0.csv" "$tmp/cut.csv" >"$tmp/out" 2>&1
[ $? -eq 1 ] && grep -q "fields, the header" "$tmp/out" || fail "a cut csv row must be refused"
"$exe" --backend=ref --shard=0/1 --tags=k:1 --report=jsonl:"$tmp/one.jsonl" b1hq1sq8d8 >"$tmp/out" 2>&1 || fail "--tags before a problem"
python3 "$src/scripts/merge_reports.py" "$tmp/one_m.jsonl" "$tmp/one.jsonl" >"$tmp/out" 2>&1 || fail "a run of one shard must merge"
python3 "$src/scripts/merge_reports.py" "$tmp/one.jsonl" "$tmp/one.jsonl" >"$tmp/out" 2>&1
[ $? -eq 2 ] || fail "an input as OUT must be refused (exit 2)"
python3 "$src/scripts/merge_reports.py" "$tmp/x.jsonl" "$tmp/missing.jsonl" >"$tmp/out" 2>&1
[ $? -eq 2 ] || fail "a missing input is exit 2"
# An --expect entry for cases of another shard is not named as stale in this one.
printf '{"match": "*n=only_in_one_shard*", "status": "FAILED", "reason": "r"}\n' >"$tmp/exp.jsonl"
printf 'b1hq2sq16d16n=only_in_one_shard\nb1hq2sq16d24\n' >"$tmp/e.cases"
for i in 0 1; do
  "$exe" --backend=ref --shard=$i/2 --expect="$tmp/exp.jsonl" --batch="$tmp/e.cases" >"$tmp/out" 2>&1
  grep -q "matched no case" "$tmp/out" && fail "shard $i named an entry of the other shard as stale"
done
echo "OK (shards)"
