#!/usr/bin/env bash
# make stress-peer: the same tessera-stress scenarios against Tessera (stress/server.sh,
# release build) and node oidc-provider (stress/peer.sh), each on a fresh server,
# alternating which goes first from round to round, then a table of both and their
# ratio, with the server CPU per request read from /proc. Raw reports (JSON) go to
# target/stress/side-by-side/.
#
# SIDE_ROUNDS (2) rounds; SIDE_ONLY="flow refresh" runs only those scenarios. Scenarios:
#   flow        full PKCE flows, 50 VUs, 30 s, no think time
#   refresh     refresh-token rotation, 32 VUs, 15 s
#   introspect  introspection, 32 VUs, 15 s (the driver); and 15 s of wrk when installed
#   storm50     50 login VUs saturating the CPU, 4 probe VUs: login page, token,
#   storm500    introspect and refresh p95 (500 login VUs), 30 s
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${SIDE_ROUNDS:-2}
only=${SIDE_ONLY:-flow refresh introspect storm50 storm500}
side_out=target/stress/side-by-side
mkdir -p "$side_out"
rm -f "$side_out"/*.json
[ -x target/release/tessera ] || cargo build --release -p tessera >&2
[ -x target/release/tessera-stress ] || cargo build --release -p tessera-stress >&2
driver=target/release/tessera-stress
export STRESS_USERS=500
echo "# $(git rev-parse --short HEAD 2>/dev/null || echo '?') on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs), $(nproc) cores; oidc-provider $(sed -n 's/.*"oidc-provider": "\(.*\)".*/\1/p' stress/peer/package.json), node $(node --version)" >&2

# CPU seconds (user + system) a process has used.
cpu_of() { sed 's/.*) //' "/proc/$1/stat" | awk '{ printf "%.2f", ($12 + $13) / 100 }'; }

# run NAME SCENARIO ROUND: one scenario against NAME (tessera or peer) on a fresh server.
run() {
    local name=$1 scenario=$2 round=$3 file="$side_out/$2-$1-$3.json"
    (
        if [ "$name" = tessera ]; then
            source stress/server.sh --background 2>/dev/null
            pid=$TESSERA_PID
        else
            source stress/peer.sh --background 2>/dev/null
            pid=$PEER_PID
        fi
        case "$scenario" in
            flow) "$driver" flow --vus 50 --duration 30s --server-pid "$pid" --json >"$file" || true ;;
            refresh) "$driver" refresh-only --vus 32 --duration 15s --server-pid "$pid" --json >"$file" || true ;;
            introspect)
                "$driver" introspect-only --vus 32 --duration 15s --server-pid "$pid" --json >"$file" || true
                if command -v wrk >/dev/null; then
                    token=$("$driver" sign-in)
                    basic=$(printf 'stress:%s' "$STRESS_CLIENT_SECRET" | base64 -w0)
                    lua=$(mktemp)
                    printf 'wrk.method = "POST"\nwrk.body = "token=%s"\nwrk.headers["Content-Type"] = "application/x-www-form-urlencoded"\nwrk.headers["Authorization"] = "Basic %s"\n' \
                        "$token" "$basic" >"$lua"
                    before=$(cpu_of "$pid")
                    wrk -t1 -c32 -d15s --latency -s "$lua" "$TESSERA_ISSUER/introspect" >"$side_out/wrk.txt"
                    after=$(cpu_of "$pid")
                    rm -f "$lua"
                    awk -v b="$before" -v a="$after" '
                        /Requests\/sec/ { rps = $2 }
                        /requests in/ { n = $1 }
                        /Non-2xx/ { bad = $NF }
                        $1 == "50%" { p50 = $2 } $1 == "99%" { p99 = $2 }
                        function ms(v) { if (v ~ /us$/) return v / 1000; if (v ~ /ms$/) return v + 0; return v * 1000 }
                        END { printf "{\"iterations_per_second\": %s, \"errors\": %d, \"p50_ms\": %.3f, \"p99_ms\": %.3f, \"server\": {\"cpu_ms_per_iteration\": %.5f}}\n",
                              rps, bad + 0, ms(p50), ms(p99), 1000 * (a - b) / n }' "$side_out/wrk.txt" >"$side_out/wrk-$name-$round.json"
                fi
                ;;
            storm50) "$driver" storm --vus 50 --probe-vus 4 --duration 30s --server-pid "$pid" --json >"$file" || true ;;
            storm500) "$driver" storm --vus 500 --probe-vus 4 --duration 30s --server-pid "$pid" --json >"$file" || true ;;
            *) echo "side-by-side: unknown scenario $scenario" >&2; exit 2 ;;
        esac
    )
    echo "  $scenario $name round $round done" >&2
}

