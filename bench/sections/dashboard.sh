#!/usr/bin/env bash
# Section "dashboard": what one /dashboard view costs the operator for 1,000 scalers (snapshot,
# history, model, HTML; and the JSON twin), in process (bench/dashboard_bench.cpp). No peer
# (Goldilocks renders from VPA objects it lists per view). Fails when the page takes 200 ms or more.
# Prints table rows; see bench/run.sh, which configures $VSCALER_BUILD_DIR (default build/release).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
# shellcheck source=bench/lib.sh
source bench/lib.sh
runs=${VSCALER_BENCH_RUNS:-3}

build=${VSCALER_BUILD_DIR:-build/release}
cmake --build "$build" --target dashboard_bench >&2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq "$runs"); do
  "$build/bench/dashboard_bench" >"$tmp/vscaler.$i"
done
median_rows "$tmp"/vscaler.* >"$tmp/vscaler"
: >"$tmp/peer"
table_rows "$tmp/vscaler" "$tmp/peer"
