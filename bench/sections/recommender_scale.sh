#!/usr/bin/env bash
# Section "recommender_scale" (issue 17): one recommender pass of the operator over
# VSCALER_BENCH_REC_SCALERS scalers (default 1,000), each over a Deployment of
# VSCALER_BENCH_REC_REPLICAS pods (3: 3,000 pods) with simulated usage, on a private full plane
# (kwok nodes, metrics-server) of VSCALER_BENCH_REC_NODES nodes (8, 500 pods each). Rows: the
# last pass's wall time and API requests (PodMetrics and pod lists per namespace, ReplicaSet
# reads, checkpoint and status writes), the operator's CPU seconds between two passes (one pass
# and its idle interval), and its resident memory then. No peer row here: VerticalPodAutoscaler's
# recommender on the same pods is section "vpa". VSCALER_BENCH_FULL_CLUSTER_DIR reuses a running
# full plane. Prints table rows; see bench/run.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
# shellcheck source=bench/lib.sh
source bench/lib.sh
scalers=${VSCALER_BENCH_REC_SCALERS:-1000}
replicas=${VSCALER_BENCH_REC_REPLICAS:-3}
nodes=${VSCALER_BENCH_REC_NODES:-8}
interval=${VSCALER_BENCH_REC_INTERVAL:-30s}
build=${VSCALER_BUILD_DIR:-build/release}
export VSCALER_BIN=$root/$build/vscaler
[ -x "$VSCALER_BIN" ] || { echo "recommender_scale: $VSCALER_BIN is missing (make build)" >&2; exit 1; }

tmp=$(mktemp -d)
own=
cleanup() {
  [ -n "$own" ] && VSCALER_CLUSTER_DIR=$own "$root/test/cluster/down.sh" >&2 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
dir=${VSCALER_BENCH_FULL_CLUSTER_DIR:-}
if [ -z "$dir" ]; then
  dir=$tmp/cluster
  own=$dir
  VSCALER_CLUSTER=full VSCALER_CLUSTER_DIR=$dir VSCALER_NODES=$nodes "$root/test/cluster/up.sh" >&2
fi
export VSCALER_CLUSTER=full VSCALER_CLUSTER_DIR=$dir KUBECONFIG=$dir/kubeconfig KUBECTL=$dir/bin/kubectl

start=$SECONDS
bash bench/tools/recommender_pass.sh "$scalers" "$replicas" "$interval" >"$tmp/out"
echo "recommender_scale: measured in $((SECONDS - start)) s: $(tr '\n' ' ' <"$tmp/out")" >&2
size="$scalers scalers / $((scalers * replicas)) pods"
{
  printf 'wall\trecommender pass, %s: wall time (s)\t%s\n' "$size" "$(value wall_s "$tmp/out")"
  printf 'requests\trecommender pass, %s: API requests\t%s\n' "$size" "$(value requests "$tmp/out")"
  printf 'cpu\trecommender pass, %s: operator CPU seconds per interval (%s)\t%s\n' "$size" "$interval" \
    "$(value cpu_s "$tmp/out")"
  printf 'rss\trecommender on, %s: operator RSS (MiB)\t%s\n' "$size" \
    "$(awk -v k="$(value rss_kib "$tmp/out")" 'BEGIN {print k / 1024}')"
} >"$tmp/vscaler"
: >"$tmp/peer"
table_rows "$tmp/vscaler" "$tmp/peer"
