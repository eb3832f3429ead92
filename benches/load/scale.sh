#!/usr/bin/env bash
# What one document costs as the store grows: fills one data dir with the
# issuing load of docs/performance.md (benches/load/facturacion.lua, transmit false) up to
# each size, and at each size prints documents/s, latency p99, server CPU per
# document, disk per document, resident memory (at the window's end, and its
# peak within the window), and the time to be ready again after a kill -9.
# Below each row, the window's CPU by thread (µs a document).
# The CPU is also divided by one RSA-2048 signature timed right after each
# window (`rsa_us`, `ratio`): the VM's speed drifts over a 13-minute run,
# and the first reading alone can be minutes away from the window.
#   benches/load/scale.sh [BINARY] [SIZES...]   (default 100000 500000 1000000)
# CONN (16) connections; WINDOW (20) seconds of measurement at each size.
# ENGINE=postgres stores on a private PostgreSQL cluster (pg_instance.sh):
# the CPU per document is then the server's and the cluster's together (the
# cluster's also printed below the row), the disk per document the database's
# size (pg_database_size), and kill -9 kills the server only.
# Needs wrk (Debian package `wrk`), curl, python3, openssl.
set -euo pipefail
BIN=${1:-target/release/emisor}
shift || true
if [ $# -gt 0 ]; then SIZES=("$@"); else SIZES=(100000 500000 1000000); fi
CONN=${CONN:-16}
WINDOW=${WINDOW:-20}
LUA=benches/load/facturacion.lua
DIR=${SCALE_DIR:-$(mktemp -d)}
PID=
trap 'kill -9 "$PID" 2>/dev/null || true; [ -n "${KEEP:-}" ] || rm -rf "$DIR"' EXIT
. benches/load/demo_company.sh

start() { start_server "$BIN"; }
# Seconds from the process start to the first 200 of /readyz.
ready() {
  local t0 t1
  t0=$(date +%s.%N)
  await_ready "the server did not start:"
  t1=$(date +%s.%N)
  python3 -c "print(f'{$t1 - $t0:.2f}')"
}
ticks() { awk '{print $14 + $15}' "/proc/$PID/stat"; }
# CPU ticks of each thread, summed by name ("signer-0 123" a line).
thread_ticks() {
  for t in /proc/"$PID"/task/*; do
    echo "$(tr ' ' _ <"$t/comm") $(awk '{print $14 + $15}' "$t/stat")"
  done | awk '{s[$1] += $2} END {for (k in s) print k, s[k]}'
}
# Accepted documents of one wrk run (its output on stdin).
accepted() {
  awk '/requests in/ {r=$1} /Non-2xx/ {n=$NF} END {print r - n}'
}

mkdir -p "$DIR"
start
ready >/dev/null
URL=$(cat "$DIR/data/listening")
demo_company
# One RSA-2048 signature in µs (openssl speed, one core).
rsa() {
  local sign
  sign=$(openssl speed -seconds "$1" rsa2048 2>/dev/null | awk '/^rsa 2048/ {print $6}')
  python3 -c "print(f'{1e6 / $sign:.0f}')"
}
rsa_us=$(rsa 3)
echo "one RSA-2048 signature (openssl speed, one core): ${rsa_us} us"
printf '%10s %8s %9s %12s %6s %10s %8s %8s %10s %7s %6s\n' \
  documents docs/s p99_ms cpu_us/doc ratio disk/doc rss_MiB peak_MiB restart_s rsa_us ratio

total=0
started=$(date +%s)
for size in "${SIZES[@]}"; do
  # Fill in runs of at most 60 s until the measurement window ends at `size`.
  while :; do
    rate=$(( total > 0 ? total / ($(date +%s) - started + 1) : 1500 ))
    left=$(( size - total - rate * WINDOW ))
    [ "$left" -le 0 ] && break
    secs=$(( left / (rate > 0 ? rate : 1) + 1 ))
    [ "$secs" -gt 60 ] && secs=60
    n=$(wrk -t2 -c"$CONN" -d"${secs}s" -s "$LUA" "$URL/v1/api/facturacion" | accepted)
    total=$((total + n))
  done
  # The kernel's peak resident size (VmHWM) starts again from now.
  echo 5 > "/proc/$PID/clear_refs"
  before=$(ticks)
  db_before=$(engine_ticks)
  threads_before=$(thread_ticks)
  out=$(wrk -t2 -c"$CONN" -d"${WINDOW}s" --latency -s "$LUA" "$URL/v1/api/facturacion")
  after=$(ticks)
  db_after=$(engine_ticks)
  threads_after=$(thread_ticks)
  # The cluster's CPU counted with the server's, as one "thread" of it.
  before=$((before + db_before))
  after=$((after + db_after))
  threads_before=$(printf '%s\npostgresql %s' "$threads_before" "$db_before")
  threads_after=$(printf '%s\npostgresql %s' "$threads_after" "$db_after")
  n=$(echo "$out" | accepted)
  total=$((total + n))
  p99=$(echo "$out" | awk '/ 99%/ {v=$2; if (v ~ /us$/) {sub(/us/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms/,"",v)} else if (v ~ /s$/) {sub(/s/,"",v); v*=1000}; print v}')
  rss=$(awk '/VmRSS/ {print $2}' "/proc/$PID/status")
  peak=$(awk '/VmHWM/ {print $2}' "/proc/$PID/status")
  if [ "${ENGINE:-sled}" = postgres ]; then
    disk=$(psql -At "$PG_URL" -c "SELECT pg_database_size('bench')")
  else
    disk=$(du -sB1 "$DIR/data" | awk '{print $1}')
  fi
  kill -9 "$PID"
  wait "$PID" 2>/dev/null || true
  start
  restart=$(ready)
  URL=$(cat "$DIR/data/listening")
  rsa_now=$(rsa 2)
  python3 - "$total" "$n" "$WINDOW" "$p99" "$before" "$after" "$(getconf CLK_TCK)" "$rsa_us" "$disk" "$rss" "$peak" "$restart" "$rsa_now" <<'PY'
import sys
total, n, window, p99, before, after, hz, rsa, disk, rss, peak, restart, rsa_now = sys.argv[1:]
n = max(int(n), 1)
cpu = (float(after) - float(before)) / float(hz) * 1e6 / n
print(f"{int(total):>10} {n / float(window):>8.0f} {float(p99):>9.1f} {cpu:>12.0f} "
      f"{cpu / float(rsa):>5.2f}x {int(disk) / int(total) / 1024:>8.1f}KB "
      f"{int(rss) / 1024:>8.0f} {int(peak) / 1024:>8.0f} {float(restart):>10.2f} "
      f"{float(rsa_now):>7.0f} {cpu / float(rsa_now):>5.2f}x")
PY
  # Where the window's CPU went, by thread (µs a document, ≥ 1).
  python3 - "$n" "$(getconf CLK_TCK)" "$threads_before" "$threads_after" <<'PY'
import sys
n, hz, before, after = max(int(sys.argv[1]), 1), float(sys.argv[2]), sys.argv[3], sys.argv[4]
load = lambda text: {k: float(v) for k, v in (line.split() for line in text.splitlines() if line)}
b, a = load(before), load(after)
rows = sorted(((a[k] - b.get(k, 0)) / hz * 1e6 / n, k) for k in a)
print("           by thread (us/doc):", ", ".join(f"{k} {us:.0f}" for us, k in reversed(rows) if us >= 1))
PY
done
echo "filled in $(( $(date +%s) - started )) s"
