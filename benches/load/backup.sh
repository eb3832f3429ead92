#!/bin/bash
# Backup figures (docs/performance.md "Backups"): fills a fresh data dir with
# the issuing load for FILL_S seconds, takes two backups idle and two while
# the load runs (20 s), then the same load without a backup as a baseline;
# prints each backup's answer (pause_ms, duration_ms, bytes), wrk's latency
# for both 20 s runs, then times `verify` (with the key; VERIFY=0 skips it:
# it checks every signature, about 5 ms a document) and `restore`.
#   benches/load/backup.sh target/release/emisor 150
set -euo pipefail
BIN=${1:?emisor binary}
FILL_S=${2:-150}
HERE=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d)
D=$W/data
mkdir "$W/bk"
head -c32 /dev/urandom > "$W/master.key"
export EMISOR_BACKUP__DIR=$W/bk EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE=100000000 RUST_LOG=warn
export EMISOR_SECURITY__MASTER_KEY=$(base64 -w0 "$W/master.key")
"$BIN" serve --bind 127.0.0.1:0 --data-dir "$D" > "$W/server.out" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
while [ ! -s "$D/listening" ]; do sleep 0.2; done
URL=$(cat "$D/listening")
KEY=$(python3 -c "import json;print(json.load(open('$D/demo-keys.json'))['sk_test'])")
TOK=$(python3 -c "import json;print(json.load(open('$D/demo-keys.json'))['admin_token'])")
# The demo company's monthly limit (10 000) would stop the fill.
curl -sf -X PATCH -H "Authorization: Bearer $TOK" -H 'Content-Type: application/json' \
  -d '{"limite_documentos_mes":100000000}' "$URL/admin/companies/1" > /dev/null
load() { KEY=$KEY TRANSMIT=false wrk -t2 -c8 -d"$1"s --latency -s "$HERE/facturacion.lua" "$URL/v1/api/facturacion"; }
backup() { curl -s -X POST -H "Authorization: Bearer $TOK" -H 'Content-Type: application/json' \
  -d "{\"destino\":\"$1\"}" "$URL/admin/backup"; echo; }
load "$FILL_S" > "$W/fill.txt"
backup idle1
backup idle2
load 20 > "$W/during.txt" &
LOAD=$!
sleep 5; backup load1; sleep 5; backup load2
wait $LOAD
load 20 > "$W/baseline.txt"
kill $SERVER; wait $SERVER || true
for f in during baseline; do echo "== $f"; grep -E "50%|99%|Requests/sec" "$W/$f.txt"; done
du -sh "$D/sled" "$D/files" "$W"/bk/*
[ "${VERIFY:-1}" = 0 ] || /usr/bin/time -f "verify: %e s, %M KiB" "$BIN" admin verify --from "$W/bk/load2" --key "$W/master.key" | tail -12
/usr/bin/time -f "restore: %e s, %M KiB" "$BIN" admin restore --from "$W/bk/load2" --data-dir "$W/restored" > /dev/null
rm -rf "$W"
