#!/usr/bin/env bash
# POS latency at the till: TILLS registers each selling one receipt every
# PERIOD seconds (20 × 1 / 4 s = 5 receipts/s, half the authority's pacing)
# with `transmitir: true` against the in-process simulator, for SECONDS.
# Optionally BACKLOG background documents (unified API, async) are queued
# first, so the sales run while the transmitter has a backlog to send.
# Prints p50/p90/p99/max of the answer time measured by the client and of
# the service's own `tiempo_emision_ms`, and documents per second.
#   benches/load/pos_latency.sh [BINARY] [SECONDS] [TILLS] [PERIOD] [BACKLOG]
# ENGINE=postgres stores on a private PostgreSQL cluster (pg_instance.sh).
# Needs curl and python3.
set -euo pipefail
BIN=${1:-target/release/emisor}
SECS=${2:-60}
TILLS=${3:-20}
PERIOD=${4:-4}
BACKLOG=${5:-0}
DIR=$(mktemp -d)
trap 'kill "$PID" 2>/dev/null || true; rm -rf "$DIR"' EXIT

. benches/load/demo_company.sh
start_server "$BIN"
await_ready "the server did not start:"
demo_company

python3 - "$URL" "$(keys sk_test)" "$SECS" "$TILLS" "$PERIOD" "$BACKLOG" <<'PY'
import json, sys, threading, time, urllib.request

url, key, secs, tills, period, backlog = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), int(sys.argv[6])

def post(path, body):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                 headers={"X-Api-Key": key, "Content-Type": "application/json"})
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=30) as r:
        data = json.load(r)
    return (time.perf_counter() - t0) * 1000, data

def sale(till, n):
    return {"id_caja": str(till), "id_cajero": str(till), "referencia_externa": f"bench-{till}-{n}",
            "lineas": [{"descripcion": "Café americano", "cantidad": 2, "precio_unitario": 4500,
                        "porcentaje_iva": 8, "tipo_impuesto": "04"},
                       {"descripcion": "Sándwich", "cantidad": 1, "precio_unitario": 12000,
                        "porcentaje_iva": 19}],
            "propina_voluntaria": 1000,
            "pagos": [{"metodo": "10", "monto": 15000}, {"metodo": "48", "monto": 10000}]}

def background(n):
    return {"id_tipo_documento": 4, "async": True, "referencia_externa": f"backlog-{n}",
            "customer": {"identification_number": "1020304050", "name": "Pedro Pérez",
                         "email": "pedro@example.test", "type_document_identification": {"code": "13"}},
            "invoice_lines": [{"description": "Servicio", "invoiced_quantity": 1, "price_amount": 800000,
                               "unit_measure": {"code": "E48"}}],
            "payment_form": {"id": "1", "method": "10"}}

# Warm-up (keys, signing key, connections), not counted.
for i in range(5):
    post("/v1/api/pos/emitir", sale(99, i))
queued = 0
for i in range(backlog):
    ms, d = post("/v1/api/facturacion", background(i))
    queued += 1
if backlog:
    print(f"backlog: {queued} async documents queued before the sales")

results, lock = [], threading.Lock()
start = time.perf_counter() + 0.5
end = start + secs

def till(t):
    n, next_at = 0, start + period * t / tills
    while next_at < end:
        time.sleep(max(0.0, next_at - time.perf_counter()))
        try:
            ms, d = post("/v1/api/pos/emitir", sale(t, n))
            row = (ms, d["data"]["tiempo_emision_ms"], d["data"]["id_estado_documento"])
        except Exception as e:  # counted as a failure
            row = (None, None, str(e))
        with lock:
            results.append(row)
        n += 1
        next_at += period

threads = [threading.Thread(target=till, args=(t,)) for t in range(tills)]
for th in threads: th.start()
for th in threads: th.join()
elapsed = time.perf_counter() - start

ok = [r for r in results if r[0] is not None]
failed = len(results) - len(ok)
def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]
client = [r[0] for r in ok]
server = [r[1] for r in ok]
states = {}
for r in ok: states[r[2]] = states.get(r[2], 0) + 1
print(f"tills: {tills}, one receipt every {period:g} s each, {secs:g} s")
print(f"receipts: {len(ok)} ({failed} failed), states {states}")
print(f"documents/s: {len(ok) / elapsed:.2f}")
print(f"client latency ms: p50 {pct(client, 50):.1f}  p90 {pct(client, 90):.1f}  p99 {pct(client, 99):.1f}  max {max(client):.1f}")
print(f"tiempo_emision_ms: p50 {pct(server, 50)}  p90 {pct(server, 90)}  p99 {pct(server, 99)}  max {max(server)}")
PY
