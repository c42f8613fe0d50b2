#!/usr/bin/env bash
# A password given in a results store's URL never leaves the process (core/redact.hpp,
# docs/tracking.md#passwords): planted in every form libpq takes (URL userinfo, the password
# keyword, a URI's ?password=) and as a PGPASSWORD-style tag, it is in no console line, no JSONL,
# CSV or JUnit report, no spool, no row of either store, no history page; nor is it after an
# ingest of a report written before redaction. The CTest fixture's PostgreSQL trusts its clients,
# so a password is accepted and ignored.
# usage: secrets_e2e.sh SDPABENCH SOURCE_DIR PG_URL_FILE
set -u
exe=$(realpath "$1") src=$(realpath "$2") url=$(cat "$3")
store_exe=$(dirname "$exe")/sdpabench-store
e2e_label=secrets
source "$(dirname "$0")/e2e_lib.sh"
command -v psql >/dev/null || { echo "SKIPPED: no psql (SDPABENCH_TEST_DEPS=1 scripts/setup.sh)"; exit 77; }

hostport=${url#postgresql://postgres@}; hostport=${hostport%%/*}
with_userinfo="postgresql://postgres:PLANTEDpw1@$hostport/sdpabench"
keywords="host=${hostport%:*} port=${hostport#*:} dbname=sdpabench user=postgres password=PLANTEDpw2&PLANTEDpw2b"
with_query="postgresql://postgres@$hostport/sdpabench?password=PLANTEDpw3"
away="postgresql://nobody:PLANTEDpw5@127.0.0.1:1/none"
planted='PLANTEDpw[0-9]'

mkdir "$tmp/files"
cd "$tmp/files" || fail "no folder"
"$exe" --no-progress --backend=ref --seed=1:3 b1hq2sq32d32 --tags=run:secrets,note:PGPASSWORD=PLANTEDpw4 \
  --report=postgresql:"$with_userinfo" --report=postgresql:"$keywords" --report=postgresql:"$with_query" \
  --report=sqlite:"$tmp/files/r.db" --report=jsonl:"$tmp/files/r.jsonl" --report=csv:"$tmp/files/r.csv" \
  --report=junit:"$tmp/files/r.xml" --report=postgresql:"$away" --store-wait=0 >"$tmp/files/console.txt" 2>&1
rc=$?
[ $rc -eq 6 ] || fail "the unreachable store must make the run exit 6, got $rc"
grep -q "^report postgresql:postgresql://nobody:\*\*\*\*@127.0.0.1:1/none: incomplete" "$tmp/files/console.txt" ||
  fail "the incomplete store must be named with its password masked"
[ -n "$(ls "$tmp"/files/sdpabench-spool-*-postgresql-*.jsonl 2>/dev/null)" ] || fail "no spool for the unreachable store"
grep -q '"command":.*postgres:\*\*\*\*@' "$tmp/files/r.jsonl" || fail "the command must be kept, its password masked"

# Mistakes a user makes with a password in the URL: each refused or run, its messages checked below.
{
  # a raw '/' in the password (libpq reads part of it as the port)
  "$exe" --report=postgresql:"postgresql://postgres:PLANTEDpw8/x@$hostport/sdpabench" b1hq2sq32d32
  # the KIND: prefix forgotten
  "$exe" --report="postgresql://postgres:PLANTEDpw10@$hostport/sdpabench" b1hq2sq32d32
  # a bad percent-encoding in the password
  "$exe" --report=postgresql:"postgresql://postgres:pa%zzPLANTEDpw12@$hostport/sdpabench" b1hq2sq32d32
  # the same store twice
  "$exe" --report=postgresql:"$with_userinfo" --report=postgresql:"$with_userinfo" b1hq2sq32d32
  # a store kind misspelt, in sdpabench-store
  "$store_exe" migrate --db="postgres://postgres:PLANTEDpw11@$hostport/sdpabench"
  "$store_exe" migrate --db="postgresql://postgres:PLANTEDpw13@$hostport/sdpabench"
} >"$tmp/files/mistakes.txt" 2>&1
[ "$(grep -c 'error\|not a libpq\|does not read as\|unknown store kind\|write the same file\|is not KIND' "$tmp/files/mistakes.txt")" -ge 6 ] ||
  fail "each mistake must be refused with a message: $(cat "$tmp/files/mistakes.txt")"

# A report written before redaction (its command holds a password), ingested now.
sed -E '1s/postgres:\*\*\*\*@/postgres:PLANTEDpw6@/; 1s/"run":"secrets"/"run":"old"/' "$tmp/files/r.jsonl" >"$tmp/old.jsonl"
grep -q PLANTEDpw6 "$tmp/old.jsonl" || fail "the old report was not made"
"$store_exe" ingest --db=sqlite:"$tmp/files/r.db" "$tmp/old.jsonl" >"$tmp/out" 2>&1 || fail "ingest of the old report failed"

# Every store row, and the history page of both stores.
python3 - "$tmp/files/r.db" >"$tmp/files/sqlite.dump" <<'PY' || fail "cannot dump the SQLite store"
import sqlite3, sys
for line in sqlite3.connect(sys.argv[1]).iterdump():
    print(line)
PY
psql "$url" -Atc "SELECT context FROM run_parts; SELECT record FROM cases; SELECT * FROM runs" >"$tmp/files/pg.dump" ||
  fail "cannot dump the PostgreSQL store"
grep -q "secrets" "$tmp/files/pg.dump" || fail "the PostgreSQL store does not hold the run"
if "$src/scripts/history" --help >/dev/null 2>&1; then
  for db in sqlite:"$tmp/files/r.db" postgresql:"$with_userinfo"; do
    "$src/scripts/history" plot --db="$db" --include-incomplete --out="$tmp/files/page.${db%%:*}" >>"$tmp/files/console.txt" 2>&1
    [ -f "$tmp/files/page.${db%%:*}/index.html" ] || fail "no history page from ${db%%:*}"
  done
  "$src/scripts/history" runs --db="bogus:PLANTEDpw7@x" >>"$tmp/files/console.txt" 2>&1
else
  echo "note: scripts/history has no venv here (scripts/setup.sh): its page is not checked"
fi
files=$(find "$tmp/files" -type f | wc -l)
if grep -r -- "$planted" "$tmp/files"; then
  fail "a planted password is in the files above"
fi
echo "E2E PASS (secrets: no planted password in $files files)"
