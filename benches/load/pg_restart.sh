#!/usr/bin/env bash
# The server on PostgreSQL at a large store, made without hours of issuing:
# FILL seconds of the issuing load (facturacion.lua, 16 connections,
# `transmit: false`) on a private cluster (pg_instance.sh), then the
# database grown to COUNT documents by copies of those (pg_grow.sql), then
# a WINDOW of the same load on it (documents/s, p99, CPU per document of the
# server and of the cluster beside one RSA-2048 signature), and ROUNDS times
# `kill -9` of the server (under the load) and the time from its start to the
# first 200 of /readyz. The database itself is not stopped.
#   benches/load/pg_restart.sh [BINARY] [COUNT] [ROUNDS]   (1000000, 5)
# FILL (30) and WINDOW (20) seconds. Needs wrk, curl, python3, openssl, psql.
set -euo pipefail
BIN=${1:-target/release/emisor}
COUNT=${2:-1000000}
ROUNDS=${3:-5}
FILL=${FILL:-30}
WINDOW=${WINDOW:-20}
LUA=benches/load/facturacion.lua
DIR=$(mktemp -d)
PID=
trap 'kill -9 "$PID" 2>/dev/null || true; rm -rf "$DIR"' EXIT
ENGINE=postgres
. benches/load/demo_company.sh

ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
accepted() { awk '/requests in/ {r=$1} /Non-2xx/ {n=$NF} END {print r - n}'; }
gone() { while kill -0 "$PID" 2>/dev/null; do sleep 0.01; done; }
# Seconds from the process start to the first 200 of /readyz (the server
# started in the command substitution's shell: found again by pgrep).
ready() {
  local t0 t1
  t0=$(date +%s.%N)
  start_server "$BIN"
  await_ready "the server did not start:"
  t1=$(date +%s.%N)
  python3 -c "print(f'{$t1 - $t0:.2f}')"
}

start_server "$BIN"
await_ready "the server did not start:"
demo_company
wrk -t2 -c16 -d"${FILL}s" -s "$LUA" "$URL/v1/api/facturacion" >/dev/null
kill -9 "$PID"
gone
started=$(date +%s)
psql -q "$PG_URL" -v target="$COUNT" -f benches/load/pg_grow.sql
echo "grown in $(( $(date +%s) - started )) s; database $(psql -At "$PG_URL" -c \
  "SELECT pg_size_pretty(pg_database_size('bench'))")"
psql -At -F ' ' "$PG_URL" -c "SELECT relname, pg_size_pretty(pg_total_relation_size(oid))
  FROM pg_class WHERE relkind = 'r' AND relnamespace = 'public'::regnamespace
  ORDER BY pg_total_relation_size(oid) DESC LIMIT 4"

first=$(ready)
echo "ready after a stop, at $COUNT documents: $first s"
PID=$(pgrep -n -f "serve --data-dir $DIR/data")
URL=$(cat "$DIR/data/listening")
wrk -t2 -c16 -d3s -s "$LUA" "$URL/v1/api/facturacion" >/dev/null
before=$(ticks)
db_before=$(pg_ticks)
out=$(wrk -t2 -c16 -d"${WINDOW}s" --latency -s "$LUA" "$URL/v1/api/facturacion")
after=$(ticks)
db_after=$(pg_ticks)
n=$(echo "$out" | accepted)
p99=$(echo "$out" | awk '/ 99%/ {print $2}')
sign=$(openssl speed -seconds 2 rsa2048 2>/dev/null | awk '/^rsa 2048/ {print $6}')
python3 - "$n" "$WINDOW" "$p99" "$before" "$after" "$db_before" "$db_after" "$(getconf CLK_TCK)" "$sign" <<'PY'
import sys
n, window, p99, b, a, db_b, db_a, hz, sign = sys.argv[1:]
n = max(int(n), 1)
emisor = (float(a) - float(b)) / float(hz) * 1e6 / n
pg = (float(db_a) - float(db_b)) / float(hz) * 1e6 / n
rsa = 1e6 / float(sign)
print(f"window: {n / float(window):.0f} documents/s, p99 {p99}; CPU a document: emisor {emisor:.0f} us + "
      f"PostgreSQL {pg:.0f} us = {emisor + pg:.0f} us = {(emisor + pg) / rsa:.2f}x one signature ({rsa:.0f} us)")
PY
for round in $(seq "$ROUNDS"); do
  # Killed under the load, at a moment within its first seconds.
  wrk -t2 -c16 -d5s -s "$LUA" "$URL/v1/api/facturacion" >/dev/null &
  load=$!
  sleep "$(python3 -c 'import random;print(round(random.uniform(1, 3), 2))')"
  kill -9 "$PID"
  gone
  wait "$load" 2>/dev/null || true
  echo "ready after kill -9, round $round: $(ready) s"
  PID=$(pgrep -n -f "serve --data-dir $DIR/data")
  URL=$(cat "$DIR/data/listening")
done
