#!/usr/bin/env bash
# Resident memory over a long stretch of the issuing load (docs/performance.md)
# (benches/load/facturacion.lua, transmit false): one server, MINUTES
# minutes, and each minute the documents added and the server's RSS (and
# its peak, the kernel's VmHWM). The duplicate window fills in its first
# five minutes (`resilience.duplicate_window_s`); after that a server that
# keeps nothing per document holds its RSS in a band however many
# documents the store gains. `scale.sh` restarts the server at each size,
# so its RSS readings follow different stretches of uptime; this one shows
# the store growing under one process.
#   benches/load/rss_soak.sh [BINARY] [MINUTES]   (default 30)
# STORE=<data dir> starts from a copy of that data dir (with its `.key`
# beside it, as `scale.sh` leaves one with KEEP=1) instead of a fresh one.
# Needs wrk, curl, python3.
set -euo pipefail
BIN=${1:-target/release/emisor}
MINUTES=${2:-30}
LUA=benches/load/facturacion.lua
DIR=$(mktemp -d)
PID=
trap 'kill -9 "$PID" 2>/dev/null || true; rm -rf "$DIR"' EXIT
. benches/load/demo_company.sh
serve_demo "$BIN"
mib() { awk "/^$1:/ {print int(\$2 / 1024)}" "/proc/$PID/status"; }
echo "minute documents_added refused rss_MiB peak_MiB"
echo "0 0 0 $(mib VmRSS) $(mib VmHWM)"
added=0
refused=0
for minute in $(seq 1 "$MINUTES"); do
  read -r n r < <(wrk -t2 -c16 -d60s -s "$LUA" "$URL/v1/api/facturacion" |
    awk '/requests in/ {r=$1} /Non-2xx/ {n=$NF} END {print r - n, n + 0}')
  added=$((added + n))
  refused=$((refused + r))
  echo "$minute $added $refused $(mib VmRSS) $(mib VmHWM)"
done
if [ "$refused" -gt 0 ]; then
  echo "refused requests: the server's log ends"
  tail -20 "$DIR/log"
fi
