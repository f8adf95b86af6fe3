#!/usr/bin/env bash
# Starts Tessera for stress runs on a fresh database: a SQLite file, or with
# STRESS_DATABASE_URL a new schema in that PostgreSQL database, which STRESS_NODES nodes
# (default 1) share on ports STRESS_PORT, STRESS_PORT+1, … under one issuer. Rate
# limiting and lockout are off, the `stress` client and STRESS_USERS users are seeded,
# and the environment to use is printed. With --background (when sourced by run.sh) it
# returns once every node is ready; the nodes stop, and the database goes, on exit.
# STRESS_DB names the SQLite file to create instead (it must not exist); that file is
# kept, for measurements made on it after the run.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ -x ./target/release/tessera ] || cargo build --release -p tessera >&2
bin=./target/release/tessera
port=${STRESS_PORT:-9100}
users=${STRESS_USERS:-500}
nodes=${STRESS_NODES:-1}
issuer="http://127.0.0.1:$port"
export TESSERA_BCRYPT_COST=${BCRYPT_COST:-10}

if ! [[ "$nodes" =~ ^[1-9][0-9]*$ ]]; then
    echo "stress/server.sh: STRESS_NODES must be a positive number, not '$nodes'" >&2
    exit 2
fi
if [ "$nodes" -gt 1 ] && [ -z "${STRESS_DATABASE_URL:-}" ]; then
    echo "stress/server.sh: STRESS_NODES=$nodes needs STRESS_DATABASE_URL (nodes share PostgreSQL, not a SQLite file)" >&2
    exit 2
fi

dir=$(mktemp -d)
stress_pids=()
stress_schema=
stress_psql=

# Stops the nodes, then drops what they used: the folder, and the PostgreSQL schema.
stress_stop() {
    if [ "${#stress_pids[@]}" -gt 0 ]; then
        kill "${stress_pids[@]}" 2>/dev/null || true
        wait "${stress_pids[@]}" 2>/dev/null || true
    fi
    if [ -n "$stress_schema" ]; then
        "$stress_psql" -qX -d "$STRESS_DATABASE_URL" -c "DROP SCHEMA IF EXISTS $stress_schema CASCADE" >/dev/null 2>&1 || true
    fi
    rm -rf "$dir"
}
trap stress_stop EXIT
trap 'exit 130' INT TERM

if [ -n "${STRESS_DATABASE_URL:-}" ]; then
    # Tessera needs an empty database: each run gets a schema of its own, which every
    # connection selects through the URL's `options` (libpq's -c search_path=…).
    stress_psql=$(command -v psql || ls /usr/lib/postgresql/*/bin/psql 2>/dev/null | sort -V | tail -n 1 || true)
    if [ -z "$stress_psql" ]; then
        echo "stress/server.sh: STRESS_DATABASE_URL needs psql (PATH or /usr/lib/postgresql/*/bin)" >&2
        exit 2
    fi
    schema="stress_$(od -An -N6 -tx1 /dev/urandom | tr -d ' \n')"
    "$stress_psql" -qX -v ON_ERROR_STOP=1 -d "$STRESS_DATABASE_URL" -c "CREATE SCHEMA $schema" >&2
    stress_schema=$schema
    case "$STRESS_DATABASE_URL" in *\?*) sep='&' ;; *) sep='?' ;; esac
    store=(--database-url "${STRESS_DATABASE_URL}${sep}options=-csearch_path%3D$schema")
    where="PostgreSQL schema $schema, $nodes node(s)"
elif [ -n "${STRESS_DB:-}" ]; then
    if [ -e "$STRESS_DB" ]; then
        echo "stress/server.sh: STRESS_DB=$STRESS_DB exists; name a new file" >&2
        exit 2
    fi
    store=(--db "$STRESS_DB")
    where="database $STRESS_DB (kept)"
else
    store=(--db "$dir/stress.db")
    where="database $dir/stress.db"
fi

"$bin" "${store[@]}" init >&2
printf '%s\n' 'stress-password' | "$bin" "${store[@]}" user seed stress "$users" --password-stdin >&2
secret=$("$bin" "${store[@]}" client add stress --redirect-uri http://127.0.0.1:9999/callback --json \
    --id-token-alg "${STRESS_ALG:-RS256}" \
    | sed -n 's/.*"client_secret":"\([^"]*\)".*/\1/p')

export TESSERA_ISSUER="$issuer"
export STRESS_CLIENT_ID=stress STRESS_CLIENT_SECRET="$secret" STRESS_USER_PREFIX=stress
export STRESS_USERS="$users" STRESS_PASSWORD=stress-password STRESS_REDIRECT_URI=http://127.0.0.1:9999/callback

# In the background the nodes log to files (shown when one fails to start); in the
# foreground to the terminal.
log_of() { if [ "$background" = 1 ]; then echo "$dir/server$1.log"; else echo /dev/stderr; fi; }
background=0
[ "${1:-}" = "--background" ] && background=1
# A server left from an earlier run would answer the readiness check below with
# another database and client secret.
for ((i = 0; i < nodes; i++)); do
    if curl -fsS -o /dev/null "http://127.0.0.1:$((port + i))/healthz" 2>/dev/null; then
        echo "stress/server.sh: something already answers on port $((port + i)); stop it or set STRESS_PORT" >&2
        exit 1
    fi
done
# stress_serve I: starts node I on its port (appending to its log), and adds it to the
# processes stopped on exit; also what a caller uses to start a node again after
# killing it.
stress_serve() {
    RUST_LOG=warn "$bin" "${store[@]}" serve --listen "127.0.0.1:$((port + $1))" --issuer "$issuer" \
        --rate-limit false --lockout false >>"$(log_of "$1")" 2>&1 &
    stress_pids+=("$!")
}
targets=
for ((i = 0; i < nodes; i++)); do
    stress_serve "$i"
    targets+="${targets:+,}http://127.0.0.1:$((port + i))"
done
export TESSERA_PID="${stress_pids[0]}" TESSERA_PIDS="${stress_pids[*]}"
if [ "$nodes" -gt 1 ]; then
    export STRESS_TARGETS="$targets"
    targets_line="export STRESS_TARGETS=$targets"
else
    unset STRESS_TARGETS
    targets_line=
fi

# Ready means the database answers (/readyz); a node that exits stops the script.
for ((i = 0; i < nodes; i++)); do
    url="http://127.0.0.1:$((port + i))/readyz"
    for attempt in $(seq 1 300); do
        curl -fsS "$url" >/dev/null 2>&1 && break
        if ! kill -0 "${stress_pids[$i]}" 2>/dev/null || [ "$attempt" -eq 300 ]; then
            echo "stress/server.sh: node $i (port $((port + i))) did not become ready:" >&2
            [ "$background" = 1 ] && cat "$(log_of "$i")" >&2
            exit 1
        fi
        sleep 0.1
    done
done

cat >&2 <<ENV
# Tessera stress server on $TESSERA_ISSUER ($where)
export TESSERA_ISSUER=$TESSERA_ISSUER STRESS_CLIENT_ID=stress STRESS_CLIENT_SECRET=$secret
export STRESS_USER_PREFIX=stress STRESS_USERS=$users STRESS_PASSWORD=stress-password
export STRESS_REDIRECT_URI=http://127.0.0.1:9999/callback
ENV
if [ -n "$targets_line" ]; then echo "$targets_line" >&2; fi

if [ "$background" = 0 ]; then
    # In the foreground until a node exits or Ctrl-C; the EXIT trap stops the others.
    wait -n "${stress_pids[@]}" || true
fi
