#!/usr/bin/env bash
# The statements PostgreSQL runs per issued document under the issuing load
# (benches/load/facturacion.lua, transmit false), from `pg_stat_statements`
# on a private cluster (pg_instance.sh): statements and transactions a
# document, and each statement's calls a document and mean time.
#   benches/load/pg_statements.sh [BINARY] [SECONDS] [CONNECTIONS]
# LUA and ROUTE choose another issuing route, as in cpu_per_document.sh.
# Needs wrk, curl, python3, psql.
set -euo pipefail
BIN=${1:-target/release/emisor}
SECS=${2:-15}
CONN=${3:-16}
LUA=${LUA:-benches/load/facturacion.lua}
ROUTE=${ROUTE:-/v1/api/facturacion}
DIR=$(mktemp -d)
trap 'kill "$PID" 2>/dev/null || true; rm -rf "$DIR"' EXIT
export ENGINE=postgres
PG_OPTIONS="${PG_OPTIONS:-} -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all"

. benches/load/demo_company.sh
start_server "$BIN"
await_ready "the server did not start:"
demo_company

sql() { psql -X -q -At "$PG_URL" -c "$1"; }
sql "CREATE EXTENSION IF NOT EXISTS pg_stat_statements" >/dev/null
# A short warm-up (connections, prepared statements), not counted.
wrk -t2 -c"$CONN" -d3s -s "$LUA" "$URL$ROUTE" >/dev/null
sql "SELECT pg_stat_statements_reset()" >/dev/null
xacts() { sql "SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = 'bench'"; }
x_before=$(xacts)
out=$(wrk -t2 -c"$CONN" -d"${SECS}s" --latency -s "$LUA" "$URL$ROUTE")
sleep 1 # the last answers' statements counted
x_after=$(xacts)
requests=$(echo "$out" | awk '/requests in/ {print $1}')
refused=$(echo "$out" | awk '/Non-2xx/ {print $NF}')
docs=$((requests - ${refused:-0}))
echo "documents: $docs (refused ${refused:-0})"
# Statement statistics are per database user and database: the server's
# statements are the only ones in `bench` besides these queries.
sql "SELECT round(sum(calls)::numeric / $docs, 2) FROM pg_stat_statements s
     JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = 'bench'
     AND query NOT LIKE '%pg_stat%'" | sed 's/^/statements a document: /'
# Those the server sent (a round trip each), without the ones run inside
# them (a function's statements, foreign-key checks).
sql "SELECT round(sum(calls)::numeric / $docs, 2) FROM pg_stat_statements s
     JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = 'bench'
     AND toplevel AND query NOT LIKE '%pg_stat%'" | sed 's/^/of them sent by the server: /'
python3 -c "import sys; print(f'transactions a document: {(int(sys.argv[2]) - int(sys.argv[1])) / int(sys.argv[3]):.2f}')" \
  "$x_before" "$x_after" "$docs"
echo "calls a document | mean ms | statement (* run inside another)"
sql "SELECT round(calls::numeric / $docs, 2) || ' | ' || round(mean_exec_time::numeric, 3) || ' | '
            || CASE WHEN toplevel THEN '' ELSE '* ' END
            || regexp_replace(left(query, 110), '\s+', ' ', 'g')
     FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
     WHERE d.datname = 'bench' AND query NOT LIKE '%pg_stat%' AND calls >= $docs / 20
     ORDER BY calls DESC"
