#!/usr/bin/env bash
# Issuing while the events sweep runs: a store holding INVOICES accepted
# invoices of the demo company (issued with `transmit: true` to the
# in-process simulator, the authority's pacing lifted for the fill only),
# then the issuing load (facturacion.lua, `transmit: false`, CONN
# connections, WINDOW seconds) twice on it, with the product's pacing: the
# sweep off, then on at RATE calls a second (`[events_sweep] per_second`,
# one sweep after another). Prints the p50/p99 of each run, documents a
# second, and the GetStatusEvent calls the simulator answered during the
# sweeping run (every invoice is open; the in-process simulator, started
# again with the server, no longer knows them and answers 66: a call all
# the same).
#   benches/load/events_sweep.sh [BINARY] [INVOICES] [RATE]   (100000, 1)
# Environment: CONN (16), WINDOW (20 s), ROUNDS (1: off then on, repeated),
# FILL_CONN (16), KEEP=1 keeps the
# data dir (printed; its master key beside it), STORE starts from a copy of
# a data dir kept so (its `.key` beside it). Needs wrk, curl and python3.
set -euo pipefail
BIN=${1:-target/release/emisor}
INVOICES=${2:-100000}
RATE=${3:-1}
CONN=${CONN:-16}
WINDOW=${WINDOW:-20}
FILL_CONN=${FILL_CONN:-16}
DIR=$(mktemp -d)
PID=""
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null || true
  if [ "${KEEP:-0}" = 1 ]; then echo "kept: $DIR/data (key $DIR/data.key)"; else rm -rf "$DIR"; fi
}
trap cleanup EXIT

. benches/load/demo_company.sh

stop_server() {
  kill "$PID"
  while kill -0 "$PID" 2>/dev/null; do sleep 0.1; done
  PID=""
}

accepted() {
  curl -sf -H "X-Api-Key: $KEY" "$URL/v1/api/facturacion?estado=2&limit=1" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["total"])'
}

status_event_calls() {
  curl -sf "$(keys tax_sim_url)/__sim/stats" |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["calls"].get("GetStatusEvent", 0))'
}

# The fill: accepted invoices, as fast as the simulator takes them (on a
# copy of STORE, when given, only what it lacks).
copy_store
EMISOR_EVENTS_SWEEP__PER_SECOND=0 EMISOR_AUTHORITY__MAX_REQUESTS_PER_SECOND=100000 \
  EMISOR_AUTHORITY__MAX_IN_FLIGHT=$FILL_CONN start_server "$BIN"
disown "$PID"
await_ready "the server did not start:"
demo_company
started=$(date +%s)
while [ "$(accepted)" -lt "$INVOICES" ]; do
  TRANSMIT=true wrk -t2 -c"$FILL_CONN" -d10s -s benches/load/facturacion.lua \
    "$URL/v1/api/facturacion" >/dev/null
done
echo "fill: $(accepted) accepted invoices in $(( $(date +%s) - started )) s"
stop_server

# One issuing run on the store: "$1" names it; the sweep's rate is "$2".
run() {
  EMISOR_EVENTS_SWEEP__PER_SECOND=$2 EMISOR_EVENTS_SWEEP__INTERVAL_S=1 start_server "$BIN"
  disown "$PID"
  await_ready "the server did not restart:"
  demo_company
  local before after out
  before=$(status_event_calls)
  out=$(TRANSMIT=false wrk -t2 -c"$CONN" -d"${WINDOW}s" --latency \
    -s benches/load/facturacion.lua "$URL/v1/api/facturacion")
  after=$(status_event_calls)
  echo "$out" | python3 -c '
import re, sys
name, calls = sys.argv[1], sys.argv[2]
text = sys.stdin.read()
def ms(label):
    m = re.search(r"^\s*" + label + r"\s+([\d.]+)(us|ms|s)\s*$", text, re.M)
    if not m:
        return float("nan")
    v, u = float(m.group(1)), m.group(2)
    return v / 1000 if u == "us" else v * 1000 if u == "s" else v
rate = re.search(r"Requests/sec:\s+([\d.]+)", text)
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", text)
p50, p99 = ms("50%"), ms("99%")
per_s = float(rate.group(1)) if rate else 0.0
refused = bad.group(1) if bad else "0"
print(f"{name}: p50 {p50:.1f} ms, p99 {p99:.1f} ms, {per_s:.0f} documents/s, "
      f"refused {refused}, GetStatusEvent calls {calls}")
' "$1" "$((after - before))"
  stop_server
}

for _ in $(seq "${ROUNDS:-1}"); do
  run "sweep off" 0
  run "sweep on ($RATE/s)" "$RATE"
done
