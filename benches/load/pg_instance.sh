# Sourced by the load scripts (through demo_company.sh). With ENGINE=postgres
# the server runs on a private PostgreSQL cluster of its own: `initdb` in a
# temporary dir, a free port on 127.0.0.1, the distribution's defaults
# (`fsync`, `synchronous_commit` on, shared_buffers 128 MB), run as the
# `postgres` user when the script runs as root (PostgreSQL refuses root).
# A private cluster makes its CPU the benchmark's alone: every process of
# it is the postmaster's child.
#   pg_start      starts it once, creates the database `bench`, and exports
#                 EMISOR_STORE__ENGINE / EMISOR_STORE__URL for the servers
#                 started after it (PG_URL is that URL, PG_PID the postmaster)
#   pg_ticks      CPU ticks of the whole cluster so far: the postmaster's own
#                 and its ended children's (cutime, cstime), plus each live
#                 child's utime + stime
#   pg_stop       stops it and removes its files; a watcher started with it
#                 does so when the script ends (KEEP=1 keeps the files)
# PGBIN (the newest /usr/lib/postgresql/*/bin) chooses the binaries;
# PG_OPTIONS adds server settings (`-c shared_preload_libraries=pg_stat_statements`).
PG_DIR=
PG_PID=
as_pg() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}
pg_start() {
  [ -z "$PG_DIR" ] || return 0
  local bin port
  bin=${PGBIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)}
  port=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
  PG_DIR=$(mktemp -d /tmp/emisor-pg.XXXXXX)
  [ "$(id -u)" = 0 ] && chown postgres "$PG_DIR"
  as_pg "$bin/initdb" -D "$PG_DIR/data" -U emisor -A trust -E UTF8 --locale=C.UTF-8 >/dev/null
  as_pg "$bin/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/log" -w \
    -o "-p $port -c listen_addresses=127.0.0.1 -c unix_socket_directories=$PG_DIR ${PG_OPTIONS:-}" start >/dev/null
  PG_PID=$(head -1 "$PG_DIR/data/postmaster.pid")
  PG_BIN=$bin
  as_pg "$bin/createdb" -h 127.0.0.1 -p "$port" -U emisor bench
  PG_URL="postgres://emisor@127.0.0.1:$port/bench"
  export EMISOR_STORE__ENGINE=postgres EMISOR_STORE__URL=$PG_URL PG_URL
  # Stopped when the script ends, whatever its own EXIT trap does; started
  # as a grandchild, so that the script's `wait` never waits for it.
  ( (
    while kill -0 $$ 2>/dev/null; do sleep 1; done
    as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
    [ -n "${KEEP:-}" ] || rm -rf "$PG_DIR"
  ) >/dev/null 2>&1 </dev/null & )
}
pg_ticks() {
  python3 - "$PG_PID" <<'PY'
import os, sys
root = sys.argv[1]
def fields(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()
total = 0
for pid in os.listdir("/proc"):
    if not pid.isdigit():
        continue
    try:
        f = fields(pid)
    except OSError:
        continue
    # After the name: state, ppid, ... utime (12), stime (13), cutime, cstime.
    if pid == root:
        total += sum(int(x) for x in f[11:15])
    elif f[1] == root:
        total += int(f[11]) + int(f[12])
print(total)
PY
}
pg_stop() {
  [ -n "$PG_DIR" ] || return 0
  as_pg "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$PG_DIR"
  PG_DIR=
}
