#!/usr/bin/env bash
# Power-cut soak: ROUNDS rounds, each a fresh data dir (the demo company
# written and closed first) whose server runs SECS seconds of the
# issuing load with tests/powercut/shim.c preloaded, is killed at a random
# moment past half of it, and loses every write no fsync covered and every
# rename and removal no fsync of its directory covered (odd rounds), or a
# random prefix of each file's writes and some of the renames and removals
# (even rounds). The restart must open, and hold at least as many
# documents as were answered 2xx.
# Stops at the first round that fails, keeping its data dir.
#   benches/load/power_cut_soak.sh [BINARY] [ROUNDS] [SECS]   (default 5, 10)
# Needs wrk, curl, python3, cc.
set -uo pipefail
BIN=${1:-target/release/emisor}
ROUNDS=${2:-5}
SECS=${3:-10}
PID=
trap 'kill -9 "$PID" 2>/dev/null || true' EXIT
SHIM=$(mktemp -d)/shim.so
cc -shared -fPIC -O2 -o "$SHIM" tests/powercut/shim.c -ldl || exit 1
. benches/load/demo_company.sh
for round in $(seq 1 $ROUNDS); do
  DIR=$(mktemp -d); mkdir -p $DIR/data
  D=$(cd $DIR/data && pwd -P)
  start_server "$BIN"; await_ready "first start failed"; demo_company
  kill -TERM $PID; wait $PID 2>/dev/null
  rm -f $DIR/journal
  LD_PRELOAD=$SHIM POWERCUT_DIR=$D POWERCUT_JOURNAL=$DIR/journal start_server "$BIN"
  await_ready "shim start failed"
  wrk -t2 -c16 -d${SECS}s -s benches/load/facturacion.lua "$URL/v1/api/facturacion" > $DIR/wrk 2>&1 &
  load=$!
  sleep $(python3 -c "import random; print(random.uniform($SECS*0.5, $SECS*0.95))")
  kill -9 $PID; wait $PID 2>/dev/null; wait $load
  echo "round $round: $(grep 'requests in' $DIR/wrk) journal $(du -h $DIR/journal | cut -f1)"
  python3 tests/powercut/rollback.py $DIR/journal $([ $((round % 2)) = 0 ] && echo some || echo none) | sed 's/^/   /'
  t0=$(date +%s.%N)
  start_server "$BIN"
  await_ready "STORE DID NOT OPEN after the cut: $DIR"
  answered=$(awk '/requests in/ {r=$1} /Non-2xx/ {n=$NF} END {print r - n}' $DIR/wrk)
  stored=$(curl -s "$URL/metrics" | awk '/^emisor_documents\{/ {s+=$NF} END {print s}')
  echo "   restarted in $(python3 -c "print(round($(date +%s.%N)-$t0,2))") s; $(grep -o 'recovered=[0-9]*' $DIR/log | tail -1); answered $answered, stored $stored"
  if [ "$stored" -lt "$answered" ]; then
    echo "   LOST: $((answered - stored)) answered documents missing ($DIR)"
    exit 1
  fi
  grep -E "ERROR" "$DIR/log" | head -3
  kill -9 $PID; wait $PID 2>/dev/null
  rm -rf $DIR
done
