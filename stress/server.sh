#!/usr/bin/env bash
# Starts Tessera for stress runs on a fresh database: rate limiting and lockout off,
# the `stress` client and STRESS_USERS users seeded; prints the environment to use.
# With --background (when sourced by run.sh) it returns once the server is ready.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
[ -x ./target/release/tessera ] || cargo build --release -p tessera >&2
bin=./target/release/tessera
port=${STRESS_PORT:-9100}
users=${STRESS_USERS:-500}
dir=$(mktemp -d)
db="$dir/stress.db"
export TESSERA_BCRYPT_COST=${BCRYPT_COST:-10}

"$bin" --db "$db" init >&2
printf '%s\n' 'stress-password' | "$bin" --db "$db" user seed stress "$users" --password-stdin >&2
secret=$("$bin" --db "$db" client add stress --redirect-uri http://127.0.0.1:9999/callback --json \
    --id-token-alg "${STRESS_ALG:-RS256}" \
    | sed -n 's/.*"client_secret":"\([^"]*\)".*/\1/p')

export TESSERA_ISSUER="http://127.0.0.1:$port"
export STRESS_CLIENT_ID=stress STRESS_CLIENT_SECRET="$secret" STRESS_USER_PREFIX=stress
export STRESS_USERS="$users" STRESS_PASSWORD=stress-password STRESS_REDIRECT_URI=http://127.0.0.1:9999/callback

cat >&2 <<ENV
# Tessera stress server on $TESSERA_ISSUER (database $db)
export TESSERA_ISSUER=$TESSERA_ISSUER STRESS_CLIENT_ID=stress STRESS_CLIENT_SECRET=$secret
export STRESS_USER_PREFIX=stress STRESS_USERS=$users STRESS_PASSWORD=stress-password
export STRESS_REDIRECT_URI=http://127.0.0.1:9999/callback
ENV

if [ "${1:-}" = "--background" ]; then
    RUST_LOG=warn "$bin" --db "$db" serve --listen "127.0.0.1:$port" --rate-limit false --lockout false >"$dir/server.log" 2>&1 &
    export TESSERA_PID=$!
    trap 'kill "$TESSERA_PID" 2>/dev/null || true; rm -rf "$dir"' EXIT
    for _ in $(seq 1 100); do
        curl -fsS "$TESSERA_ISSUER/healthz" >/dev/null 2>&1 && break
        sleep 0.1
    done
else
    RUST_LOG=warn exec "$bin" --db "$db" serve --listen "127.0.0.1:$port" --rate-limit false --lockout false
fi
