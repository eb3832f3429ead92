#!/usr/bin/env bash
# Other requests while hostile XML uploads run. CLIENTS clients each issue
# invoice drafts (POST /v1/api/facturacion, `transmit: false`: validate,
# number, build, sign, store) one after another for SECONDS, first alone,
# then while HOSTILE clients upload (POST /v1/api/eventos/cargar-documento)
# the costliest XML the bounds let through, without pause: 100 namespace
# declarations on nested elements as deep as they go, ~100,000 elements in
# the default namespace, a signature whose reference covers the document
# (so the upload is read and canonicalised in full before its digest
# fails). Prints both runs' p50/p99/max and requests per second, the
# p99 ratio, and what the uploads got (422 refused, 503 BUSY).
#   benches/load/upload_hostile.sh [BINARY] [SECONDS] [CLIENTS] [HOSTILE]
# Needs curl and python3.
set -euo pipefail
BIN=${1:-target/release/emisor}
SECS=${2:-30}
CLIENTS=${3:-4}
HOSTILE=${4:-8}
DIR=$(mktemp -d)
trap 'kill "$PID" 2>/dev/null || true; rm -rf "$DIR"' EXIT

. benches/load/demo_company.sh
start_server "$BIN"
await_ready "the server did not start:"
demo_company

python3 - "$URL" "$KEY" "$(keys nit)" "$SECS" "$CLIENTS" "$HOSTILE" "$PID" <<'PY'
import base64, json, sys, threading, time, urllib.error, urllib.request

url, key, nit, secs, clients, hostile, pid = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7])

def call(path, body):
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(),
                                 headers={"X-Api-Key": key, "Content-Type": "application/json"})
    t0 = time.perf_counter()
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            r.read()
            status = r.status
    except urllib.error.HTTPError as e:
        e.read()
        status = e.code
    return (time.perf_counter() - t0) * 1000, status

def line(n, price):
    return {"description": f"Producto {n}", "invoiced_quantity": n, "price_amount": price,
            "unit_measure": {"code": "94"}, "tax_totals": [{"tax_code": "01", "tax_name": "IVA", "percent": 19}]}

def draft(ref):
    return {"id_tipo_documento": 1, "transmit": False, "referencia_externa": ref,
            "customer": {"identification_number": "900123456", "name": "Cliente Carga S.A.S.",
                         "email": "carga@example.com", "type_document_identification": {"code": "31"},
                         "type_organization": {"code": "1"}, "address": "Calle 1 # 2-3",
                         "municipality": {"code": "11001", "name": "Bogotá"}},
            "invoice_lines": [line(1, 1000), line(2, 2500), line(3, 1200), line(4, 990), line(5, 15000)]}

