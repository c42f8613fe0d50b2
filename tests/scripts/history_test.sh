#!/usr/bin/env bash
# scripts/history on a store built from generated JSONL reports (sdpabench-store ingest), whose
# values are set so that each rule has one answer:
#   fast   machine m1: 10 ms -> 6 ms at rev 7, and O's worst_ratio 0.2 -> 0.6 there: one finding
#          "faster, and less accurate" (changes flags it; --metric=tflops sees it faster too)
#   lone   on m1 and on host2 (no machine tag: keyed by host, CPU and threads): 1.6x slower from rev 5
#          on m1 only, where libraries.onednn went 3.9 -> 3.10: "this machine only", the library named
#   noisy  m1: 1.5x slower from rev 9; m1's run at rev 10 ran its calibration kernel (the context's
#          noise sample) twice as slow as its others: that run is noisy, the change at 9 is said to
#          be next to it, and the per-case cv flags (high at revs 9 and 10) judge no run
#   jitter m1: dQ's worst_ratio differs every run (a non-deterministic backend), 0.3 then 0.55 from
#          rev 7: one step by Otava's rule, with its p-value, not twelve exact ones
# plus ingest's refusals (a case twice, no context, shards without a run tag), a cut last line (the
# run stays incomplete), --order-by, the case filter, and a store of a newer schema.
# Usage: history_test.sh SOURCE_DIR SDPABENCH_STORE_EXE
set -uo pipefail
src=$1
export SDPABENCH_STORE=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL (history): $*"; echo "--- output:"; tail -n 30 "$tmp/out" 2>/dev/null; exit 1; }
history=$src/scripts/history
db="sqlite:$tmp/h.db"

python3 - "$tmp" "$src/tests/scripts" <<'PY' || fail "generating the reports"
import sys
sys.path.insert(0, sys.argv[2])
import math
from history_reports import case, ctx, wiggle, write as write_in
out = sys.argv[1]
def write(name, lines):
    write_in(out, name, lines)
for rev in range(1, 13):
    m1 = [ctx(rev, "m1", onednn="3.10" if rev >= 5 else "3.9", calib=2.0 if rev == 10 else 1.0),
          case("fast", (10 if rev < 7 else 6) * wiggle(rev, 0), 0.2 if rev < 7 else 0.6, idx=0),
          case("lone", (4 if rev < 5 else 6.4) * wiggle(rev, 1), idx=1),
          case("noisy", (3 if rev < 9 else 4.5) * wiggle(rev, 2), noisy=rev in (9, 10), idx=2),
          case("jitter", None, (0.3 if rev < 7 else 0.55) + 0.02 * math.sin(rev * 1.7), output="dQ", idx=3)]
    write(f"m1.{rev:02d}.jsonl", m1)
    write(f"h2.{rev:02d}.jsonl", [ctx(rev, host="host2"), case("lone", 5 * wiggle(rev, 4))])
PY
"$history" ingest --db="$db" "$tmp"/m1.*.jsonl "$tmp"/h2.*.jsonl >"$tmp/out" 2>&1 || fail "ingest"
[ "$(grep -c 'case(s) stored$' "$tmp/out")" -eq 24 ] || fail "ingest: 24 reports expected stored"

