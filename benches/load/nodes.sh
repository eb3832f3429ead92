#!/usr/bin/env bash
# The issuing load (benches/load/facturacion.lua, transmit false) spread
# over 1, 2, 3… emisor nodes on one private PostgreSQL cluster
# (pg_instance.sh), as an installation runs them behind a load balancer
# (docs/operations.md, "Several nodes"): each node with a data dir of its
# own and the same master key beside it; one `wrk` per node, the
# connections split evenly among them (the same total at every count).
# Prints, per count: documents/s (all nodes), the worst node's p99, and
# the server CPU a document (every node's and the cluster's, from /proc).
#   benches/load/nodes.sh [BINARY] [SECONDS] [CONNECTIONS] [COUNTS…]   (20, 16, 1 2 3)
# Needs wrk, curl, python3.
set -euo pipefail
BIN=${1:-target/release/emisor}
SECS=${2:-20}
CONN=${3:-16}
shift $(($# < 3 ? $# : 3))
COUNTS=${*:-1 2 3}
LUA=benches/load/facturacion.lua
ROUTE=/v1/api/facturacion
export ENGINE=postgres
DIR=$(mktemp -d)
NODE_PIDS=()
NODE_URLS=()
trap 'for p in "${NODE_PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$DIR"' EXIT

. benches/load/demo_company.sh
# The first node starts alone on the empty database and makes the demo
# company; its keys serve every node.
start_server "$BIN"
disown "$PID"
await_ready "the first node did not start:"
demo_company
NODE_PIDS+=("$PID")
NODE_URLS+=("$URL")
MAX=$(printf '%s\n' $COUNTS | sort -n | tail -1)
for i in $(seq 2 "$MAX"); do
  mkdir -m 700 "$DIR/node$i"
  cp -a "$DIR/data.key" "$DIR/node$i.key"
  EMISOR_RATE_LIMIT__REQUESTS_PER_MINUTE=1000000000 RUST_LOG=${RUST_LOG:-warn} \
    setsid "$BIN" serve --data-dir "$DIR/node$i" --bind 127.0.0.1:0 >>"$DIR/log" 2>&1 </dev/null &
  pid=$!
  disown "$pid"
  NODE_PIDS+=("$pid")
  until [ -s "$DIR/node$i/listening" ] && curl -sf -o /dev/null "$(cat "$DIR/node$i/listening")/readyz"; do
    kill -0 "$pid" 2>/dev/null || { echo "node $i did not start:" >&2; tail -20 "$DIR/log" >&2; exit 1; }
    sleep 0.05
  done
  NODE_URLS+=("$(cat "$DIR/node$i/listening")")
done

node_ticks() {
  local total=0 p
  for p in "$@"; do total=$((total + $(awk '{print $14 + $15}' "/proc/$p/stat"))); done
  echo "$total"
}
hz=$(getconf CLK_TCK)
echo "nodes | documents/s | p99 (worst node) | server CPU a document: nodes + PostgreSQL"
for n in $COUNTS; do
  per=$((CONN / n))
  [ "$per" -ge 1 ] || per=1
  pids=("${NODE_PIDS[@]:0:n}")
  # A short warm-up on each node (connections, prepared statements).
  for i in $(seq 0 $((n - 1))); do
    wrk -t1 -c"$per" -d3s -s "$LUA" "${NODE_URLS[$i]}$ROUTE" >/dev/null &
  done
  wait
  before=$(node_ticks "${pids[@]}")
  db_before=$(pg_ticks)
  for i in $(seq 0 $((n - 1))); do
    wrk -t1 -c"$per" -d"${SECS}s" --latency -s "$LUA" "${NODE_URLS[$i]}$ROUTE" >"$DIR/wrk$i" &
  done
  wait
  after=$(node_ticks "${pids[@]}")
  db_after=$(pg_ticks)
  python3 - "$n" "$SECS" "$hz" "$before" "$after" "$db_before" "$db_after" "$DIR" <<'PY'
import re, sys
n, secs, hz, before, after, db_before, db_after, d = sys.argv[1:]
n, secs, hz = int(n), float(secs), float(hz)
docs, p99s = 0, []
unit = {"us": 1e-3, "ms": 1.0, "s": 1e3}
for i in range(n):
    out = open(f"{d}/wrk{i}").read()
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    refused = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    docs += requests - (int(refused.group(1)) if refused else 0)
    v, u = re.search(r"99%\s+([\d.]+)(us|ms|s)", out).groups()
    p99s.append(float(v) * unit[u])
per_doc = lambda b, a: (float(a) - float(b)) / hz * 1e6 / max(docs, 1)
nodes_us, db_us = per_doc(before, after), per_doc(db_before, db_after)
print(f"{n} | {docs / secs:.0f} | {max(p99s):.1f} ms | {nodes_us:.0f} + {db_us:.0f} = {nodes_us + db_us:.0f} us")
PY
done
