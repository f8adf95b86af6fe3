#!/usr/bin/env bash
# Measures refresh-only and token-only throughput of the Tessera built in another
# checkout (its target/release/tessera), with this checkout's driver: run it for two
# commits back to back, alternating, to compare them at the same hour.
# usage: stress/compare.sh /path/to/checkout   (build it first: cargo build --release)
set -euo pipefail
driver="$(cd "$(dirname "$0")/.." && pwd)/target/release/tessera-stress"
[ -x "$driver" ] || cargo build --release -p tessera-stress >&2
cd "${1:?usage: stress/compare.sh CHECKOUT}"
STRESS_USERS=${STRESS_USERS:-40}
source stress/server.sh --background
"$driver" refresh-only --vus 32 --duration 15s | grep -E '^(step|refresh) '
"$driver" token-only --vus 32 --duration 15s | grep -E '^token '
