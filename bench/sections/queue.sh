#!/usr/bin/env bash
# Section "queue": the work queue (add+get+done, 1 and 4 threads) and the scaler index (lookups
# among 100,000 scalers) against client-go's workqueue and indexer (bench/peer-workqueue).
# Prints table rows; see bench/run.sh, which configures $VSCALER_BUILD_DIR (default build/release).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
# shellcheck source=bench/lib.sh
source bench/lib.sh
runs=${VSCALER_BENCH_RUNS:-3}

build=${VSCALER_BUILD_DIR:-build/release}
cmake --build "$build" --target queue_bench >&2
mkdir -p build/bench
(cd bench/peer-workqueue && go build -o "$root/build/bench/peer-workqueue" .) >&2
vscaler=$build/bench/queue_bench
peer=build/bench/peer-workqueue

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# Alternate the two programs so that load from elsewhere on the machine hits both alike.
for i in $(seq "$runs"); do
  "$vscaler" >"$tmp/vscaler.$i"
  "$peer" >"$tmp/peer.$i"
done
median_rows "$tmp"/vscaler.* >"$tmp/vscaler"
median_rows "$tmp"/peer.* >"$tmp/peer"
table_rows "$tmp/vscaler" "$tmp/peer"
