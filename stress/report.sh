#!/usr/bin/env bash
# make stress-report: the operator's part of docs/PERFORMANCE.md, measured at this
# commit on this machine, with the release build and the Rust driver on the same cores.
# Each section prints a Markdown table and keeps its raw output in REPORT_OUT
# (target/stress/report):
#   soak        the full flow at 500 VUs, 500 ms think time, SQLite: 30 s of warm-up,
#               then ten one-minute stages; p95 per step, flows/s, server RSS and the
#               database's size minute by minute (soak.json, soak.svg, soak-db.tsv)
#   storage     bytes per row of each table, its indexes included, from SQLite's
#               dbstat on the soak's database (needs the soak's database)
#   operations  first start on an empty database, warm restart on the soak's,
#               `tessera check`, `tessera backup`, `tessera restore` from a directory
#               replica, and the idle RSS of a fresh and a restarted server
#   introspect600  600 VUs introspecting their own access tokens for 10 minutes
#   kill9       kill -9 of the server 20 s into 60 s of full flows at 50 VUs, started
#               again at once on the same file: time to ready, failed requests, check
#   refresh     what a refresh costs the server besides its two RS256 signatures: four
#               rounds of refresh-only (32 VUs, 15 s, 500 users as in make stress-peer),
#               each between two measurements of one signature through the server's
#               code (`tessera-stress sign`), since the machine's speed drifts
#   algs        refresh-only (32 VUs, 15 s) with access tokens signed RS256, ES256 and
#               EdDSA (the ID token stays RS256), twice in turn, and what one signature
#               of each costs through the server's code (`tessera-stress sign`)
# REPORT_ONLY="soak storage operations" runs only those (storage and operations reuse
# the soak's database from an earlier run in REPORT_OUT). SOAK_MINUTES (10) and
# INTROSPECT_DURATION (10m) shorten a trial run. Servers listen on STRESS_PORT (9100).
set -euo pipefail
cd "$(dirname "$0")/.."
only=${REPORT_ONLY:-soak storage operations introspect600 kill9 refresh algs}
out=${REPORT_OUT:-target/stress/report}
mkdir -p "$out"
# One package at a time, as in stress/run.sh.
cargo build --release -p tessera >&2
cargo build --release -p tessera-stress >&2
bin=$PWD/target/release/tessera
driver=$PWD/target/release/tessera-stress
port=${STRESS_PORT:-9100}
soak_db=$out/soak.db

echo "# $(git rev-parse --short HEAD 2>/dev/null || echo '?') on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | xargs), $(nproc) cores, $(uname -r); $(date -u +%FT%TZ)"

ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }
# ready_ms URL PID START: waits for URL/readyz to answer 200 (polled every 5 ms) and
# prints the milliseconds since START (date +%s%N); fails when PID exits first.
ready_ms() {
    until curl -fsS -o /dev/null "$1/readyz" 2>/dev/null; do
        kill -0 "$2" 2>/dev/null || { echo "report: the server exited before it was ready" >&2; return 1; }
        sleep 0.005
    done
    ms_since "$3"
}
# rss PID: VmRSS, RssAnon and RssFile in MB.
rss() { awk '/^(VmRSS|RssAnon|RssFile):/ { printf "%s %.1f MB  ", $1, $2 / 1024 }' "/proc/$1/status"; }
stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }
seconds_of() { local t0; t0=$(date +%s%N); "$@" >/dev/null; awk -v ms="$(ms_since "$t0")" 'BEGIN { printf "%.2f s", ms / 1000 }'; }
bytes_mb() { awk -v b="$1" 'BEGIN { printf "%.1f MB", b / 1048576 }'; }
db_bytes() { local n=0 f; for f in "$1" "$1-wal"; do [ -e "$f" ] && n=$((n + $(stat -c %s "$f"))); done; echo "$n"; }

