#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for tests and CI (Debian's postgresql package; docs/tracking.md):
#   scripts/pg_cluster.sh start DIR   initdb a new cluster, start it on 127.0.0.1 at a free port
#                                     with trust authentication, create the database "sdpabench";
#                                     writes DIR/url (postgresql://postgres@127.0.0.1:PORT/sdpabench),
#                                     DIR/pid (the postmaster's process id) and DIR/datadir, prints
#                                     the URL. Fails if DIR/pid names a running postmaster.
#   scripts/pg_cluster.sh stop DIR    stops that postmaster by its process id (fast shutdown, then
#                                     SIGKILL after 30 s) and removes the cluster and DIR.
#   scripts/pg_cluster.sh kill DIR    SIGKILLs the postmaster and its server processes (a crash, for
#                                     fault tests); the cluster stays, for restart.
#   scripts/pg_cluster.sh restart DIR starts the cluster of DIR again on its port after its server
#                                     stopped or was killed (a fault test's restart); DIR/pid is updated.
# PostgreSQL refuses to run as root: run as root, the cluster belongs to the "postgres" user that
# the package creates (runuser); run as another user, to that user. The data lives in a fresh
# mktemp folder (fsync off: nothing in it outlives the test). SDPABENCH_PG_BINDIR overrides the
# server's bin folder (default: the newest /usr/lib/postgresql/*/bin). Exit 0 done, 1 failed (the
# server log is printed), 2 bad usage.
set -euo pipefail
usage() { echo "usage: $0 start|stop|kill|restart DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
cmd=$1 dir=$2

bindir=${SDPABENCH_PG_BINDIR:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)}
if [ -z "$bindir" ] || [ ! -x "$bindir/postgres" ]; then
  echo "pg_cluster.sh: no PostgreSQL server (Debian's postgresql package: SDPABENCH_TEST_DEPS=1 scripts/setup.sh installs it)" >&2
  exit 1
fi
as_owner() {  # runs "$@" as the cluster's owner
  if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
running() { [ -f "$dir/pid" ] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; }
serve() {  # serve DATA PORT: starts the server of DATA/db on 127.0.0.1:PORT
  as_owner "$bindir/pg_ctl" -D "$1/db" -l "$1/server.log" -w -t 60 start \
    -o "-c listen_addresses=127.0.0.1 -c port=$2 -c unix_socket_directories=$1/db -c fsync=off -c full_page_writes=off" \
    >/dev/null 2>&1
}

case $cmd in
  start)
    mkdir -p "$dir"
    if running; then echo "pg_cluster.sh: a cluster is already running in $dir (pid $(cat "$dir/pid"))" >&2; exit 1; fi
    data=$(mktemp -d /tmp/sdpabench-pg.XXXXXX)
    echo "$data" >"$dir/datadir"
    [ "$(id -u)" -ne 0 ] || chown postgres: "$data"
    as_owner "$bindir/initdb" -D "$data/db" -U postgres --auth=trust --no-locale -E UTF8 >"$dir/initdb.log" 2>&1 ||
      { cat "$dir/initdb.log" >&2; rm -rf "$data"; exit 1; }
    # A free port: the kernel's choice for a socket bound to port 0 (retried if taken meanwhile).
    for attempt in 1 2 3 4 5; do
      port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
      if serve "$data" "$port"; then break; fi
      port=""
    done
    if [ -z "$port" ]; then
      echo "pg_cluster.sh: the server did not start:" >&2; cat "$data/server.log" >&2; rm -rf "$data"; exit 1
    fi
    head -n 1 "$data/db/postmaster.pid" >"$dir/pid"
    url="postgresql://postgres@127.0.0.1:$port/sdpabench"
    "$bindir/psql" -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -c 'CREATE DATABASE sdpabench' >/dev/null
    echo "$url" >"$dir/url"
    echo "$url"
    ;;
  kill)
    running || { echo "pg_cluster.sh: no running cluster in $dir" >&2; exit 1; }
    pid=$(cat "$dir/pid")
    kids=$(ps -o pid= --ppid "$pid" || true)
    kill -KILL "$pid" $kids 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    ;;
  restart)
    if running; then echo "pg_cluster.sh: the cluster in $dir is running (pid $(cat "$dir/pid"))" >&2; exit 1; fi
    [ -f "$dir/datadir" ] && [ -f "$dir/url" ] || { echo "pg_cluster.sh: no cluster in $dir" >&2; exit 1; }
    data=$(cat "$dir/datadir")
    port=$(sed -E 's|.*:([0-9]+)/.*|\1|' "$dir/url")
    rm -f "$data/db/postmaster.pid"  # left by a killed server
    serve "$data" "$port" || { echo "pg_cluster.sh: the server did not restart:" >&2; tail -n 20 "$data/server.log" >&2; exit 1; }
    head -n 1 "$data/db/postmaster.pid" >"$dir/pid"
    ;;
  stop)
    if running; then
      pid=$(cat "$dir/pid")
      kill -INT "$pid"  # fast shutdown: ends every session, then the postmaster
      for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid"; fi
    fi
    [ ! -f "$dir/datadir" ] || rm -rf "$(cat "$dir/datadir")"
    rm -rf "$dir"
    ;;
  *) usage ;;
esac