for round in $(seq 1 "$rounds"); do
    for scenario in $only; do
        if [ $((round % 2)) = 1 ]; then order="tessera peer"; else order="peer tessera"; fi
        for name in $order; do run "$name" "$scenario" "$round"; done
    done
done

# mean FILE-PREFIX JQ: the mean over rounds of a value of the reports.
mean() {
    local files=("$side_out/$1"-*.json)
    [ -e "${files[0]}" ] || { echo "-"; return; }
    jq -s "map($2) | add / length" "${files[@]}"
}
step() { echo "(.steps[] | select(.step == \"$1\") | .$2) // 0"; }
# row LABEL SCENARIO JQ BETTER: Tessera, the peer, and Tessera ÷ peer.
row() {
    local t p
    t=$(mean "$2-tessera" "$3")
    p=$(mean "$2-peer" "$3")
    awk -v l="$1" -v t="$t" -v p="$p" -v b="$4" 'BEGIN {
        r = (p + 0 == 0) ? "-" : sprintf("%.2f", t / p)
        printf "| %s | %.3f | %.3f | %s (%s is better) |\n", l, t, p, r, b }'
}
errors='(.errors // {} | if type == "object" then (to_entries | map(.value) | add // 0) else . end)'
echo
echo "| measure (mean of $rounds rounds) | Tessera | oidc-provider | Tessera ÷ peer |"
echo "|---|---:|---:|---:|"
for scenario in $only; do
    case "$scenario" in
        flow)
            row "full flows/s, 50 VUs" flow .iterations_per_second higher
            row "server CPU ms per flow" flow .server.cpu_ms_per_iteration lower
            row "login p95 ms" flow "$(step login p95_ms)" lower
            row "errors" flow "$errors" lower ;;
        refresh)
            row "refreshes/s, 32 VUs" refresh .iterations_per_second higher
            row "refresh p95 ms" refresh "$(step refresh p95_ms)" lower
            row "server CPU ms per refresh" refresh .server.cpu_ms_per_iteration lower ;;
        introspect)
            row "introspections/s, 32 VUs (driver)" introspect .iterations_per_second higher
            row "introspect p95 ms (driver)" introspect "$(step introspect p95_ms)" lower
            row "server CPU ms per introspection (driver)" introspect .server.cpu_ms_per_iteration lower
            if [ -e "$side_out/wrk-tessera-1.json" ]; then
                row "introspections/s, wrk 32 connections" wrk .iterations_per_second higher
                row "server CPU ms per introspection (wrk)" wrk .server.cpu_ms_per_iteration lower
                row "introspect p99 ms (wrk)" wrk .p99_ms lower
                row "non-2xx (wrk)" wrk .errors lower
            fi ;;
        storm50 | storm500)
            n=${scenario#storm}
            row "logins/s, $n login VUs" "$scenario" .iterations_per_second higher
            for s in "login page" token introspect refresh; do
                row "$s p95 ms while $n VUs log in" "$scenario" "$(step "$s" p95_ms)" lower
            done
            row "server RSS peak MB, $n VUs" "$scenario" .server.rss_peak_mb lower
            row "errors, $n VUs" "$scenario" "$errors" lower ;;
    esac
done