soak() {
    local minutes=${SOAK_MINUTES:-10} stages="30s:500" i
    for ((i = 0; i < minutes; i++)); do stages+=",1m:500"; done
    rm -f "$soak_db" "$soak_db"-*
    (
        export STRESS_USERS=500 STRESS_DB=$soak_db
        source stress/server.sh --background 2>/dev/null
        echo "RSS idle before the load: $(rss "$TESSERA_PID")" >"$out/soak-idle.txt"
        # The file's size (database and log) every 5 s, from the driver's start.
        (
            t0=$(date +%s)
            while sleep 5; do printf '%s\t%s\n' "$(($(date +%s) - t0))" "$(db_bytes "$soak_db")"; done
        ) >"$out/soak-db.tsv" &
        sampler=$!
        "$driver" flow --stages "$stages" --think 500ms --server-pid "$TESSERA_PID" --json \
            --svg "$out/soak.svg" >"$out/soak.json" || true
        kill "$sampler"
    )
    echo
    echo "## Soak: $(jq -r '.iterations' "$out/soak.json") flows in $(jq -r '.seconds | floor' "$out/soak.json") s, $(jq -r '.iterations_per_second * 10 | round / 10' "$out/soak.json")/s; errors $(jq -c '.errors' "$out/soak.json"); server CPU $(jq -r '.server.cpu_ms_per_iteration * 10 | round / 10' "$out/soak.json") ms per flow"
    cat "$out/soak-idle.txt"
    echo
    echo "| minute | flows/s | authorize p95 | login p95 | token p95 | introspect p95 | refresh p95 | RSS peak | database |"
    echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
    local n elapsed=0
    n=$(jq '.levels | length' "$out/soak.json")
    for ((i = 0; i < n; i++)); do
        elapsed=$(jq -r --argjson i "$i" --argjson e "$elapsed" '$e + .levels[$i].seconds | round' "$out/soak.json")
        local size
        size=$(awk -v t="$elapsed" '$1 <= t + 2 { b = $2 } END { print b + 0 }' "$out/soak-db.tsv")
        jq -r --argjson i "$i" --arg size "$(bytes_mb "$size")" '
            def p95(s): ((.steps[] | select(.step == s) | .p95_ms) // 0) as $v
                | if $v >= 1000 then "\($v / 100 | round / 10) s" else "\($v * 10 | round / 10) ms" end;
            .levels[$i] | "| \(if $i == 0 then "warm-up (30 s)" else $i end) | \(.iterations_per_second * 10 | round / 10) | \(p95("authorize")) | \(p95("login")) | \(p95("token")) | \(p95("introspect")) | \(p95("refresh")) | \(.rss_peak_mb * 10 | round / 10) MB | \($size) |"' \
            "$out/soak.json"
    done
    echo
    echo "database and its log after the run: $(bytes_mb "$(db_bytes "$soak_db")"), $(awk -v b="$(db_bytes "$soak_db")" -v f="$(jq .iterations "$out/soak.json")" 'BEGIN { printf "%.0f", b / f }') bytes per flow"
}

storage() {
    [ -e "$soak_db" ] || { echo "report: storage needs the soak's database ($soak_db): run the soak first" >&2; return 1; }
    echo
    echo "## Storage: bytes per row, indexes included (dbstat, $(bytes_mb "$(db_bytes "$soak_db")"))"
    python3 - "$soak_db" "$(jq .iterations "$out/soak.json")" <<'PY' | tee "$out/storage.txt"
import os, sqlite3, sys
db = sqlite3.connect(f"file:{sys.argv[1]}?mode=ro", uri=True)
flows = int(sys.argv[2])
owner = dict(db.execute("SELECT name, tbl_name FROM sqlite_schema WHERE type IN ('table', 'index')"))
size = {}
for name, bytes_ in db.execute("SELECT name, SUM(pgsize) FROM dbstat GROUP BY name"):
    table = owner.get(name, name)
    size[table] = size.get(table, 0) + bytes_
page = db.execute("PRAGMA page_size").fetchone()[0]
free = db.execute("PRAGMA freelist_count").fetchone()[0]
print("| table | rows | bytes with indexes | bytes per row |")
print("|---|---:|---:|---:|")
for table, bytes_ in sorted(size.items(), key=lambda kv: -kv[1]):
    if table.startswith("sqlite_"):
        continue
    rows = db.execute(f'SELECT COUNT(*) FROM "{table}"').fetchone()[0]
    # Tables of a few rows (clients, keys) are a page or two whatever they hold.
    if rows < 100:
        continue
    print(f"| {table} | {rows:,} | {bytes_ / 1048576:.1f} MB | {bytes_ / rows:,.0f} |")
whole = sum(size.values())
print(f"| whole database, after {flows:,} flows | | {whole / 1048576:.1f} MB | {whole / flows:,.0f} per flow |")
print(f"\npage size {page} B, free pages {free}, file {os.path.getsize(sys.argv[1]) / 1048576:.1f} MB")
PY
}

operations() {
    [ -e "$soak_db" ] || { echo "report: operations needs the soak's database ($soak_db): run the soak first" >&2; return 1; }
    local url="http://127.0.0.1:$port" work t0 pid run ms
    # Another server on the port would answer the readiness checks below.
    if curl -fsS -o /dev/null "$url/healthz" 2>/dev/null; then
        echo "report: something already answers on port $port; stop it or set STRESS_PORT" >&2
        return 1
    fi
    work=$(mktemp -d)
    # start DB [FLAGS...]: starts a server on DB in the background as $pid, and sets
    # $ms to the milliseconds from its exec to the first 200 of /readyz.
    start() {
        t0=$(date +%s%N)
        RUST_LOG=warn "$bin" --db "$1" serve --listen "127.0.0.1:$port" "${@:2}" >/dev/null 2>&1 &
        pid=$!
        ms=$(ready_ms "$url" "$pid" "$t0")
    }
    echo
    echo "## Start-up and operations (soak's database: $(bytes_mb "$(db_bytes "$soak_db")"))"
    echo
    echo "| operation | time |"
    echo "|---|---:|"
    {
        for run in 1 2; do
            start "$work/empty-$run.db"
            echo "| first start on an empty database, to \`/readyz\` (run $run) | $ms ms |"
            sleep 3
            echo "idle RSS, fresh database (run $run): $(rss "$pid")" >>"$work/rss"
            stop "$pid"
            start "$work/empty-$run.db"
            sleep 3
            echo "idle RSS, restarted (run $run): $(rss "$pid")" >>"$work/rss"
            stop "$pid"
        done
        for run in 1 2; do
            start "$soak_db"
            echo "| warm restart on the soak's database, to \`/readyz\` (run $run) | $ms ms |"
            stop "$pid"
        done
        echo "| \`tessera check\` | $(seconds_of "$bin" --db "$soak_db" check) |"
        echo "| \`tessera backup PATH\` | $(seconds_of "$bin" --db "$soak_db" backup "$work/copy.db") |"
        # A directory replica of the copy: serve it with --replicate-to until the
        # snapshot and the log are shipped, then restore from it.
        start "$work/copy.db" --replicate-to "$work/replica"
        until curl -fsS "$url/metrics" | grep -qE '^tessera_replication_snapshots_total [1-9]'; do sleep 0.2; done
        sleep 2
        stop "$pid"
        echo "| \`tessera restore --from DIR --to PATH\` ($(du -sh "$work/replica" | cut -f1) replica) | $(seconds_of "$bin" restore --from "$work/replica" --to "$work/restored.db") |"
    } | tee "$out/operations.txt"
    echo
    tee -a "$out/operations.txt" <"$work/rss"
    rm -rf "$work"
}

introspect600() {
    (
        export STRESS_USERS=600
        source stress/server.sh --background 2>/dev/null
        "$driver" introspect-only --vus 600 --duration "${INTROSPECT_DURATION:-10m}" --server-pid "$TESSERA_PID" \
            --json >"$out/introspect600.json" || true
    )
    echo
    echo "## Introspection, 600 VUs, ${INTROSPECT_DURATION:-10m}"
    jq -r '"introspections \(.iterations), \(.iterations_per_second | round) req/s, p50 / p95 / p99 \(.steps[0].p50_ms) / \(.steps[0].p95_ms) / \(.steps[0].p99_ms) ms, errors \(.errors), server CPU \(.server.cpu_ms_per_iteration * 1000 | round) µs per introspection, \(.server.cpu_seconds | round) s in all, RSS \(.server.rss_idle_mb * 10 | round / 10) MB after the sign-ins, \(.server.rss_peak_mb * 10 | round / 10) MB peak"' \
        "$out/introspect600.json" | tee "$out/introspect600.txt"
}

kill9() {
    rm -f "$out/kill9.db" "$out/kill9.db"-*
    (
        export STRESS_USERS=50 STRESS_DB=$out/kill9.db
        source stress/server.sh --background 2>/dev/null
        "$driver" flow --vus 50 --duration 60s --json >"$out/kill9.json" &
        load=$!
        sleep 20
        t0=$(date +%s%N)
        kill -9 "$TESSERA_PID"
        wait "$TESSERA_PID" 2>/dev/null || true
        stress_serve 0
        ready=$(ready_ms "$TESSERA_ISSUER" "${stress_pids[-1]}" "$t0")
        wait "$load" || true
        echo "kill -9 to /readyz 200 on the same file: $ready ms" >"$out/kill9.txt"
    )
    echo
    echo "## kill -9 under 50 VUs of full flows"
    {
        jq -r '"flows completed \(.iterations) in \(.seconds | round) s; failed requests by kind: \(.errors)"' "$out/kill9.json"
        echo "tessera check: $("$bin" --db "$out/kill9.db" check 2>&1 | tr '\n' ' ')"
    } >>"$out/kill9.txt"
    cat "$out/kill9.txt"
}

# rs256_us: µs per RS256 signature through the server's signing code, one thread.
rs256_us() { "$driver" sign --duration 3s | awk '/^RS256 sign/ { print $3 }'; }

refresh() {
    local round before after
    echo
    echo "## A refresh besides its two RS256 signatures: refresh-only, 32 VUs, 15 s, 500 users"
    echo
    echo "| round | refreshes/s | server CPU per refresh | RS256 signature before / after | the rest |"
    echo "|---:|---:|---:|---:|---:|"
    for round in 1 2 3 4; do
        before=$(rs256_us)
        (
            export STRESS_USERS=500
            source stress/server.sh --background 2>/dev/null
            "$driver" refresh-only --vus 32 --duration 15s --server-pid "$TESSERA_PID" --json \
                >"$out/refresh-$round.json" || true
        )
        after=$(rs256_us)
        jq -r --arg b "$before" --arg a "$after" --arg round "$round" '
            (.server.cpu_ms_per_iteration * 1000) as $cpu
            | "| \($round) | \(.iterations_per_second | round) | \($cpu | round) µs | \($b) / \($a) µs | **\($cpu - ($b | tonumber) - ($a | tonumber) | round) µs** |"' \
            "$out/refresh-$round.json"
    done | tee "$out/refresh.txt"
}

algs() {
    local round alg
    echo
    echo "## The access token's algorithm: refresh-only, 32 VUs, 15 s, 40 users"
    echo
    echo "| access token | round | refreshes/s | refresh p95 | server CPU per refresh |"
    echo "|---|---:|---:|---:|---:|"
    for round in 1 2; do
        for alg in RS256 ES256 EdDSA; do
            (
                export STRESS_USERS=40 TESSERA_ACCESS_TOKEN_ALG=$alg
                source stress/server.sh --background 2>/dev/null
                "$driver" refresh-only --vus 32 --duration 15s --server-pid "$TESSERA_PID" --json \
                    >"$out/algs-$alg-$round.json" || true
            )
            jq -r --arg alg "$alg" --arg round "$round" \
                '"| \($alg) | \($round) | \(.iterations_per_second | round) | \(.steps[0].p95_ms) ms | \(.server.cpu_ms_per_iteration * 1000 | round) µs |"' \
                "$out/algs-$alg-$round.json"
        done
    done | tee "$out/algs.txt"
    echo
    "$driver" sign --duration 6s | tee "$out/sign.txt"
}

for section in $only; do
    case "$section" in
        soak | storage | operations | introspect600 | kill9 | refresh | algs) "$section" ;;
        *) echo "report: unknown section $section (soak storage operations introspect600 kill9 refresh algs)" >&2; exit 2 ;;
    esac
done
