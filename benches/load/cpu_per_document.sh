#!/usr/bin/env bash
# Server CPU time per issued document under the issuing load of docs/performance.md
# (benches/load/facturacion.lua, transmit false), printed beside one RSA-2048
# signature on one core (`openssl speed`), measured in the same run.
#   benches/load/cpu_per_document.sh [BINARY] [SECONDS] [CONNECTIONS]
# LUA and ROUTE choose another issuing route (the Spanish-named API:
#   LUA=benches/load/facturacion_es.lua ROUTE=/v1/api/facturacion-es/factura).
# ENGINE=postgres stores on a private PostgreSQL cluster (pg_instance.sh) and
# adds its CPU (every process of the cluster) to the server's.
# Needs wrk (Debian package `wrk`), curl, python3, openssl.
set -euo pipefail
BIN=${1:-target/release/emisor}
SECS=${2:-20}
CONN=${3:-16}
LUA=${LUA:-benches/load/facturacion.lua}
ROUTE=${ROUTE:-/v1/api/facturacion}
DIR=$(mktemp -d)
trap 'kill "$PID" 2>/dev/null || true; rm -rf "$DIR"' EXIT

. benches/load/demo_company.sh
start_server "$BIN"
await_ready "the server did not start:"
demo_company

ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
# A short warm-up (key cache, signing key, allocator), not counted.
wrk -t2 -c"$CONN" -d3s -s "$LUA" "$URL$ROUTE" >/dev/null
before=$(ticks)
db_before=$(engine_ticks)
out=$(wrk -t2 -c"$CONN" -d"${SECS}s" --latency -s "$LUA" "$URL$ROUTE")
after=$(ticks)
db_after=$(engine_ticks)
echo "$out"
requests=$(echo "$out" | awk '/requests in/ {print $1}')
refused=$(echo "$out" | awk '/Non-2xx/ {print $NF}')
docs=$((requests - ${refused:-0}))
hz=$(getconf CLK_TCK)
rss=$(awk '/VmHWM/ {print $2}' "/proc/$PID/status")
sign=$(openssl speed -seconds 3 rsa2048 2>/dev/null | awk '/^rsa 2048/ {print $6}')
python3 - "$before" "$after" "$hz" "$docs" "$sign" "$rss" "$db_before" "$db_after" "${ENGINE:-sled}" "$SECS" <<'PY'
import sys
before, after, hz, docs, sign, rss, db_before, db_after, engine, secs = sys.argv[1:]
per_doc = lambda b, a: (float(a) - float(b)) / float(hz) * 1e6 / max(int(docs), 1)
server_us = per_doc(before, after)
db_us = per_doc(db_before, db_after)
cpu_us = server_us + db_us
rsa_us = 1e6 / float(sign)
print(f"documents: {docs} ({int(docs) / float(secs):.0f}/s)")
if engine == "postgres":
    print(f"emisor CPU per document: {server_us:.0f} us")
    print(f"PostgreSQL CPU per document: {db_us:.0f} us")
print(f"server CPU per document: {cpu_us:.0f} us")
print(f"one RSA-2048 signature (openssl speed, one core): {rsa_us:.0f} us")
print(f"ratio: {cpu_us / rsa_us:.2f}x")
print(f"peak RSS: {int(rss) / 1024:.0f} MB")
PY
