#!/usr/bin/env bash
# Section "recommender": the recommender's core (bench/recommender_bench.cpp): samples folded per
# second, recommendations and checkpoints per second, bytes per container after a day at one
# sample a minute. No peer yet (VPA's recommender model would be one): the peer column is n/a.
# Prints table rows; see bench/run.sh, which configures $VSCALER_BUILD_DIR (default build/release).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
# shellcheck source=bench/lib.sh
source bench/lib.sh
runs=${VSCALER_BENCH_RUNS:-3}

build=${VSCALER_BUILD_DIR:-build/release}
cmake --build "$build" --target recommender_bench >&2
vscaler=$build/bench/recommender_bench

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for i in $(seq "$runs"); do
  "$vscaler" >"$tmp/vscaler.$i"
done
median_rows "$tmp"/vscaler.* >"$tmp/vscaler"
# table_rows tells its two files apart by line numbers: the peer file must not be empty.
printf 'none\tno peer\t0\n' >"$tmp/peer"
table_rows "$tmp/vscaler" "$tmp/peer"
