#!/usr/bin/env bash
# The server's CPU per document as a multiple of its own RSA signatures:
# samples the server with `perf` under the issuing load (docs/performance.md) and
# divides all samples by those in OpenSSL's RSA code. Unlike dividing the
# CPU time by `openssl speed` timed before or after, both sides come from
# the same seconds, so a VM whose speed drifts between runs still compares
# builds: run two binaries alternately a few times.
#   benches/load/rsa_share.sh [BINARY] [SECONDS] [CONNECTIONS]
# STORE=<data dir> runs on a copy of that data dir instead of a fresh one
# (keep one from a scale run: KEEP=1 SCALE_DIR=/tmp/s benches/load/scale.sh
# BINARY 1000000, then STORE=/tmp/s/data); WARM (3) seconds of load first
# (15 or more on a large store: its cache fills).
# Needs perf (Debian package `linux-perf`), wrk, curl, python3.
set -euo pipefail
BIN=${1:-target/release/emisor}
SECS=${2:-10}
CONN=${3:-16}
LUA=benches/load/facturacion.lua
DIR=$(mktemp -d)
PID=
trap 'kill -9 "$PID" 2>/dev/null || true; rm -rf "$DIR"' EXIT
. benches/load/demo_company.sh
serve_demo "$BIN"

# A short warm-up, then the load outlasts the sampling on both sides.
wrk -t2 -c"$CONN" -d"${WARM:-3}s" -s "$LUA" "$URL/v1/api/facturacion" >/dev/null
wrk -t2 -c"$CONN" -d"$((SECS + 2))s" -s "$LUA" "$URL/v1/api/facturacion" >"$DIR/wrk" &
WRK=$!
sleep 1
perf record -F 499 -p "$PID" -o "$DIR/perf.data" -- sleep "$SECS" >/dev/null 2>&1
wait "$WRK"
awk '/Requests\/sec/ {print "documents/s: " $2}' "$DIR/wrk"
perf script -F ip,sym -i "$DIR/perf.data" 2>/dev/null | python3 -c '
import re, sys
rsa = re.compile(r"(ossl_rsaz|RSAZ|bn_|BN_|ossl_extract|ossl_bn|rsa_|RSA_)")
total = signing = 0
for line in sys.stdin:
    parts = line.split(None, 1)
    total += 1
    signing += bool(len(parts) > 1 and rsa.match(parts[1].strip()))
print(f"RSA: {100 * signing / max(total, 1):.1f} % of {total} samples")
print(f"CPU per document: {total / max(signing, 1):.2f}x its signature")
'
