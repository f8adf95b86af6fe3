#!/usr/bin/env bash
# The layering of docs/ARCHITECTURE.md, checked: each crate that belongs to one
# layer is imported there only. Prints every offending line and exits non-zero.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0

# forbid PATTERN ALLOWED_REGEX WHAT: PATTERN may appear only in files matching ALLOWED_REGEX.
forbid() {
    local pattern=$1 allowed=$2 what=$3
    local hits
    hits=$(grep -rnE "$pattern" src --include='*.rs' | grep -vE "^($allowed)" || true)
    if [ -n "$hits" ]; then
        echo "layering: $what"
        echo "$hits" | sed 's/^/  /'
        status=1
    fi
}

forbid '\b(rusqlite|r2d2_sqlite)::' 'src/db/sql\.rs:|src/db/sqlite/' 'the SQLite engine is used only in src/db/sqlite/ and the executor (src/db/sql.rs)'
forbid '\br2d2::' 'src/db/sqlite/|src/db/pg/' 'connection pools belong to the engines (src/db/sqlite/, src/db/pg/)'
forbid '\b(postgres|postgres_native_tls|native_tls)::' 'src/db/sql\.rs:|src/db/pg/' 'the PostgreSQL engine is used only in src/db/pg/ and the executor (src/db/sql.rs)'
forbid '\bactix_web\b|\bactix_rt\b' 'src/http/|src/startup\.rs:|src/main\.rs:' 'actix is used only in src/http/, startup.rs and main.rs'
forbid '\bjosekit::' 'src/crypto/' 'josekit is used only in src/crypto/'
forbid '\bopenidconnect::' 'src/federation/' 'openidconnect (upstream sign-in) is used only in src/federation/'
# Handlers and commands make one call into a use case (oidc/, auth/, account/, admin/, branding/, lifecycle/);
# the storage operations are those layers' business.
forbid 'db::[a-z_]+::[a-z_]+\(|\.db\.(read|write)\(' 'src/(db|oidc|auth|account|admin|apply|branding|lifecycle|federation|forward_auth|audit\.rs|startup\.rs|metrics\.rs)' 'src/http/ and src/cli/ call use cases, not storage operations'

exit $status
