#!/usr/bin/env bash
# Section "recommender_scale" (issue 17): one recommender pass of the operator over
# VSCALER_BENCH_REC_SCALERS scalers (default 1,000), each over a Deployment of
# VSCALER_BENCH_REC_REPLICAS pods (3: 3,000 pods) with simulated usage, on a private full plane
# (kwok nodes, metrics-server) of VSCALER_BENCH_REC_NODES nodes (8, 500 pods each). Rows: the
# last pass's wall time (and that less its wait for status writes: the API server's share) and
# API requests (PodMetrics and pod lists per namespace, ReplicaSet reads, checkpoint and status
# writes), the operator's CPU seconds between two passes (one pass
# and its idle interval), and its resident memory then. The peer: VerticalPodAutoscaler's
# recommender (bench/peer-vpa/recommender_pass.sh) on the same pods afterwards, one VPA per
# Deployment, the same interval: its mean main-loop time, the API requests per interval the API
# server counted less the plane's own, CPU seconds per interval, RSS (issue 18's "at 1,000
# workloads"). VSCALER_BENCH_FULL_CLUSTER_DIR reuses a running full plane. Prints table rows; see
# bench/run.sh.
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
RECOMMENDER_PASS_KEEP=1 bash bench/tools/recommender_pass.sh "$scalers" "$replicas" "$interval" >"$tmp/out"
echo "recommender_scale: vscaler measured in $((SECONDS - start)) s: $(tr '\n' ' ' <"$tmp/out")" >&2
ns=$(value namespace "$tmp/out")
start=$SECONDS
test/cluster/build.sh vpa >/dev/null
bash bench/peer-vpa/recommender_pass.sh "$ns" "$interval" >"$tmp/peer.out" ||
  echo "recommender_scale: the VPA recommender was not measured" >&2
echo "recommender_scale: VPA measured in $((SECONDS - start)) s: $(tr '\n' ' ' <"$tmp/peer.out")" >&2
"$KUBECTL" delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
size="$scalers scalers / $((scalers * replicas)) pods"
# rows OUT: the table's rows of one recommender's measurement.
rows() {
  printf 'wall\trecommender pass (VPA: main loop), %s: wall time (s)\t%s\n' "$size" "$(value wall_s "$1")"
  [ -z "$(value writes_waiting "$1")" ] ||
    printf 'waiting\trecommender pass, %s: status writes still waiting at its end (the pass does not wait for them)\t%s\n' \
      "$size" "$(value writes_waiting "$1")"
  printf 'requests\trecommender pass, %s: API requests per interval (%s)\t%s\n' "$size" "$interval" \
    "$(value requests "$1")"
  printf 'cpu\trecommender, %s: process CPU seconds per interval (%s)\t%s\n' "$size" "$interval" \
    "$(value cpu_s "$1")"
  printf 'rss\trecommender, %s: process RSS (MiB; vscaler: the whole operator)\t%s\n' "$size" \
    "$(awk -v k="$(value rss_kib "$1")" 'BEGIN {print k / 1024}')"
}
rows "$tmp/out" >"$tmp/vscaler"
if [ -s "$tmp/peer.out" ]; then rows "$tmp/peer.out" >"$tmp/peer"; else : >"$tmp/peer"; fi
table_rows "$tmp/vscaler" "$tmp/peer"
