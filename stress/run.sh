#!/usr/bin/env bash
# Runs one stress scenario (smoke, load, spike, ceiling, ratelimit, bench) against a
# fresh Tessera on 127.0.0.1, with k6 when it is installed and the Rust driver
# otherwise. Set TESSERA_ISSUER (and STRESS_CLIENT_SECRET) to target a running server;
# STRESS_DATABASE_URL and STRESS_NODES to run on PostgreSQL with one or more nodes.
set -euo pipefail
cd "$(dirname "$0")/.."
scenario=${1:?usage: stress/run.sh smoke|load|spike|ceiling|ratelimit|bench}
out=${STRESS_OUT:-target/stress}
mkdir -p "$out"

# One package at a time: built together, Cargo unifies the two packages' dependency
# features, and the server would not be the binary `cargo build --release` gives users
# (nor have its functions in the order link/hot-functions.txt names).
cargo build --release -p tessera >&2
cargo build --release -p tessera-stress >&2
driver=./target/release/tessera-stress

if [ -z "${TESSERA_ISSUER:-}" ]; then
    source stress/server.sh --background
fi
pid_args=()
[ -n "${TESSERA_PID:-}" ] && pid_args=(--server-pid "$TESSERA_PID")

case "$scenario" in
    bench)
        "$driver" bcrypt --bcrypt-cost "${BCRYPT_COST:-10}"
        "$driver" writer --duration 10s
        "$driver" writer --duration 10s --durable
        for kind in authorize-only introspect-only refresh-only token-only; do
            "$driver" "$kind" --vus 32 --duration 20s "${pid_args[@]}"
        done
        "$driver" storm --vus 100 --probe-vus 4 --duration 60s "${pid_args[@]}"
        ;;
    ratelimit)
        if command -v k6 >/dev/null; then k6 run stress/ratelimit.js; else "$driver" ratelimit --duration 30s; fi
        ;;
    smoke|load|spike|ceiling)
        if command -v k6 >/dev/null; then
            k6 run "stress/$scenario.js"
        else
            "$driver" flow --preset "$scenario" --calibrate --bcrypt-cost "${BCRYPT_COST:-10}" \
                --svg "$out/$scenario.svg" "${pid_args[@]}" | tee "$out/$scenario.txt"
        fi
        ;;
    *) echo "unknown scenario $scenario" >&2; exit 2 ;;
esac
