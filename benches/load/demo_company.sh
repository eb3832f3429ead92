# Sourced by the load scripts. `await_ready WHAT` waits until the server
# of data dir "$DIR" (process "$PID") answers /readyz and sets its "$URL",
# or prints WHAT and the server's log and exits if the process ended.
# Once it listens: `keys NAME` reads a key of its demo-keys.json, and
# `demo_company` lifts the demo company's monthly limit out of the load's
# way and exports its test key (KEY) and TRANSMIT=false for the wrk scripts.
# Before it starts: `copy_store` puts a copy of the data dir STORE (and the
# master key beside it) at "$DIR/data", when STORE is set. `start_server BIN`
# starts BIN on data dir "$DIR/data" on a free port, its output appended to
# "$DIR/log", with the rate limit out of the load's way, and sets PID (other
# settings as environment variables before the call). `serve_demo BIN` is
# all of it for a load on one server: the copy of STORE (if set), BIN
# started (disowned: no job notice when the trap kills it) and awaited, and
# the demo company ready.
# ENGINE=postgres: the first `start_server` starts a private PostgreSQL
# cluster (pg_instance.sh) and every server of the script stores there;
# `engine_ticks` is then that cluster's CPU ticks (0 on sled).
. benches/load/pg_instance.sh
engine_ticks() {
  if [ "${ENGINE:-sled}" = postgres ]; then pg_ticks; else echo 0; fi
}
copy_store() {
  [ -n "${STORE:-}" ] || return 0
  cp -a "$STORE" "$DIR/data"
  cp -a "$STORE.key" "$DIR/data.key"  # its master key, beside it
  rm -f "$DIR/data/listening"
  sync  # the copy's gigabytes written back now, not during the load
}
start_server() {
  if [ "${ENGINE:-sled}" = postgres ]; then pg_start; fi
  rm -f "$DIR/data/listening"
  EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE=1000000000 RUST_LOG=${RUST_LOG:-warn} \
    setsid "$1" serve --data-dir "$DIR/data" --bind 127.0.0.1:0 >>"$DIR/log" 2>&1 </dev/null &
  PID=$!
}
serve_demo() {
  copy_store
  start_server "$1"
  disown "$PID"
  await_ready "the server did not start:"
  demo_company
}
await_ready() {
  until [ -s "$DIR/data/listening" ] && curl -sf -o /dev/null "$(cat "$DIR/data/listening")/readyz"; do
    if ! kill -0 "$PID" 2>/dev/null; then
      echo "$1" >&2
      tail -20 "$DIR/log" >&2
      exit 1
    fi
    sleep 0.01
  done
  URL=$(cat "$DIR/data/listening")
}
keys() { python3 -c "import json,sys;print(json.load(open('$DIR/data/demo-keys.json'))[sys.argv[1]])" "$1"; }
demo_company() {
  curl -sf -o /dev/null --retry 50 --retry-connrefused --retry-delay 1 -X PATCH \
    -H "Authorization: Bearer $(keys admin_token)" \
    -H 'Content-Type: application/json' "$URL/admin/companies/1" \
    -d '{"limite_documentos_mes": 100000000}'
  KEY=$(keys sk_test)
  export KEY TRANSMIT=false
}