# changes: fast (faster, and less accurate), lone on m1 only, noisy (said noisy), the noisy run,
# the library's change as a context finding, nothing else.
"$history" changes --db="$db" --json >"$tmp/c.json" 2>"$tmp/out"
[ $? -eq 1 ] || fail "changes must exit 1"
python3 - "$tmp/c.json" <<'PY' || fail "changes: $(cat "$tmp/c.json")"
import json, sys
every = json.load(open(sys.argv[1]))
assert sorted(x["kind"] for x in every) == ["change", "change", "change", "context", "noisy run"], every
r = [x for x in every if x["kind"] == "noisy run"][0]
assert (r["machine"], r["rev"], r["cases"]) == ("m1", "10", 3) and "calibration" in r["reasons"][0], r
x = [x for x in every if x["kind"] == "context"][0]
assert (x["machine"], x["rev"], x["context_changes"]) == ("m1", "5", [{"field": "libraries.onednn", "before": "3.9", "after": "3.10"}]), x
c = {x["case"].split("n=")[1] + "@" + x["machine"]: x for x in every if x["kind"] == "change"}
assert sorted(c) == ["fast@m1", "lone@m1", "noisy@m1"], sorted(c)
f = c["fast@m1"]
assert (f["rev"], f["direction"], f["finding"]) == ("7", "faster", "faster, and less accurate"), f
assert f["margins_worse"] == [{"output": "O", "before": 0.2, "after": 0.6}], f
assert abs(f["ratio"] - 0.6) < 0.02 and f["p"] < 0.01 and not f["noisy"], f
l = c["lone@m1"]
assert (l["rev"], l["direction"], l["scope"]) == ("5", "slower", "this machine only"), l
assert l["machines_unchanged"] == ["host2 (CPU X; 2 threads)"] and l["machines_changed"] == ["m1"], l
assert {"field": "libraries.onednn", "before": "3.9", "after": "3.10"} in l["context_changes"], l
n = c["noisy@m1"]
assert (n["rev"], n["direction"], n["noisy"], n["noisy_revs"]) == ("9", "slower", True, ["10"]), n
assert n["context_changes"] == [], n
PY
"$history" changes --db="$db" >"$tmp/out" 2>&1
grep -q "faster, and less accurate" "$tmp/out" || fail "changes table: the joined finding"
grep -q "noisy runs at 10" "$tmp/out" || fail "changes table: the noisy runs"
grep -q "libraries.onednn 3.9 -> 3.10" "$tmp/out" || fail "changes table: the context change"
"$history" changes --db="$db" --json --metric=tflops --case='*n=fast' >"$tmp/c.json" 2>"$tmp/out"
python3 -c "import json,sys; c = json.load(open(sys.argv[1])); assert [(x['rev'], x['direction'], x['metric']) for x in c if x['kind'] == 'change'] == [('7', 'faster', 'tflops')], c" \
  "$tmp/c.json" || fail "changes --metric=tflops --case"

# margins: the exact step of fast's O, and jitter's dQ by Otava (one step, with a p-value).
"$history" margins --db="$db" --json >"$tmp/m.json" 2>"$tmp/out"
[ $? -eq 1 ] || fail "margins must exit 1"
python3 - "$tmp/m.json" <<'PY' || fail "margins: $(cat "$tmp/m.json")"
import json, sys
m = json.load(open(sys.argv[1]))
assert [(x["case"].split("n=")[1], x["output"], x["rev"], x["direction"], x["rule"]) for x in m] == [
    ("fast", "O", "7", "worse", "exact"), ("jitter", "dQ", "7", "worse", "otava")], m
assert m[1]["p"] < 0.001 and m[0]["p"] is None, m  # fast (0.6) ranks before jitter (~0.55) by closeness to 1
PY
"$history" flaky --db="$db" --json >"$tmp/f.json" 2>"$tmp/out"
[ $? -eq 0 ] || fail "flaky must exit 0 with no flaky case"
[ "$(cat "$tmp/f.json")" = "[]" ] || fail "flaky: $(cat "$tmp/f.json")"

# Ordering: by another tag (text, ISO times) or by the start time gives the same revisions here.
"$history" runs --db="$db" --json --order-by=commit_time >"$tmp/r.json" 2>"$tmp/out" || fail "runs --order-by"
python3 -c "import json,sys; r = json.load(open(sys.argv[1])); assert len(r) == 24 and r[0]['commit_time'] == '2026-11-01T00:00:00Z', r[0]" \
  "$tmp/r.json" || fail "runs --order-by=commit_time"
"$history" changes --db="$db" --json --order-by=commit_time --case='*n=lone' >"$tmp/c.json" 2>"$tmp/out"
python3 -c "import json,sys; c = json.load(open(sys.argv[1])); assert [x['rev'] for x in c if x['kind'] == 'change'] == ['2026-11-05T00:00:00Z'], c" \
  "$tmp/c.json" || fail "changes --order-by=commit_time"

# ingest's refusals: each names the file and line, stores nothing of that file, exits 1.
python3 - "$tmp" <<'PY'
import json, os, sys
t = sys.argv[1]
ctx = {"context": {"host": "h", "start": "2026-12-20T00:00:00Z", "command": "x", "tags": {"rev": "20"}}}
rec = {"idx": 0, "id": "a", "status": "PASSED", "backend": "ref", "outputs": []}
def w(name, lines, tail=""):
    with open(os.path.join(t, name), "w") as f:
        f.write("".join(json.dumps(l) + "\n" for l in lines) + tail)
