#!/usr/bin/env bash
# The keyed path alone: `GET /v1/api/api-keys/test` with the demo company's
# test key through wrk (2 threads), SECONDS at each number of connections.
# Prints wrk's requests/s and latency percentiles for each.
#   benches/load/auth_path.sh [BINARY] [SECONDS] [CONNECTIONS...]  (15; 16 64)
# ENGINE=postgres stores on a private PostgreSQL cluster (pg_instance.sh).
# Needs wrk (Debian package `wrk`), curl, python3.
set -euo pipefail
BIN=${1:-target/release/emisor}
SECS=${2:-15}
shift 2 || shift $# || true
if [ $# -gt 0 ]; then CONNS=("$@"); else CONNS=(16 64); fi
DIR=$(mktemp -d)
trap 'kill "$PID" 2>/dev/null || true; rm -rf "$DIR"' EXIT

. benches/load/demo_company.sh
start_server "$BIN"
await_ready "the server did not start:"
demo_company

for conn in "${CONNS[@]}"; do
  # A short warm-up (the key resolved once, connections open), not counted.
  wrk -t2 -c"$conn" -d2s -H "X-Api-Key: $KEY" "$URL/v1/api/api-keys/test" >/dev/null
  echo "== ${ENGINE:-sled}, $conn connections, ${SECS} s"
  wrk -t2 -c"$conn" -d"${SECS}s" --latency -H "X-Api-Key: $KEY" "$URL/v1/api/api-keys/test" \
    | grep -E 'Requests/sec|requests in|Non-2xx| (50|90|99)%'
done
