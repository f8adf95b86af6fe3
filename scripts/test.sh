#!/usr/bin/env bash
# The whole test suite (`make test`): every test on SQLite, with the storage contract
# and multi-node tests on PostgreSQL too, then the integration suite again with
# PostgreSQL behind every app. A throwaway cluster is started for the run unless
# TESSERA_TEST_DATABASE_URL names one. Without PostgreSQL installed its tests are
# skipped loudly, except in CI (CI set), where they are required.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo=${CARGO:-cargo}

cluster=""
cleanup() {
    if [ -n "$cluster" ]; then
        scripts/pg-cluster.sh stop "$cluster" || true
        rm -rf "$cluster"
    fi
}
trap cleanup EXIT

if [ -z "${TESSERA_TEST_DATABASE_URL:-}" ]; then
    port=55432
    while (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
        port=$((port + 1))
    done
    cluster=$(mktemp -d /tmp/tessera-pg.XXXXXX)
    if url=$(TESSERA_TEST_PG_PORT=$port scripts/pg-cluster.sh start "$cluster" 2>"$cluster/start.err"); then
        export TESSERA_TEST_DATABASE_URL=$url
    else
        reason=$(tail -n 1 "$cluster/start.err")
        rm -rf "$cluster"
        cluster=""
        if [ -n "${CI:-}" ]; then
            echo "PostgreSQL is required in CI: $reason" >&2
            exit 1
        fi
        echo "======================================================================" >&2
        echo "SKIPPED: the PostgreSQL tests ($reason)" >&2
        echo "======================================================================" >&2
    fi
fi

$cargo test --workspace --all-targets
if [ -n "${TESSERA_TEST_DATABASE_URL:-}" ]; then
    echo "--- the integration suite again, on PostgreSQL" >&2
    TESSERA_TEST_BACKEND=postgres $cargo test --test api
fi
