#!/usr/bin/env bash
# Measures introspection and the authorize page with wrk (apt-get install wrk) against a fresh stress server.
set -euo pipefail
cd "$(dirname "$0")/.."
export STRESS_USERS=10
source stress/server.sh --background 2>/dev/null
# One access token to introspect.
v=$(head -c 32 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')
c=$(printf %s "$v" | openssl dgst -sha256 -binary | base64 | tr '+/' '-_' | tr -d '=')
rm -f /tmp/jar
curl -s -c /tmp/jar -b /tmp/jar "$TESSERA_ISSUER/authorize?client_id=stress&redirect_uri=http%3A%2F%2F127.0.0.1%3A9999%2Fcallback&response_type=code&scope=openid&code_challenge=$c&code_challenge_method=S256" > /tmp/login.html
R=$(sed -n 's/.*name="request_id" value="\([^"]*\)".*/\1/p' /tmp/login.html); C=$(sed -n 's/.*name="csrf" value="\([^"]*\)".*/\1/p' /tmp/login.html)
code=$(curl -s -c /tmp/jar -b /tmp/jar -o /dev/null -w '%{redirect_url}' "$TESSERA_ISSUER/login" --data-urlencode "request_id=$R" --data-urlencode "csrf=$C" -d username=stress1 -d password=stress-password | sed -n 's/.*[?&]code=\([^&]*\).*/\1/p')
tok=$(curl -s -u "stress:$STRESS_CLIENT_SECRET" "$TESSERA_ISSUER/token" -d grant_type=authorization_code -d code="$code" --data-urlencode redirect_uri=http://127.0.0.1:9999/callback -d code_verifier="$v")
at=$(echo "$tok" | sed -n 's/.*"access_token":"\([^"]*\)".*/\1/p')
basic=$(printf 'stress:%s' "$STRESS_CLIENT_SECRET" | base64 -w0)
cat > /tmp/introspect.lua <<LUA
wrk.method = "POST"
wrk.body = "token=$at"
wrk.headers["Content-Type"] = "application/x-www-form-urlencoded"
wrk.headers["Authorization"] = "Basic $basic"
LUA
wrk -t1 -c32 -d10s -s /tmp/introspect.lua "$TESSERA_ISSUER/introspect" | grep -E "Requests/sec|Latency|Non-2xx"
curl -s -u "stress:$STRESS_CLIENT_SECRET" "$TESSERA_ISSUER/introspect" -d token="$at" | head -c 60; echo
wrk -t1 -c32 -d10s "$TESSERA_ISSUER/authorize?client_id=stress&redirect_uri=http%3A%2F%2F127.0.0.1%3A9999%2Fcallback&response_type=code&scope=openid&code_challenge=$c&code_challenge_method=S256" | grep -E "Requests/sec|Latency|Non-2xx"
wrk -t1 -c32 -d5s "$TESSERA_ISSUER/jwks" | grep -E "Requests/sec"
