#!/usr/bin/env bash
# End to end: the Slurm recipe of docs/ci.md#slurm, as it is, on a real single-node Slurm cluster
# (scripts/slurm/cluster.sh, CTest fixture "slurm") writing into a real PostgreSQL store
# (scripts/pg_cluster.sh, fixture "postgresql"). scripts/slurm/submit.sh submits the project's
# own job scripts (scripts/slurm/nightly.sbatch as a 4-task array over cases/ci/smoke.cases on the
# ref backend, then nightly-merge.sbatch with --dependency=afterok), unmodified:
#   A  the 4 shards write at once: every task and the merge job complete; the merged jsonl and
#      JUnit reports hold the verdicts of an unsharded run case for case; the store holds each case
#      once, with the unsharded run's statuses, and the run complete; scripts/history reads it.
#   B  one task (shard 2) is cancelled (scancel) while it writes: the merge job is cancelled with
#      it, the run is incomplete and keeps every case the shard finished (its jsonl's); shard 2
#      resubmitted alone (--tasks=2) completes the run without duplicating a case, as in A.
#   C  a shard of another case list (one more case) joining run A is refused, naming the case
#      lists and the commands; its task fails, the merge job after it is cancelled, and run A's
#      rows are unchanged. (A shard of another build is refused likewise: the unit test
#      Store.AShardOfAnotherBuildOrCaseListIsRefusedWhenItJoinsNamingWhatDiffers.)
# Exit 77 (SKIPPED) with the fixture's reason where the cluster could not start (SLURM_DIR/skip).
# Usage: slurm_e2e.sh SDPABENCH_EXE SOURCE_DIR PG_URL_FILE SLURM_DIR
set -uo pipefail
exe=$1 src=$2 pgfile=$3 sdir=$4
if [ -f "$sdir/skip" ]; then echo "SKIPPED: $(cat "$sdir/skip")"; exit 77; fi
tmp=$(mktemp -d /tmp/sdpabench-slurm-e2e.XXXXXX)
keep=0
trap '[ "$keep" = 1 ] || rm -rf "$tmp"' EXIT
fail() {
  echo "E2E FAIL (slurm): $*"
  for f in "$tmp"/*/slurm-*.out "$tmp"/*/merge-*.out "$tmp/out"; do [ -f "$f" ] && { echo "--- $f:"; tail -n 15 "$f"; }; done
  echo "--- (the files stay in $tmp; Slurm's logs in $sdir/log)"
  keep=1
  exit 1
}
[ -f "$sdir/env" ] || fail "no cluster in $sdir (scripts/slurm/cluster.sh start $sdir)"
. "$sdir/env"
pg=$(cat "$pgfile") || fail "no PostgreSQL URL in $pgfile (scripts/pg_cluster.sh start)"
pgdb="slurm$$"
psql -q "$pg" -c "CREATE DATABASE $pgdb" >/dev/null || fail "cannot create the PostgreSQL database"
pg=${pg%/*}/$pgdb
db=postgresql:$pg
sql() { psql -X -At "$pg" -c "$1"; }
args=(--backend=ref --batch=cases/ci/smoke.cases)
t_start=$SECONDS

# The unsharded run: what every sharded run must give, case for case.
(cd "$src" && "$exe" --no-progress --tags=run:whole "${args[@]}" --report=jsonl:"$tmp/whole.jsonl" \
  --report=junit:"$tmp/whole.xml" --report="$db" >"$tmp/out" 2>&1) || fail "the unsharded run exited $?"
n=$(grep -vcE '^\{"(context|end)":' "$tmp/whole.jsonl")  # the case lines
[ "$n" -gt 100 ] || fail "the unsharded run has $n cases"
echo "slurm e2e: the unsharded run: $n cases in $((SECONDS - t_start)) s"

# submit NAME ARGS...: scripts/slurm/submit.sh into $tmp/NAME; sets $array and $merge.
submit() {
  local name=$1 line
  shift
  line=$(bash "$src/scripts/slurm/submit.sh" --out="$tmp/$name" --db="$db" --exe="$exe" "$@") || fail "submit.sh $* failed"
  read -r _ array _ merge <<<"$line"
  [ -n "$merge" ] || fail "submit.sh printed '$line'"
}
# wait_gone JOB...: until no task of these jobs is pending or running (300 s at most).
wait_gone() {
  local ids
  ids=$(IFS=,; echo "$*")
  for _ in $(seq 3000); do
    [ -z "$(squeue -h -j "$ids" -o %i 2>/dev/null)" ] && return 0
    sleep 0.1
  done
  fail "jobs $ids still queued or running after 300 s: $(squeue -j "$ids")"
}
# states JOB: "TASK:STATE:EXIT" for each task of a job (TASK "-" for a job that is not an array).
states() {
  scontrol -o show job "$1" | sed -n 's/.*ArrayTaskId=\([^ ]*\).*JobState=\([A-Z_]*\).*ExitCode=\([0-9:]*\).*/\1:\2:\3/p; t; s/.*JobState=\([A-Z_]*\).*ExitCode=\([0-9:]*\).*/-:\1:\2/p' | sort
}
# same_as_whole NAME RUN: the merged reports of $tmp/NAME and the store's rows of RUN hold the
# unsharded run's verdicts, case for case, each case once, and RUN is complete.
same_as_whole() {
  local name=$1 run=$2
  python3 - "$tmp/whole.jsonl" "$tmp/$name/merged.jsonl" "$tmp/whole.xml" "$tmp/$name/merged.xml" <<'PY' || fail "$name: the merged reports differ from the unsharded run's"
import json, sys
import xml.etree.ElementTree as ET
def jsonl(p):
    rows = [r for r in map(json.loads, open(p)) if "context" not in r and "end" not in r]
    return [(r["idx"], r["id"], r["status"]) for r in rows]
w, m = jsonl(sys.argv[1]), jsonl(sys.argv[2])
assert w == m, [(a, b) for a, b in zip(w, m) if a != b][:5] or (len(w), len(m))
def junit(p):
    verdict = lambda tc: tuple(sorted(c.tag for c in tc if c.tag in ("failure", "error", "skipped")))
    return sorted((tc.get("name"), verdict(tc)) for tc in ET.parse(p).getroot().iter("testcase"))
w, m = junit(sys.argv[3]), junit(sys.argv[4])
assert w == m and len(w) == len(jsonl(sys.argv[1])), (len(w), len(m), [a for a in w if a not in m][:3])
PY
  [ "$(sql "SELECT COUNT(*), COUNT(DISTINCT case_id) FROM cases WHERE run_key = '$run'")" = "$n|$n" ] ||
    fail "$name: the store holds $(sql "SELECT COUNT(*), COUNT(DISTINCT case_id) FROM cases WHERE run_key = '$run'") (rows|ids) of run $run, expected $n|$n"
  local differ
  differ=$(sql "SELECT COUNT(*) FROM (SELECT case_id, status FROM cases WHERE run_key = '$run') s
                FULL JOIN (SELECT case_id, status FROM cases WHERE run_key = 'whole') w USING (case_id)
                WHERE s.status IS DISTINCT FROM w.status")
  [ "$differ" = 0 ] || fail "$name: $differ case(s) of run $run differ from the unsharded run's rows in the store"
  [ "$(sql "SELECT parts, parts_complete, complete FROM run_state WHERE run_key = '$run'")" = "4|4|1" ] ||
    fail "$name: run_state of $run: $(sql "SELECT * FROM run_state WHERE run_key = '$run'")"
}

# A: four shards at once, then the merge job.
t0=$SECONDS
submit a --shards=4 --run=sharded -- "${args[@]}"
wait_gone "$array" "$merge"
[ "$(states "$array" | tr '\n' ' ')" = "0:COMPLETED:0:0 1:COMPLETED:0:0 2:COMPLETED:0:0 3:COMPLETED:0:0 " ] ||
  fail "A: the array's tasks: $(states "$array" | tr '\n' ' ')"
[ "$(states "$merge")" = "-:COMPLETED:0:0" ] || fail "A: the merge job: $(states "$merge")"
same_as_whole a sharded
grep -q "^sharded " "$tmp/a/merge-$merge.out" || fail "A: scripts/history runs in the merge job did not list the run"
"$src/scripts/history" runs --db="$db" --json >"$tmp/runs.json" 2>"$tmp/out" || fail "A: history runs exited $?"
python3 -c "import json, sys
runs = {r['run']: r for r in json.load(open(sys.argv[1]))}
r = runs['sharded']
assert r['complete'] and r['parts'] == '4/4', r" "$tmp/runs.json" || fail "A: history runs: $(cat "$tmp/runs.json")"
echo "slurm e2e: A (4 shards at once, then the merge job): $((SECONDS - t0)) s"

# B: shard 2 cancelled while it writes, then resubmitted alone.
t0=$SECONDS
submit b --shards=4 --run=cancelled -- "${args[@]}"
cancelled=""
for _ in $(seq 3000); do
  if [ "$(sql "SELECT COUNT(*) FROM cases WHERE run_key = 'cancelled' AND part = 2")" -ge 3 ]; then
    [ "$(sql "SELECT complete FROM run_parts WHERE run_key = 'cancelled' AND part = 2")" = 0 ] ||
      fail "B: shard 2 finished before it could be cancelled (a batch too short for this machine?)"
    scancel "${array}_2"
    cancelled=1
    break
  fi
  sleep 0.1
done
[ -n "$cancelled" ] || fail "B: shard 2 stored no 3 cases within 300 s"
wait_gone "$array" "$merge"
[ "$(states "$array" | tr '\n' ' ')" = "0:COMPLETED:0:0 1:COMPLETED:0:0 2:CANCELLED:0:15 3:COMPLETED:0:0 " ] ||
  fail "B: the array's tasks after the cancel: $(states "$array" | tr '\n' ' ')"
[ "$(states "$merge" | cut -d: -f2)" = CANCELLED ] || fail "B: the merge job after a cancelled task: $(states "$merge")"
[ "$(sql "SELECT parts, parts_complete, complete FROM run_state WHERE run_key = 'cancelled'")" = "4|3|0" ] ||
  fail "B: run_state after the cancel: $(sql "SELECT * FROM run_state WHERE run_key = 'cancelled'")"
# Every case shard 2 finished (its jsonl, written before the store in --report order) is stored,
# save the one it may have been killed between the two.
sql "SELECT case_id FROM cases WHERE run_key = 'cancelled' AND part = 2" >"$tmp/b-stored.txt"
python3 - "$tmp/b/shard.2.jsonl" "$tmp/b-stored.txt" <<'PY' || fail "B: the cancelled shard's cases in the store and in its jsonl differ"
import json, sys
done = [r["id"] for r in map(json.loads, open(sys.argv[1]).read().splitlines()[1:]) if "end" not in r]
stored = open(sys.argv[2]).read().splitlines()
assert len(stored) >= 3 and set(stored) <= set(done) and len(done) - len(stored) <= 1, (len(done), len(stored))
print(f"slurm e2e: B: the cancelled shard finished {len(done)} case(s), the store holds {len(stored)}")
PY
"$src/scripts/history" runs --db="$db" --json >"$tmp/runs.json" 2>"$tmp/out" || fail "B: history runs exited $?"
python3 -c "import json, sys
runs = {r['run']: r for r in json.load(open(sys.argv[1]))}
assert not runs['cancelled']['complete'] and runs['cancelled']['parts'] == '4/4', runs['cancelled']" "$tmp/runs.json" ||
  fail "B: history runs does not list the cancelled run as incomplete: $(cat "$tmp/runs.json")"
submit b --tasks=2 --shards=4 --run=cancelled -- "${args[@]}"
wait_gone "$array" "$merge"
[ "$(states "$array")" = "2:COMPLETED:0:0" ] || fail "B: the resubmitted task: $(states "$array")"
[ "$(states "$merge")" = "-:COMPLETED:0:0" ] || fail "B: the merge job after the resubmitted task: $(states "$merge")"
same_as_whole b cancelled
echo "slurm e2e: B (a cancelled shard resubmitted): $((SECONDS - t0)) s"

# C: a shard of another case list joins run A: refused, run A unchanged.
t0=$SECONDS
before=$(sql "SELECT part, complete, context FROM run_parts WHERE run_key = 'sharded' ORDER BY part" | md5sum)
submit c --tasks=1 --shards=4 --run=sharded -- "${args[@]}" b1hq2sq32d16n=extra
wait_gone "$array" "$merge"
[ "$(states "$array")" = "1:FAILED:2:0" ] || fail "C: the task of another case list: $(states "$array")"
[ "$(states "$merge" | cut -d: -f2)" = CANCELLED ] || fail "C: the merge job after a refused task: $(states "$merge")"
fp=$(sql "SELECT cases_fingerprint FROM runs WHERE run_key = 'sharded'")
grep -q "run 'sharded' is stored as 4 shard(s) of $n cases (fingerprint $fp), but this part is of 4 shard(s) of $((n + 1)) cases" \
  "$tmp/c/slurm-${array}_1.out" || fail "C: the refusal does not name the case lists"
grep -q "this part runs '.*--batch=cases/ci/smoke.cases b1hq2sq32d16n=extra" "$tmp/c/slurm-${array}_1.out" ||
  fail "C: the refusal does not name the commands"
[ "$(sql "SELECT part, complete, context FROM run_parts WHERE run_key = 'sharded' ORDER BY part" | md5sum)" = "$before" ] ||
  fail "C: the refused shard changed run A's parts"
same_as_whole a sharded
echo "slurm e2e: C (a shard of another case list refused): $((SECONDS - t0)) s"
cat "$tmp/c/slurm-${array}_1.out"
echo "slurm e2e: passed in $((SECONDS - t_start)) s"
