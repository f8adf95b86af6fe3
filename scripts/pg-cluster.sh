#!/usr/bin/env bash
# A throwaway PostgreSQL cluster for the tests: initdb into a temporary directory and
# pg_ctl on a loopback port, as an unprivileged user (the `postgres` account when run
# as root), no system service. Durability is off (fsync, full-page writes): nothing in
# it outlives the run. TESSERA_PG_DURABLE=1 keeps PostgreSQL's defaults instead, for
# benchmarks whose figures should hold for a real deployment.
#   scripts/pg-cluster.sh start DIR   prints the URL of its `postgres` database
#   scripts/pg-cluster.sh stop DIR
set -euo pipefail
cmd=${1:?usage: pg-cluster.sh start|stop DIR}
dir=${2:?usage: pg-cluster.sh start|stop DIR}
port=${TESSERA_TEST_PG_PORT:-55432}

bindir=""
for d in /usr/lib/postgresql/*/bin; do
    [ -x "$d/initdb" ] && bindir=$d
done
if [ -z "$bindir" ]; then
    echo "no PostgreSQL server binaries (install Debian's postgresql package)" >&2
    exit 3
fi

as_owner() {
    if [ "$(id -u)" = 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

case $cmd in
start)
    mkdir -p "$dir"
    [ "$(id -u)" = 0 ] && chown postgres "$dir"
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        as_owner "$bindir/initdb" -D "$dir/data" -U tessera --auth=trust -E UTF8 --no-sync >"$dir/initdb.log" 2>&1
    fi
    durability="-c fsync=off -c full_page_writes=off -c synchronous_commit=off"
    [ "${TESSERA_PG_DURABLE:-}" = 1 ] && durability=""
    as_owner "$bindir/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $dir $durability -c max_connections=500" \
        start >/dev/null
    echo "postgres://tessera@127.0.0.1:$port/postgres?sslmode=disable"
    ;;
stop)
    [ -f "$dir/data/postmaster.pid" ] && as_owner "$bindir/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null
    ;;
*)
    echo "usage: pg-cluster.sh start|stop DIR" >&2
    exit 2
    ;;
esac
