#!/usr/bin/env bash
# Measures Tessera on each storage side by side: the full flow (with the bcrypt
# ceiling), refresh-only and introspect-only on SQLite, on PostgreSQL with one node and
# on PostgreSQL with two nodes (each request to the next node), alternating the three
# set-ups ROUNDS times so that the machine's drift falls on all of them alike. Prints
# one line per run and keeps each run's JSON in target/stress/backends/.
# `backends.sh autentico` runs instead the Autentico-shaped full flow on each set-up:
# 20 VUs with 1 s think time, 100 and 500 VUs with 0.5 s (LEVEL_SECONDS each, 60s;
# the 500-VU level gets 30 s more to fill its login queue), one line per level,
# ROUNDS times (default 1).
#   STRESS_DATABASE_URL  PostgreSQL to use; without it a throwaway cluster with
#                        PostgreSQL's durable defaults (fsync on) is started and removed
#   ROUNDS (2), FLOW_VUS (20), FLOW_SECONDS (20s), VUS (32), SECONDS_EACH (15s)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
shape=${1:-scenarios}
case "$shape" in scenarios | autentico) ;; *) echo "usage: stress/backends.sh [autentico]" >&2; exit 2 ;; esac
rounds=${ROUNDS:-2}
out=target/stress/backends
mkdir -p "$out"
# One package at a time, as in stress/run.sh.
[ -x ./target/release/tessera ] || cargo build --release -p tessera >&2
[ -x ./target/release/tessera-stress ] || cargo build --release -p tessera-stress >&2
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

# The Autentico shape on one set-up: each level on a fresh server, one line each.
levels() {
    local setup=$1 round=$2
    for level in 20:1s 100:500ms 500:500ms; do
        local vus=${level%%:*} think=${level#*:} seconds=${LEVEL_SECONDS:-60}
        [ "$vus" = 500 ] && seconds=$((seconds + 30))
        local f="$out/$setup-$round-autentico-$vus.json"
        (
            case $setup in
            sqlite) unset STRESS_DATABASE_URL; export STRESS_NODES=1 ;;
            pg1) export STRESS_DATABASE_URL STRESS_NODES=1 ;;
            pg2) export STRESS_DATABASE_URL STRESS_NODES=2 ;;
            esac
            export STRESS_USERS=$vus
            # shellcheck source=stress/server.sh
            source stress/server.sh --background >/dev/null 2>&1
            "$driver" flow --vus "$vus" --duration "${seconds}s" --think "$think" --json >"$f"
        )
        printf '%-7s %5s %5s %7s %9s %9s %9s %9s %8.1f %s\n' "$setup" "$round" "$vus" \
            "$(jq '[.errors[]] | add // 0' "$f")" \
            "$(jq '.steps[] | select(.step == "login") | .p95_ms' "$f")" \
            "$(jq '.steps[] | select(.step == "token") | .p95_ms' "$f")" \
            "$(jq '.steps[] | select(.step == "introspect") | .p95_ms' "$f")" \
            "$(jq '.steps[] | select(.step == "refresh") | .p95_ms' "$f")" \
            "$(jq .iterations_per_second "$f")" "$think"
    done
}

if [ "$shape" = autentico ]; then
    printf '%-7s %5s %5s %7s %9s %9s %9s %9s %8s %s\n' setup round VUs errors login_p95 token_p95 intro_p95 refr_p95 flows/s think
    for round in $(seq 1 "${ROUNDS:-1}"); do
        for setup in sqlite pg1 pg2; do
            levels "$setup" "$round"
        done
    done
    exit 0
fi

printf '%-7s %5s %9s %6s %10s %8s %12s %8s %s\n' setup round flows/s ×ceil refresh/s p95ms introspect/s p95ms errors
for round in $(seq 1 "$rounds"); do
    for setup in sqlite pg1 pg2; do
        measure "$setup" "$round"
    done
done
