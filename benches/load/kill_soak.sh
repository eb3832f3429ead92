#!/usr/bin/env bash
# Crash soak: ROUNDS rounds, each a fresh data dir killed with -9 three
# times at random moments under the issuing load (docs/performance.md), with sled's
# snapshot written every 20 ms (`[store] checkpoint_ms`) so that kills land
# inside checkpoints too; every restart must open and answer /readyz.
# Stops at the first store that does not open, keeping its data dir.
#   benches/load/kill_soak.sh [BINARY] [ROUNDS]   (default 15)
# Needs wrk, curl, python3.
set -uo pipefail
BIN=${1:-target/release/emisor}
ROUNDS=${2:-15}
LUA=benches/load/facturacion.lua
PID=
trap 'kill -9 "$PID" 2>/dev/null || true' EXIT
. benches/load/demo_company.sh

start() {
  EMISOR_STORE__CHECKPOINT_MS=20 start_server "$BIN"
  await_ready "the store in $DIR/data did not open after a kill -9:"
}

for round in $(seq 1 "$ROUNDS"); do
  DIR=$(mktemp -d)
  start
  demo_company
  for kill in 1 2 3; do
    secs=$((RANDOM % 3 + 1))
    wrk -t2 -c16 -d"${secs}s" -s "$LUA" "$URL/v1/api/facturacion" >/dev/null 2>&1 &
    load=$!
    sleep "$(python3 -c "import random; print(random.uniform(0.3, $secs))")"
    kill -9 "$PID"
    wait "$PID" 2>/dev/null
    kill "$load" 2>/dev/null
    wait "$load" 2>/dev/null
    start
  done
  kill -9 "$PID"
  wait "$PID" 2>/dev/null
  rm -rf "$DIR"
  echo "round $round: 3 kills, every restart opened"
done
