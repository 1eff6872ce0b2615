#!/usr/bin/env bash
# A throwaway PostgreSQL server for tests, from Debian's `postgresql` package (scripts/setup.sh
# installs it). No mocks: the lookup tests talk to this real server.
#   scripts/postgres.sh start [DIR]  initdb a fresh cluster in DIR (default: a new mktemp -d under
#                                    /tmp), start it on 127.0.0.1 at a free port (its Unix socket
#                                    in DIR), create user `ferry` with a random password and its
#                                    database `ferry` (pg_stat_statements preloaded and created),
#                                    then print the connection as KEY=VALUE lines (the env below)
#                                    With FERRY_PG_OWNER=PID, a watchdog stops the server and
#                                    removes DIR once process PID is gone (a test binary that
#                                    crashed before its cleanup)
#   scripts/postgres.sh env DIR      print the connection of the server in DIR again: PGHOST,
#                                    PGPORT, PGUSER, PGPASSWORD, PGDATABASE, FERRY_PG_DIR,
#                                    FERRY_PG_BIN (the server's bin directory: pg_ctl, initdb)
#   scripts/postgres.sh halt DIR     stop the server (immediate shutdown: connections break), keep DIR
#   scripts/postgres.sh resume DIR   start a halted server again, on the same port
#   scripts/postgres.sh stop DIR     stop the server (fast shutdown) and remove DIR
# On a failed start the server is stopped and DIR removed.
# PostgreSQL refuses to run as root: as root the server runs as the system user `ferrypg`, created
# on first use (no home, no login shell). pg_ctl and initdb are not on PATH on Debian: the newest
# /usr/lib/postgresql/VERSION/bin is used unless they are.
set -euo pipefail

die() { echo "postgres.sh: $*" >&2; exit 1; }

pg_bin() {
  local d=
  if command -v pg_ctl >/dev/null 2>&1; then
    d=$(dirname "$(readlink -f "$(command -v pg_ctl)")")
  fi
  if [ -z "$d" ] || [ ! -x "$d/initdb" ] || [ ! -x "$d/psql" ]; then
    d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  fi
  [ -n "$d" ] && [ -x "$d/pg_ctl" ] && [ -x "$d/initdb" ] && [ -x "$d/psql" ] ||
    die "no PostgreSQL server (pg_ctl, initdb): install Debian's postgresql (scripts/setup.sh test)"
  echo "$d"
}

# as_pg CMD...: CMD as the server's user (ferrypg when root, else the caller).
as_pg() {
  if [ "$(id -u)" -eq 0 ]; then
    runuser -u ferrypg -- "$@"
  else
    "$@"
  fi
}

ensure_user() {
  [ "$(id -u)" -eq 0 ] || return 0
  id ferrypg >/dev/null 2>&1 ||
    useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin ferrypg ||
    die "cannot create the system user ferrypg"
}

# pg_start BIN DIR PORT: start the cluster of DIR on 127.0.0.1:PORT, its socket in DIR.
pg_start() {
  as_pg "$1/pg_ctl" -D "$2/data" -l "$2/server.log" -w -t 30 start -o \
    "-p $3 -k $2 -c listen_addresses=127.0.0.1 -c shared_preload_libraries=pg_stat_statements -c fsync=off" \
    >/dev/null 2>&1
}

cmd_start() {
  local dir=${1:-} bin
  bin=$(pg_bin)
  ensure_user
  if [ -z "$dir" ]; then
    dir=$(mktemp -d /tmp/ferry-pg.XXXXXX)
  else
    mkdir -p "$dir"
  fi
  chmod 0755 "$dir"
  [ "$(id -u)" -ne 0 ] || chown ferrypg "$dir"
  local password
  password=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
  printf '%s\n' "$password" > "$dir/pwfile"
  [ "$(id -u)" -ne 0 ] || chown ferrypg "$dir/pwfile"
  chmod 0600 "$dir/pwfile"
  # Superuser `postgres` through the socket only (trust, the socket lives in DIR); TCP needs a
  # password (scram), so wrong credentials are refused as on a real deployment.
  as_pg "$bin/initdb" -D "$dir/data" -U postgres --auth-local=trust --auth-host=scram-sha-256 \
    -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 || { cat "$dir/initdb.log" >&2; die "initdb failed"; }
  local port started=
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    port=$((20000 + RANDOM % 40000))
    if pg_start "$bin" "$dir" "$port"; then
      started=1
      break
    fi
  done
  [ -n "$started" ] || { tail -n 20 "$dir/server.log" >&2; rm -rf "$dir"; die "server did not start"; }
  if ! as_pg "$bin/psql" -q -v ON_ERROR_STOP=1 -h "$dir" -p "$port" -U postgres -d postgres >/dev/null <<SQL
CREATE ROLE ferry LOGIN PASSWORD '$password';
CREATE DATABASE ferry OWNER ferry;
\c ferry
CREATE EXTENSION pg_stat_statements;
GRANT pg_read_all_stats TO ferry;
SQL
  then
    cmd_stop "$dir"
    die "could not create the ferry user and database"
  fi
  if [ -n "${FERRY_PG_OWNER:-}" ]; then
    (
      trap '' HUP
      while kill -0 "$FERRY_PG_OWNER" 2>/dev/null; do sleep 2; done
      cmd_stop "$dir"
    ) </dev/null >/dev/null 2>&1 &
  fi
  cat > "$dir/env" <<ENV
PGHOST=127.0.0.1
PGPORT=$port
PGUSER=ferry
PGPASSWORD=$password
PGDATABASE=ferry
FERRY_PG_DIR=$dir
FERRY_PG_BIN=$bin
ENV
  cat "$dir/env"
}

cmd_env() {
  local dir=${1:?usage: $0 env DIR}
  [ -f "$dir/env" ] || die "no server in $dir"
  cat "$dir/env"
}

cmd_halt() {
  local dir=${1:?usage: $0 halt DIR}
  as_pg "$(pg_bin)/pg_ctl" -D "$dir/data" -m immediate -w stop >/dev/null
}

cmd_resume() {
  local dir=${1:?usage: $0 resume DIR} port
  port=$(sed -n 's/^PGPORT=//p' "$dir/env")
  pg_start "$(pg_bin)" "$dir" "$port" || { tail -n 20 "$dir/server.log" >&2; die "server did not start again"; }
}

cmd_stop() {
  local dir=${1:?usage: $0 stop DIR}
  [ -d "$dir" ] || return 0
  if [ -f "$dir/data/postmaster.pid" ]; then
    as_pg "$(pg_bin)/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
  fi
  rm -rf "$dir"
}

case "${1:-}" in
  start) shift; cmd_start "$@" ;;
  env) shift; cmd_env "$@" ;;
  halt) shift; cmd_halt "$@" ;;
  resume) shift; cmd_resume "$@" ;;
  stop) shift; cmd_stop "$@" ;;
  *) echo "usage: $0 start [DIR] | env DIR | halt DIR | resume DIR | stop DIR" >&2; exit 2 ;;
esac