w("twice.jsonl", [ctx, rec, dict(rec, idx=1)])
w("nocontext.jsonl", [rec])
sh = {"context": dict(ctx["context"], shard={"index": 0, "count": 2, "cases_total": 2, "cases_fingerprint": "f"})}
w("shard.jsonl", [sh, rec])
w("cut.jsonl", [dict(ctx, context=dict(ctx["context"], start="2026-12-21T00:00:00Z")), rec], '{"idx": 1, "id": "b", "sta')
PY
"$history" ingest --db="$db" "$tmp/twice.jsonl" >"$tmp/out" 2>&1
[ $? -eq 1 ] || fail "a case twice: exit 1 expected"
grep -qF "twice.jsonl:3: case 'a' of run 'h 2026-12-20T00:00:00Z x' is given twice (first at $tmp/twice.jsonl:2); nothing of this file was stored" "$tmp/out" \
  || fail "a case twice: message"
"$history" ingest --db="$db" "$tmp/nocontext.jsonl" >"$tmp/out" 2>&1
[ $? -eq 1 ] && grep -q "nocontext.jsonl:1: no context record" "$tmp/out" || fail "no context record"
"$history" ingest --db="$db" "$tmp/shard.jsonl" >"$tmp/out" 2>&1
[ $? -eq 1 ] && grep -q "shard 0 of 2 has no run tag" "$tmp/out" || fail "a shard without a run tag"
"$history" ingest --db="$db" "$tmp/cut.jsonl" >"$tmp/out" 2>&1 || fail "a cut last line is stored"
grep -q "1 case(s) stored; its last line is cut (a killed run): the run stays incomplete" "$tmp/out" || fail "cut: message"
"$history" runs --db="$db" --json >"$tmp/r.json" 2>"$tmp/out"
python3 - "$tmp/r.json" <<'PY' || fail "runs after the refusals: $(cat "$tmp/r.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert len(r) == 25, len(r)  # the 24, and the cut one; nothing of the refused files
cut = [x for x in r if x["rev"] == "20"]
assert len(cut) == 1 and not cut[0]["complete"] and cut[0]["cases"] == 1, cut
PY
"$history" flaky --db="$db" >"$tmp/out" 2>&1
grep -q "1 incomplete run(s) left out" "$tmp/out" || fail "the note on incomplete runs"

# A store of a newer schema, and a store that is none, are refused (exit 2).
cp "$tmp/h.db" "$tmp/new.db"
python3 -c "import sqlite3,sys; c = sqlite3.connect(sys.argv[1]); c.execute('UPDATE store_schema SET version = 9'); c.commit()" "$tmp/new.db"
"$history" changes --db="sqlite:$tmp/new.db" >"$tmp/out" 2>&1
[ $? -eq 2 ] && grep -q "the store has schema version 9" "$tmp/out" || fail "a newer schema"
"$history" changes --db="sqlite:$tmp/none.db" >"$tmp/out" 2>&1
[ $? -eq 2 ] && grep -q "no store at $tmp/none.db" "$tmp/out" || fail "no store"
# What a breaker found: a new level only two nights long is the latest outliers, not a change one
# revision early; timings that are not positive numbers and odd noise samples are left out, not a
# traceback or a noisy run; bad usage exits 2 with the reason.
python3 - "$tmp/odd" "$src/tests/scripts" <<'PY' || fail "generating the odd reports"
import os, sys
sys.path.insert(0, sys.argv[2])
from history_reports import case, ctx, wiggle, write
out = sys.argv[1]
os.makedirs(out)
for rev in range(1, 9):
    c = ctx(rev, "m1")
    if rev == 3:
        c["context"]["noise"] = {"start": {"calib_ms": -1, "calib_slow": True, "jiffies": [1, 2]}}
    if rev == 4:
        c["context"]["noise"] = "garbage"
    write(out, f"odd.{rev}.jsonl", [c, case("two", (1 if rev < 7 else 4) * wiggle(rev, 0), idx=0),
                                   case("zero", 0 if rev == 5 else 2 * wiggle(rev, 1), idx=1)])
