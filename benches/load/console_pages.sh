#!/usr/bin/env bash
# Each console page's server time on a store of COUNT documents: fills a
# data dir across the families (benches/load/console_fill.lua: invoices,
# support documents, POS receipts on 4 registers and 8 cashiers, payrolls;
# `transmit: false`) for the demo company and COMPANIES-1 more, all issued
# today, then RECEIVED invoices the demo company issues to a buyer company
# of the service (accepted by the in-process simulator) with the buyer's
# 030 and 032 on each and 033 on a tenth (those become eligible titles).
# Then it signs in through the sign-in form with the demo company's key
# and with the admin token and asks each page RUNS times with curl, one
# request at a time, printing per page and session the p50 and the max of
# curl's time_starttransfer (request sent to first byte: the server's
# time plus a loopback round trip). A page the build does not serve (404)
# is listed as missing.
#   benches/load/console_pages.sh [BINARY] [COUNT]   (target/release/emisor, 100000)
# Environment: COMPANIES (4), RECEIVED (100), RUNS (20), CONN (16),
# KEEP=1 keeps the data dir (printed; its master key beside it), STORE
# starts from a copy of a data dir kept so (nothing filled).
# Needs wrk, curl and python3.
set -euo pipefail
BIN=${1:-target/release/emisor}
COUNT=${2:-100000}
COMPANIES=${COMPANIES:-4}
RECEIVED=${RECEIVED:-100}
RUNS=${RUNS:-20}
CONN=${CONN:-16}
DIR=$(mktemp -d)
PID=""
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null || true
  if [ "${KEEP:-0}" = 1 ]; then echo "kept: $DIR/data (key $DIR/data.key)"; else rm -rf "$DIR"; fi
}
trap cleanup EXIT

. benches/load/demo_company.sh

admin() {  # METHOD PATH [BODY]
  curl -sf -X "$1" -H "Authorization: Bearer $(keys admin_token)" \
    -H 'Content-Type: application/json' "$URL$2" ${3:+-d "$3"}
}
copy_store
EMISOR_AUTHORITY__MAX_REQUESTS_PER_SECOND=100000 start_server "$BIN"
disown "$PID"
await_ready "the server did not start:"
demo_company
ADMIN=$(keys admin_token)

if [ -z "${STORE:-}" ]; then
  # The other companies (demo-provisioned: resolutions, certificate,
  # keys), their monthly limit lifted; and the buyer of the received
  # invoices (the examples' customer, NIT 800197268).
  KEYS=$KEY
  for n in $(seq 2 "$COMPANIES"); do
    created=$(admin POST /admin/companies "{\"nit\": \"90000000$n\", \"razon_social\": \"Empresa $n S.A.S.\", \"demo\": true}")
    id=$(echo "$created" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["id_empresa"])')
    admin PATCH "/admin/companies/$id" '{"limite_documentos_mes": 100000000}' >/dev/null
    KEYS="$KEYS,$(echo "$created" | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["sk_test"])')"
  done
  admin POST /admin/companies '{"nit": "800197268", "razon_social": "Comprador S.A.S.", "demo": true}' \
    >"$DIR/data/buyer.json"
  BUYER_KEY=$(python3 -c 'import json; print(json.load(open("'"$DIR"'/data/buyer.json"))["data"]["sk_test"])')

  started=$(date +%s)
  total() {
    python3 - "$URL" "$KEYS" <<'PY'
import json, sys, urllib.request
url, keys = sys.argv[1], sys.argv[2].split(",")
n = 0
for key in keys:
    for path in ("/v1/api/facturacion", "/v1/api/documentos-soporte", "/v1/api/pos", "/v1/api/nomina/listar"):
        req = urllib.request.Request(f"{url}{path}?limit=1", headers={"X-Api-Key": key})
        with urllib.request.urlopen(req, timeout=60) as r:
            n += json.load(r)["data"]["total"]
print(n)
PY
  }
  have=$(total)
  while [ "$have" -lt "$COUNT" ]; do
    left=$((COUNT - have))
    secs=$(( left / 600 + 1 )); [ "$secs" -gt 60 ] && secs=60
    out=$(KEYS=$KEYS wrk -t"$COMPANIES" -c"$CONN" -d"${secs}s" -s benches/load/console_fill.lua "$URL")
    before=$have
    have=$(total)
    if [ "$have" -le "$before" ]; then
      echo "the fill made no documents:" >&2; echo "$out" >&2; tail -5 "$DIR/log" >&2; exit 1
    fi
    echo "filled $have documents ($(( $(date +%s) - started )) s)"
  done

  # Received invoices with their events, and eligible titles.
  python3 - "$URL" "$KEY" "$BUYER_KEY" "$RECEIVED" <<'PY'
