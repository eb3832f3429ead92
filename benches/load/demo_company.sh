# Sourced by the load scripts, once the server of data dir "$DIR" listens
# at "$URL": `keys NAME` reads a key of its demo-keys.json, and
# `demo_company` lifts the demo company's monthly limit out of the load's
# way and exports its test key (KEY) and TRANSMIT=false for the wrk scripts.
keys() { python3 -c "import json,sys;print(json.load(open('$DIR/data/demo-keys.json'))[sys.argv[1]])" "$1"; }
demo_company() {
  curl -sf -o /dev/null --retry 50 --retry-connrefused --retry-delay 1 -X PATCH \
    -H "Authorization: Bearer $(keys admin_token)" \
    -H 'Content-Type: application/json' "$URL/admin/companies/1" \
    -d '{"limite_documentos_mes": 100000000}'
  KEY=$(keys sk_test)
  export KEY TRANSMIT=false
}
