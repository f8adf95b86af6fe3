#!/usr/bin/env bash
# Starts the peer for side-by-side runs: node oidc-provider (pinned in stress/peer,
# installed with npm ci on first use) configured like stress/server.sh's Tessera, with
# the `stress` client and STRESS_USERS users, and prints the environment that points
# tessera-stress at it. With --background (when sourced) it returns once the peer
# answers; the peer stops on exit.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command -v node >/dev/null || { echo "stress/peer.sh: needs node (apt-get install nodejs npm)" >&2; exit 2; }
if [ ! -d stress/peer/node_modules/oidc-provider ] || [ ! -d stress/peer/node_modules/bcrypt ]; then
    npm ci --prefix stress/peer --no-audit --no-fund --loglevel=error >&2
fi
peer_port=${PEER_PORT:-9200}
peer_secret=$(head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
peer_log=$(mktemp)
peer_pid=

peer_stop() {
    if [ -n "$peer_pid" ]; then
        kill "$peer_pid" 2>/dev/null || true
        wait "$peer_pid" 2>/dev/null || true
    fi
    rm -f "$peer_log"
}
trap peer_stop EXIT
trap 'exit 130' INT TERM

background=0
[ "${1:-}" = "--background" ] && background=1
if [ "$background" = 1 ]; then peer_out=$peer_log; else peer_out=/dev/stderr; fi
if curl -fsS -o /dev/null "http://127.0.0.1:$peer_port/healthz" 2>/dev/null; then
    echo "stress/peer.sh: something already answers on port $peer_port; stop it or set PEER_PORT" >&2
    exit 1
fi
PEER_PORT=$peer_port STRESS_USERS=${STRESS_USERS:-500} STRESS_PASSWORD=stress-password \
    STRESS_CLIENT_SECRET=$peer_secret BCRYPT_COST=${BCRYPT_COST:-10} \
    node stress/peer/server.mjs >"$peer_out" 2>&1 &
peer_pid=$!
for attempt in $(seq 1 300); do
    curl -fsS "http://127.0.0.1:$peer_port/healthz" >/dev/null 2>&1 && break
    if ! kill -0 "$peer_pid" 2>/dev/null || [ "$attempt" -eq 300 ]; then
        echo "stress/peer.sh: the peer did not start:" >&2
        cat "$peer_log" >&2
        exit 1
    fi
    sleep 0.1
done

# oidc-provider issues a refresh token only for offline_access, which it keeps only
# with prompt=consent (OpenID Connect Core §11).
export TESSERA_ISSUER="http://127.0.0.1:$peer_port" STRESS_CLIENT_ID=stress STRESS_CLIENT_SECRET=$peer_secret
export STRESS_USER_PREFIX=stress STRESS_USERS=${STRESS_USERS:-500} STRESS_PASSWORD=stress-password
export STRESS_REDIRECT_URI=http://127.0.0.1:9999/callback
export STRESS_SCOPE="openid profile email offline_access" STRESS_PROMPT=consent
export PEER_PID=$peer_pid
cat >&2 <<ENV
# oidc-provider peer on $TESSERA_ISSUER (pid $peer_pid)
export TESSERA_ISSUER=$TESSERA_ISSUER STRESS_CLIENT_ID=stress STRESS_CLIENT_SECRET=$peer_secret
export STRESS_USERS=$STRESS_USERS STRESS_SCOPE="$STRESS_SCOPE" STRESS_PROMPT=consent
ENV
if [ "$background" = 0 ]; then
    wait "$peer_pid" || true
fi
