#!/usr/bin/env bash
# Faults under a night's run (docs/tracking.md#when-the-store-is-away, docs/output.md#exit-codes):
# the results store and the report files fail while cases run, and every case still ends up where
# it belongs, exactly once.
#   postgresql  a PostgreSQL server of this test's own (scripts/pg_cluster.sh) killed mid-run: the
#               run goes on, writes its JUnit, exits 6, and one ingest of the spool after a
#               restart puts every case in the store once (a second ingest adds nothing); killed
#               and restarted mid-run, the store gets every case live and no spool is left.
#   sqlite      SQLite locked by another writer for longer than --store-wait: the cases wait in
#               the spool and reach the store once the lock goes (exit 0, spool removed); locked
#               past the run's end: exit 6, and the ingest after the lock completes the store.
#   disk        a full disk under the JSONL report (a 64 KiB tmpfs where this test may mount one,
#               else /dev/full): the report is set aside, every case runs, the other reports are
#               whole, exit 6.
# usage: store_faults_e2e.sh postgresql|sqlite|disk SDPABENCH SOURCE_DIR
set -u
mode=$1 exe=$2 src=$3
store_exe=$(dirname "$exe")/sdpabench-store
e2e_label="store faults: $mode"
source "$(dirname "$0")/e2e_lib.sh"
n=40
# Backward cases at S = 512: some tens of ms each on two cores, a run of a few seconds.
cases=(--no-progress --backend=ref --dir=bwd --seed=1:$n b1hq4sq512d64)

# The count of the JSONL report's case lines (not its context record, first, nor its end record, last).
jsonl_cases() { local k=0; [ -f "$1" ] && k=$(grep -vcE '^\{"(context|end)":' "$1"); echo "${k:-0}"; }
# Waits until the JSONL report $1 holds at least $2 cases (at most 120 s).
wait_cases() {
  for _ in $(seq 1200); do [ "$(jsonl_cases "$1")" -ge "$2" ] && return 0; sleep 0.1; done
  fail "the run did not reach $2 cases"
}
# The JUnit file's testcase count.
junit_cases() { grep -c '<testcase ' "$1"; }

case $mode in
postgresql)
  command -v psql >/dev/null || { echo "SKIPPED: no psql (SDPABENCH_TEST_DEPS=1 scripts/setup.sh)"; exit 77; }
  pg=$tmp/pg
  bash "$src/scripts/pg_cluster.sh" start "$pg" >/dev/null || fail "cannot start a PostgreSQL cluster"
  trap 'bash "$src/scripts/pg_cluster.sh" stop "$pg"; rm -rf "$tmp"' EXIT
  url=$(cat "$pg/url")
  count() { psql "$url" -Atc "$1"; }

  # A. Killed for good two seconds' worth of cases in: the run goes on without it.
  mkdir "$tmp/a"
  "$exe" "${cases[@]}" --store-wait=2 --tags=run:killed --report=postgresql:"$url" --report=jsonl:"$tmp/a/r.jsonl" \
    --report=junit:"$tmp/a/r.xml" >"$tmp/out" 2>&1 &
  pid=$!
  wait_cases "$tmp/a/r.jsonl" 8
  bash "$src/scripts/pg_cluster.sh" kill "$pg"
  wait $pid; rc=$?
  [ $rc -eq 6 ] || fail "a run whose store went away must exit 6 (report incomplete), got $rc"
  [ "$(summary_field passed)" = $n ] || fail "every case must run and pass"
  [ "$(junit_cases "$tmp/a/r.xml")" = $n ] || fail "the JUnit report must hold every case"
  [ "$(jsonl_cases "$tmp/a/r.jsonl")" = $n ] || fail "the JSONL report must hold every case"
  grep -q "^report postgresql:.*: incomplete: .* not in the store .*sdpabench-store ingest" "$tmp/out" ||
    fail "the summary must name the incomplete store and the ingest that completes it"
  spool=$(ls "$tmp"/a/sdpabench-spool-*-postgresql-*.jsonl 2>/dev/null)
  [ -n "$spool" ] || fail "no spool next to the other reports"
  tail -n 1 "$spool" | grep -q '^{"end":' || fail "the spool must end with its end record"
  bash "$src/scripts/pg_cluster.sh" restart "$pg" || fail "cannot restart the server"
  before=$(count "SELECT COUNT(*) FROM cases WHERE run_key = 'killed'")
  [ "$before" -ge 1 ] && [ "$before" -lt $n ] || fail "before the ingest the store must hold some cases, got $before"
  "$store_exe" ingest --db=postgresql:"$url" "$spool" >"$tmp/out" 2>&1 || fail "the ingest of the spool failed"
  for k in 1 2; do
    [ "$(count "SELECT COUNT(*) || ' ' || COUNT(DISTINCT case_id) FROM cases WHERE run_key = 'killed'")" = "$n $n" ] ||
      fail "ingest $k: the store must hold each of the $n cases once"
    [ "$(count "SELECT complete FROM run_state WHERE run_key = 'killed'")" = 1 ] || fail "ingest $k: the run must be complete"
    "$store_exe" ingest --db=postgresql:"$url" "$spool" >"$tmp/out" 2>&1 || fail "a second ingest of the spool failed"
  done
  echo "killed: $before case(s) stored live, $((n - before)) from the spool, each once"
  # The spool loaded into another store than its own: that store lacks the cases stored live, so
  # the run stays incomplete there.
  "$store_exe" ingest --db=sqlite:"$tmp/other.db" "$spool" >"$tmp/out" 2>&1 || fail "ingest into another store failed"
  grep -q "the store holds $((n - before)) of the run's $n case(s)" "$tmp/out" || fail "ingest must say the other store lacks cases"
  python3 -c "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); assert c.execute(\"SELECT complete FROM run_state WHERE run_key='killed'\").fetchone()[0] == 0" \
    "$tmp/other.db" || fail "a spool in another store must leave the run incomplete there"

  # B. Killed, then restarted while the run goes on: every case reaches the store live.
  mkdir "$tmp/b"
  "$exe" "${cases[@]}" --store-wait=60 --tags=run:restarted --report=postgresql:"$url" \
    --report=jsonl:"$tmp/b/r.jsonl" >"$tmp/out" 2>&1 &
  pid=$!
  wait_cases "$tmp/b/r.jsonl" 8
  bash "$src/scripts/pg_cluster.sh" kill "$pg"
  sleep 1
  bash "$src/scripts/pg_cluster.sh" restart "$pg" || fail "cannot restart the server"
  wait $pid; rc=$?
  [ $rc -eq 0 ] || fail "a store back within --store-wait loses nothing: exit 0 expected, got $rc"
  grep -q "the store is back" "$tmp/out" || fail "the run must say the store is back"
  [ -z "$(ls "$tmp"/b/sdpabench-spool-* 2>/dev/null)" ] || fail "no spool may be left when every case reached the store"
  [ "$(count "SELECT COUNT(*) || ' ' || COUNT(DISTINCT case_id) FROM cases WHERE run_key = 'restarted'")" = "$n $n" ] ||
    fail "the restarted store must hold each case once"
  [ "$(count "SELECT complete FROM run_state WHERE run_key = 'restarted'")" = 1 ] || fail "the run must be complete"
  ;;