import json, sys, urllib.request
url, seller, buyer, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
def post(path, key, body):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                 headers={"X-Api-Key": key, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as r:
        return json.load(r)
for i in range(n):
    inv = post("/v1/api/facturacion", seller, {
        "id_tipo_documento": 1, "transmit": True, "referencia_externa": f"received-{i}",
        "customer": {"identification_number": "800197268", "name": "Comprador S.A.S.",
                     "email": "c@example.test", "type_document_identification": {"code": "31"},
                     "type_organization": {"code": "1"}, "address": "Calle 1 # 2-3",
                     "municipality": {"code": "11001", "name": "Bogotá"}},
        "payment_form": {"id": "2", "method": "42", "due_date": "2030-12-31"},
        "invoice_lines": [{"description": "Producto", "invoiced_quantity": 1, "price_amount": 100000,
                           "unit_measure": {"code": "94"},
                           "tax_totals": [{"tax_code": "01", "tax_name": "IVA", "percent": 19}]}]})
    cufe = inv["data"]["cufe"]
    post("/v1/api/eventos/acuse-recibo", buyer, {"cufe": cufe})
    post("/v1/api/eventos/recibo-bien", buyer, {"cufe": cufe})
    if i % 10 == 0:
        post("/v1/api/eventos/aceptacion-expresa", buyer, {"cufe": cufe})
print(f"received: {n} invoices with 030 and 032, {len(range(0, n, 10))} accepted (033)")
PY
fi

# A session through the sign-in form: its cookie jar.
sign_in() {  # CREDENTIAL JAR
  local csrf
  csrf=$(curl -sf -c "$2" "$URL/console/entrar" | python3 -c '
import re, sys; print(re.search(r"name=\"csrf\" value=\"([^\"]+)\"", sys.stdin.read()).group(1))')
  curl -sf -o /dev/null -b "$2" -c "$2" --data-urlencode "csrf=$csrf" \
    --data-urlencode "credencial=$1" "$URL/console/entrar"
}
buyer() { python3 -c 'import json,sys; print(json.load(open("'"$DIR"'/data/buyer.json"))["data"][sys.argv[1]])' "$1"; }
BUYER_KEY=$(buyer sk_test)
BUYER_ID=$(buyer id_empresa)
sign_in "$KEY" "$DIR/company.jar"
sign_in "$BUYER_KEY" "$DIR/buyer.jar"
sign_in "$ADMIN" "$DIR/admin.jar"

doc=$(curl -sf -H "X-Api-Key: $KEY" "$URL/v1/api/facturacion?limit=1" |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["items"][0]["id"])')
cufe=$(curl -sf -H "X-Api-Key: $KEY" "$URL/v1/api/registry/facturas-elegibles?limit=1" |
  python3 -c 'import json,sys; i=json.load(sys.stdin)["data"]["items"]; print(i[0]["cufe"] if i else "")')
today=$(TZ=America/Bogota date +%F)
echo "store: $(du -sh "$DIR/data" | cut -f1), documents: ${COUNT}+, runs per page: $RUNS"

# "session page": company is the demo company's key, buyer the buyer's
# key (the received invoices are its), admin the admin token.
PAGES=(
  "company /console" "admin /console"
  "company /console/documentos" "admin /console/documentos"
  "company /console/documentos?familia=pos"
  "company /console/documentos?estado=1&desde=$today&hasta=$today"
  "company /console/documentos?q=SETP"
  "company /console/documentos/$doc" "admin /console/documentos/$doc"
  "company /console/nomina" "admin /console/nomina"
  "company /console/nomina?pagina=100"
  "company /console/pos" "admin /console/pos"
  "company /console/soporte" "admin /console/soporte"
  "buyer /console/recibidas" "admin /console/recibidas?empresa=$BUYER_ID"
  "company /console/registro" "admin /console/registro"
  "company /console/registro?cufe=$cufe"
  "buyer /console" "admin /console/empresas"
)
printf '%-58s %-8s %8s %8s\n' page session p50_ms max_ms
for entry in "${PAGES[@]}"; do
  session=${entry%% *}
  page=${entry#* }
  python3 - "$URL$page" "$DIR/$session.jar" "$RUNS" "$page" "$session" <<'PY'
import statistics, subprocess, sys
url, jar, runs, page, session = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
if len(page) > 58:
    page = page[:55] + "..."
times, status = [], ""
for _ in range(runs + 1):
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-b", jar, "-w", "%{http_code} %{time_starttransfer}", url],
                         capture_output=True, text=True).stdout.split()
    status = out[0]
    times.append(float(out[1]) * 1000)
times = times[1:]  # the first one warms the page's code and the store's cache
if status == "404":
    print(f"{page:<58} {session:<8} {'missing (404)':>17}")
elif status != "200":
    print(f"{page:<58} {session:<8} {'status ' + status:>17}")
else:
    print(f"{page:<58} {session:<8} {statistics.median(times):8.1f} {max(times):8.1f}")
PY
done