PY
odd="sqlite:$tmp/odd.db"
"$history" ingest --db="$odd" "$tmp"/odd/*.jsonl >"$tmp/out" 2>&1 || fail "ingest of the odd reports"
"$history" changes --db="$odd" --json >"$tmp/c.json" 2>"$tmp/out"
[ $? -eq 0 ] || fail "odd: changes must exit 0 (nothing confirmed)"
grep -q "1 timing(s) that are not positive numbers left out" "$tmp/out" || fail "odd: the note on the zero timing"
python3 - "$tmp/c.json" <<'PY' || fail "odd: $(cat "$tmp/c.json")"
import json, sys
x = json.load(open(sys.argv[1]))
assert [(f["kind"], f["rev"], f["latest"]) for f in x] == [("outlier", "7", True), ("outlier", "8", True)], x
PY
for bad in "--window=0" "--min-magnitude=-1" "--max-pvalue=2" "--machine=nomatch" "--order-by=nope"; do
  "$history" changes --db="$odd" $bad >"$tmp/out" 2>&1
  [ $? -eq 2 ] || fail "changes $bad must exit 2"
  grep -q Traceback "$tmp/out" && fail "changes $bad: a traceback"
done
grep -q "no run has a nope tag; the runs' tags: commit_time, machine, rev" "$tmp/out" || fail "--order-by=nope: the tags"
"$history" runs --db=postgresql://u:secret@127.0.0.1:1/db >"$tmp/out" 2>&1
[ $? -eq 2 ] && ! grep -q secret "$tmp/out" && grep -q "postgresql:postgresql://" "$tmp/out" || fail "a URL without KIND: must be refused without its password"
python3 - "$tmp" "$src/tests/scripts" <<'PY' || fail "generating the mistyped reports"
import sys
sys.path.insert(0, sys.argv[2])
from history_reports import case, ctx, write
c = case("a", 1.0)
c["id"] = 5
write(sys.argv[1], "idnum.jsonl", [ctx(30, "m9"), c])
write(sys.argv[1], "endstr.jsonl", [ctx(31, "m9"), case("a", 1.0), {"end": {"cases": "three"}}])
PY
"$SDPABENCH_STORE" ingest --db="$odd" "$tmp/idnum.jsonl" >"$tmp/out" 2>&1
[ $? -eq 1 ] && grep -q "idnum.jsonl:2: a case record without a string \"id\"; nothing of this file was stored" "$tmp/out" \
  || fail "ingest: a case id that is not a string"
"$SDPABENCH_STORE" ingest --db="$odd" "$tmp/endstr.jsonl" "$tmp/nowhere.jsonl" >"$tmp/out" 2>&1
[ $? -eq 2 ] || fail "ingest: a missing file is bad usage (exit 2)"
"$SDPABENCH_STORE" ingest --db="$odd" "$tmp/endstr.jsonl" >"$tmp/out" 2>&1 || fail "ingest: an end record with an odd count"
# plot's status charts stack sdpabench's statuses (--list-statuses=json of $SDPABENCH) in its
# table's order, the errors last; without an sdpabench that prints the table, plot exits 2 saying so.
printf '%s\n' '#!/bin/sh' "echo '[{\"name\": \"B_ERR\", \"what\": \"\", \"error\": true}, {\"name\": \"A_OK\", \"what\": \"\", \"error\": false}, {\"name\": \"C_OK\", \"what\": \"\", \"error\": false}]'" >"$tmp/statuses"
chmod +x "$tmp/statuses"
SDPABENCH=$tmp/statuses python3 -c "import sys; sys.path.insert(0, sys.argv[1]); from sdpabench_history.page import status_order; \
assert status_order() == ['A_OK', 'C_OK', 'B_ERR'], status_order()" "$src/scripts" >"$tmp/out" 2>&1 || fail "plot's status order"
SDPABENCH=$tmp/nowhere "$history" plot --db="$db" --out="$tmp/page" >"$tmp/out" 2>&1
[ $? -eq 2 ] && grep -q "nowhere --list-statuses=json): cannot run it" "$tmp/out" || fail "plot without sdpabench must exit 2 saying so"
echo "history: passed"
