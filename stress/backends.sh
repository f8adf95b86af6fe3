#!/usr/bin/env bash
# Measures Tessera on each storage side by side: the full flow (with the bcrypt
# ceiling), refresh-only and introspect-only on SQLite, on PostgreSQL with one node and
# on PostgreSQL with two nodes (each request to the next node), alternating the three
# set-ups ROUNDS times so that the machine's drift falls on all of them alike. Prints
# one line per run and keeps each run's JSON in target/stress/backends/.
#   STRESS_DATABASE_URL  PostgreSQL to use; without it a throwaway cluster with
#                        PostgreSQL's durable defaults (fsync on) is started and removed
#   ROUNDS (2), FLOW_VUS (20), FLOW_SECONDS (20s), VUS (32), SECONDS_EACH (15s)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
rounds=${ROUNDS:-2}
out=target/stress/backends
mkdir -p "$out"
[ -x ./target/release/tessera ] && [ -x ./target/release/tessera-stress ] ||
    cargo build --release -p tessera -p tessera-stress >&2
driver=./target/release/tessera-stress

if [ -z "${STRESS_DATABASE_URL:-}" ]; then
    cluster=$(mktemp -d)
    port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
    STRESS_DATABASE_URL=$(TESSERA_PG_DURABLE=1 TESSERA_TEST_PG_PORT=$port bash scripts/pg-cluster.sh start "$cluster")
    trap 'bash scripts/pg-cluster.sh stop "$cluster"; rm -rf "$cluster"' EXIT
fi

# One set-up: start it, run the three scenarios, stop it.
measure() {
    local setup=$1 round=$2
    (
        case $setup in
        sqlite) unset STRESS_DATABASE_URL; export STRESS_NODES=1 ;;
        pg1) export STRESS_DATABASE_URL STRESS_NODES=1 ;;
        pg2) export STRESS_DATABASE_URL STRESS_NODES=2 ;;
        esac
        export STRESS_USERS=${STRESS_USERS:-40}
        # shellcheck source=stress/server.sh
        source stress/server.sh --background >/dev/null 2>&1
        "$driver" flow --vus "${FLOW_VUS:-20}" --duration "${FLOW_SECONDS:-20s}" --calibrate --json \
            >"$out/$setup-$round-flow.json"
        for scenario in refresh-only introspect-only; do
            "$driver" "$scenario" --vus "${VUS:-32}" --duration "${SECONDS_EACH:-15s}" --json \
                >"$out/$setup-$round-$scenario.json"
        done
    )
    local f="$out/$setup-$round"
    printf '%-7s %5s %9.1f %6s %10.0f %8.1f %12.0f %8.1f %s\n' "$setup" "$round" \
        "$(jq .iterations_per_second "$f-flow.json")" \
        "$(jq -r '.notes[] | select(.[0] == "iterations per ceiling") | .[1]' "$f-flow.json")" \
        "$(jq .iterations_per_second "$f-refresh-only.json")" \
        "$(jq '.steps[0].p95_ms' "$f-refresh-only.json")" \
        "$(jq .iterations_per_second "$f-introspect-only.json")" \
        "$(jq '.steps[0].p95_ms' "$f-introspect-only.json")" \
        "$(jq -c '[.errors, (input | .errors), (input | .errors)] | add' "$f-flow.json" "$f-refresh-only.json" "$f-introspect-only.json")"
}

printf '%-7s %5s %9s %6s %10s %8s %12s %8s %s\n' setup round flows/s ×ceil refresh/s p95ms introspect/s p95ms errors
for round in $(seq 1 "$rounds"); do
    for setup in sqlite pg1 pg2; do
        measure "$setup" "$round"
    done
done
