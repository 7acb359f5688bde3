#!/usr/bin/env bash
# Section "queue": the work queue (add+get+done, 1 and 4 threads) and the scaler index (lookups
# among 100,000 scalers) against client-go's workqueue and indexer (bench/peer-workqueue).
# Prints table rows; see bench/run.sh, which builds $VSCALER_BUILD_DIR (default build/release).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
source bench/lib.sh
runs=${VSCALER_BENCH_RUNS:-3}

mkdir -p build/bench
(cd bench/peer-workqueue && go build -o "$root/build/bench/peer-workqueue" .) >&2
vscaler=${VSCALER_BUILD_DIR:-build/release}/bench/queue_bench
peer=build/bench/peer-workqueue
[ -x "$vscaler" ] || { echo "queue.sh: $vscaler is missing (make build)" >&2; exit 1; }

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
