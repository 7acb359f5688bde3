#!/usr/bin/env bash
# Section "recommender": the recommender's core (bench/recommender_bench.cpp) against
# VerticalPodAutoscaler's recommender model (bench/peer-vpa-recommender, VPA v1.8.1's
# pkg/recommender/model) on the same workload: samples folded per second, bytes per container
# after a day at one sample a minute. Recommendations and checkpoints per second have no peer row.
# Prints table rows; see bench/run.sh, which configures $VSCALER_BUILD_DIR (default build/release).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
# shellcheck source=bench/lib.sh
source bench/lib.sh
runs=${VSCALER_BENCH_RUNS:-3}

build=${VSCALER_BUILD_DIR:-build/release}
cmake --build "$build" --target recommender_bench >&2
mkdir -p build/bench
(cd bench/peer-vpa-recommender && go build -o "$root/build/bench/peer-vpa-recommender" .) >&2
vscaler=$build/bench/recommender_bench
peer=build/bench/peer-vpa-recommender

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