sqlite)
  db=$tmp/r.db
  "$store_exe" migrate --db=sqlite:"$db" >/dev/null || fail "cannot create the store"
  # lock_until FILE: another writer holds SQLite's write lock until FILE exists.
  lock_until() {
    python3 - "$db" "$1" "$tmp/locked" <<'PY' &
import os, sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None)
c.execute("BEGIN EXCLUSIVE")
open(sys.argv[3], "w").close()
while not os.path.exists(sys.argv[2]):
    time.sleep(0.05)
c.execute("ROLLBACK")
PY
    locker=$!
    for _ in $(seq 100); do [ -f "$tmp/locked" ] && return 0; sleep 0.1; done
    fail "the lock holder did not start"
  }
  count() { python3 -c "import sqlite3,sys; print(sqlite3.connect(sys.argv[1]).execute(sys.argv[2]).fetchone()[0])" "$db" "$1"; }

  # A. Locked for the first cases of the run, then released: every case reaches the store.
  mkdir "$tmp/a"
  lock_until "$tmp/release"
  "$exe" "${cases[@]}" --store-wait=1 --tags=run:locked --report=sqlite:"$db" --report=jsonl:"$tmp/a/r.jsonl" \
    >"$tmp/out" 2>&1 &
  pid=$!
  wait_cases "$tmp/a/r.jsonl" 5
  touch "$tmp/release"; wait $locker
  wait $pid; rc=$?
  [ $rc -eq 0 ] || fail "SQLite locked for a while: exit 0 expected once the cases reached it, got $rc"
  grep -q "database is locked" "$tmp/out" || fail "the run must say why the store was away"
  grep -q "the store is back" "$tmp/out" || fail "the run must say the store is back"
  [ "$(count "SELECT COUNT(*) FROM cases WHERE run_key = 'locked'")" = $n ] || fail "the store must hold all $n cases"
  [ -z "$(ls "$tmp"/a/sdpabench-spool-* 2>/dev/null)" ] || fail "no spool may be left"

  # B. Locked past the run's end: exit 6, the spool holds what the store lacks, one ingest completes it.
  rm -f "$tmp/release" "$tmp/locked"
  mkdir "$tmp/b"
  lock_until "$tmp/release"
  run "${cases[@]}" --store-wait=1 --tags=run:locked_out --report=sqlite:"$db" --report=jsonl:"$tmp/b/r.jsonl"
  touch "$tmp/release"; wait $locker
  [ $rc -eq 6 ] || fail "SQLite locked past the end: exit 6 expected, got $rc"
  spool=$(ls "$tmp"/b/sdpabench-spool-*-sqlite-*.jsonl 2>/dev/null)
  [ -n "$spool" ] || fail "no spool"
  [ "$(jsonl_cases "$spool")" = $n ] && tail -n 1 "$spool" | grep -q '^{"end":' ||
    fail "the spool must hold the $n cases and its end record"
  "$store_exe" ingest --db=sqlite:"$db" "$spool" >"$tmp/out" 2>&1 || fail "the ingest of the spool failed"
  [ "$(count "SELECT COUNT(*) FROM cases WHERE run_key = 'locked_out'")" = $n ] || fail "the store must hold all $n cases"
  [ "$(count "SELECT complete FROM run_state WHERE run_key = 'locked_out'")" = 1 ] || fail "the run must be complete"

  # C. A spool cut by a kill (no end record) leaves its run incomplete.
  head -n 5 "$spool" >"$tmp/cut.jsonl"
  sed -i 's/"run":"locked_out"/"run":"cut"/' "$tmp/cut.jsonl"
  "$store_exe" ingest --db=sqlite:"$db" "$tmp/cut.jsonl" >"$tmp/out" 2>&1 || fail "the ingest of a cut spool failed"
  grep -q "no end record" "$tmp/out" || fail "ingest must say the spool has no end record"
  [ "$(count "SELECT complete FROM run_state WHERE run_key = 'cut'")" = 0 ] || fail "a cut spool's run must stay incomplete"

  # D. The run's JSONL report (its end record last) ingested after its spool: the same invocation,
  #    so nothing is deleted; the part is complete and its end_record holds the end record.
  "$store_exe" ingest --db=sqlite:"$db" "$tmp/b/r.jsonl" >"$tmp/out" 2>&1 || fail "the ingest of the JSONL report failed"
  grep -q "replaces it whole" "$tmp/out" && fail "the run's own report must not replace its part"
  [ "$(count "SELECT COUNT(*) FROM cases WHERE run_key = 'locked_out'")" = $n ] || fail "D: the store must hold all $n cases"
  [ "$(count "SELECT complete FROM run_state WHERE run_key = 'locked_out'")" = 1 ] || fail "D: the run must be complete"
  # (Its cases are not timed, so it took no noise sample: docs/output.md#the-machines-noise.)
  [ "$(count "SELECT end_record ->> 'cases' FROM run_parts WHERE run_key = 'locked_out'")" = "$n" ] \
    || fail "D: the part's end_record must hold its end record"

  # E. The tag of run A reused by another run of 3 cases: A's 40 cases are gone, one line names both runs.
  run --no-progress --backend=ref --dir=bwd --seed=1:3 b1hq4sq64d64 --tags=run:locked --report=sqlite:"$db"
  [ $rc -eq 0 ] || fail "E: the run under a reused tag: exit $rc"
  grep -q "^sqlite:$db: run 'locked' part 0 was written by .* (started .*); this run .* replaces it whole: its $n case(s) are deleted" \
    "$tmp/out" || fail "E: stderr must name both invocations"
  [ "$(count "SELECT COUNT(*) FROM cases WHERE run_key = 'locked'")" = 3 ] || fail "E: the reused tag must hold the new run's 3 cases only"
  ;;