def hostile_xml():
    ns = {"": "urn:oasis:names:specification:ubl:schema:xsd:Invoice-2",
          "cac": "urn:oasis:names:specification:ubl:schema:xsd:CommonAggregateComponents-2",
          "cbc": "urn:oasis:names:specification:ubl:schema:xsd:CommonBasicComponents-2",
          "ds": "http://www.w3.org/2000/09/xmldsig#"}
    root = "<Invoice " + " ".join(f'xmlns{":" + p if p else ""}="{u}"' for p, u in ns.items()) + ">"
    party = lambda role, n: (f"<cac:{role}><cac:Party><cac:PartyTaxScheme><cbc:CompanyID>{n}</cbc:CompanyID>"
                             f"</cac:PartyTaxScheme></cac:Party></cac:{role}>")
    head = ("<cbc:ProfileExecutionID>2</cbc:ProfileExecutionID><cbc:ID>SETP990000001</cbc:ID>"
            f"<cbc:UUID>{'ab' * 48}</cbc:UUID><cbc:IssueDate>2026-01-02</cbc:IssueDate>"
            + party("AccountingSupplierParty", "900000099") + party("AccountingCustomerParty", nit)
            + '<cac:LegalMonetaryTotal><cbc:PayableAmount currencyID="COP">1.00</cbc:PayableAmount></cac:LegalMonetaryTotal>')
    ds = "http://www.w3.org/2000/09/xmldsig#"
    sig = (f'<ds:Signature><ds:SignedInfo><ds:CanonicalizationMethod Algorithm="http://www.w3.org/TR/2001/REC-xml-c14n-20010315"/>'
           f'<ds:SignatureMethod Algorithm="http://www.w3.org/2001/04/xmldsig-more#rsa-sha256"/>'
           f'<ds:Reference URI=""><ds:Transforms><ds:Transform Algorithm="{ds}enveloped-signature"/></ds:Transforms>'
           f'<ds:DigestMethod Algorithm="http://www.w3.org/2001/04/xmlenc#sha256"/>'
           f'<ds:DigestValue>{"A" * 43}=</ds:DigestValue></ds:Reference></ds:SignedInfo>'
           f'<ds:SignatureValue>AAAA</ds:SignatureValue></ds:Signature>')
    nest = 100 - len(ns)
    fixed = 1 + head.count("<c") + sig.count("<ds:") + nest
    inner = "<a/>" * (100_000 - fixed)
    opens = "".join(f'<p{i}:n xmlns:p{i}="urn:p:{i}">' for i in range(nest))
    closes = "".join(f"</p{i}:n>" for i in reversed(range(nest)))
    return root + head + opens + inner + closes + sig + "</Invoice>"

body = {"xml_base64": base64.b64encode(hostile_xml().encode()).decode()}
print(f"hostile upload: {len(json.dumps(body))} bytes of JSON")
ms, status = call("/v1/api/eventos/cargar-documento", body)
print(f"one hostile upload alone: {status} in {ms:.0f} ms")

def cpu_s():
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0

def run(label, with_hostile):
    stop = threading.Event()
    uploads, ulock = {}, threading.Lock()
    def attacker():
        while not stop.is_set():
            _, status = call("/v1/api/eventos/cargar-documento", body)
            with ulock:
                uploads[status] = uploads.get(status, 0) + 1
    attackers = [threading.Thread(target=attacker) for _ in range(hostile if with_hostile else 0)]
    for t in attackers:
        t.start()
    if with_hostile:
        time.sleep(1.0)  # the pool busy before the measure
    results, lock = [], threading.Lock()
    end = time.perf_counter() + secs
    def client(c):
        n = 0
        while time.perf_counter() < end:
            ms, status = call("/v1/api/facturacion", draft(f"{label}-{c}-{n}-{time.time_ns()}"))
            with lock:
                results.append((ms, status))
            n += 1
    cpu0, t0 = cpu_s(), time.perf_counter()
    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed, cpu = time.perf_counter() - t0, cpu_s() - cpu0
    stop.set()
    for t in attackers:
        t.join()
    lat = sorted(ms for ms, s in results if s == 200)
    bad = sum(1 for _, s in results if s != 200)
    pick = lambda q: lat[min(len(lat) - 1, int(q * len(lat)))]
    print(f"{label}: {len(lat)} drafts in {elapsed:.1f} s ({len(lat) / elapsed:.0f}/s), "
          f"p50 {pick(0.50):.1f} ms, p99 {pick(0.99):.1f} ms, max {lat[-1]:.1f} ms, "
          f"non-200 {bad}, server CPU {cpu / elapsed * 100:.0f} %"
          + (f", uploads by status {dict(sorted(uploads.items()))}" if with_hostile else ""))
    return pick(0.99)

# Warm-up: keys, signing key, connections.
for i in range(20):
    call("/v1/api/facturacion", draft(f"warm-{i}-{time.time_ns()}"))
alone = run("alone", False)
attacked = run(f"with {hostile} hostile uploads", True)
print(f"p99 with the hostile uploads / alone: {attacked / alone:.2f}")
PY