disk)
  full=$tmp/full
  mkdir "$full"
  if mount -t tmpfs -o size=64k tmpfs "$full" 2>/dev/null; then
    trap 'umount "$full"; rm -rf "$tmp"' EXIT
    report=$full/r.jsonl
    echo "a 64 KiB tmpfs holds the JSONL report"
  else
    report=/dev/full
    echo "no tmpfs can be mounted here (not root): the JSONL report goes to /dev/full"
  fi
  # A run refused before its first case (a report that cannot be opened: exit 2) leaves the other
  # reports' earlier files whole.
  echo precious >"$tmp/earlier.jsonl"
  mkdir "$tmp/adir"
  run "${cases[@]}" --report=jsonl:"$tmp/earlier.jsonl" --report=csv:"$tmp/adir"
  [ $rc -eq 2 ] || fail "a report path that is a folder: exit 2 expected, got $rc"
  [ "$(cat "$tmp/earlier.jsonl")" = precious ] || fail "a refused run emptied an earlier report"
  run "${cases[@]}" --report=jsonl:"$report" --report=junit:"$tmp/r.xml" --report=csv:"$tmp/r.csv"
  [ $rc -eq 6 ] || fail "a report on a full disk: exit 6 expected, got $rc"
  [ "$(summary_field passed)" = $n ] || fail "every case must run"
  grep -q "^report jsonl:$report: error: cannot .*No space left on device; it is set aside" "$tmp/out" ||
    fail "the failure must be named once, with its reason"
  [ "$(grep -c "report jsonl:$report: error" "$tmp/out")" = 1 ] || fail "the failure must be named once"
  grep -q "^report jsonl:$report: incomplete: [0-9]* of $n case(s) written" "$tmp/out" ||
    fail "the summary must name the incomplete report"
  [ "$(junit_cases "$tmp/r.xml")" = $n ] || fail "the JUnit report must hold every case"
  [ "$(grep -vc '^#' "$tmp/r.csv")" = $((n + 1)) ] || fail "the CSV report must hold every case"
  ;;
*) echo "usage: $0 postgresql|sqlite|disk SDPABENCH SOURCE_DIR" >&2; exit 2 ;;
esac
echo "E2E PASS (store faults: $mode)"
