#!/usr/bin/env bash
# Section "scale" (issue 9, items 3 and 4): vscaler against the usual controller-runtime design
# (bench/peer-controller-runtime: full Deployment cache, and metadata-only watch) on a local
# control plane holding VSCALER_BENCH_DEPLOYMENTS small Deployments (default 50,000) over
# VSCALER_BENCH_NAMESPACES namespaces (100), VSCALER_BENCH_SCALERS of them (10,000) targeted by a
# VerticalScaler in Reconcile mode, already carrying the declared resources (nothing drifted).
# Everything is created before any operator starts, by parallel creates (vsbench populate), and an
# unmeasured warm-up run writes the scalers' status. Then each operator runs alone, one after the
# other, against that same state:
#
# 3. Memory: VmRSS of the operator process (/proc/PID/status) once settled (every scaler
#    reconciled, queue empty, 3 s without a reconcile); and VmHWM, its peak, at the end.
# 4. One resync when nothing drifted: wall time, API requests, API writes.
#    - vscaler: the next periodic resync pass after settling (--resync-period, default here 30s):
#      its "resync pass" debug log line gives the pass's wall_ms;
#    - the peer: its cache resync (--sync-period, same value) re-delivers every cached object as
#      an update, which the peer maps to every scaler and reconciles (from the cache, or with a GET
#      per Deployment in the metadata-only variant): wall time from the first queue add seen to
#      the last reconcile seen (100 ms polling of its /metrics, so +-0.2 s).
#    API requests and writes are counted by the API server (apiserver_request_total): reads are
#    GET/LIST of Deployments and VerticalScalers, writes every mutating verb on Deployments,
#    VerticalScalers (and their status) and Events, from settling until the resync is over.
#
# One run per operator (the state takes minutes to build). Sizes: the environment variables
# above, VSCALER_BENCH_RESYNC_PERIOD (30s); VSCALER_BENCH_OPERATORS (default
# "vscaler peer-full peer-meta"); VSCALER_BENCH_CLUSTER_DIR reuses a running control plane (the
# namespaces are created only if missing). Prints table rows; see bench/run.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
source bench/lib.sh
source bench/tools/operators.sh
namespaces=${VSCALER_BENCH_NAMESPACES:-100}
deployments=${VSCALER_BENCH_DEPLOYMENTS:-50000}
scalers=${VSCALER_BENCH_SCALERS:-10000}
period=${VSCALER_BENCH_RESYNC_PERIOD:-30s}
read -r -a operators <<<"${VSCALER_BENCH_OPERATORS:-vscaler peer-full peer-meta}"

bench_setup
out=$BENCH_WORK/out
mkdir -p "$out"
start=$SECONDS
vsbench populate --prefix bench-scale --namespaces "$namespaces" --deployments "$deployments" \
  --scalers "$scalers" --mode Reconcile >&2
echo "scale: populated in $((SECONDS - start)) s" >&2

control_plane_memory() {
  local name pid
  for name in etcd kube-apiserver; do
    # NAME.pid holds "PID STARTTIME" (scripts/process.sh).
    read -r pid _ <"$BENCH_CLUSTER_DIR/$name.pid" 2>/dev/null || continue
    echo "scale: $name VmRSS $(($(proc_kib "$pid" VmRSS) / 1024)) MiB," \
      "VmHWM $(($(proc_kib "$pid" VmHWM) / 1024)) MiB" >&2
  done
  echo "scale: etcd db $(du -sm "$BENCH_CLUSTER_DIR/etcd-data" | cut -f1) MiB on disk" >&2
}
control_plane_memory

# Warm-up, not measured: the first operator to run writes every scaler's status (the peer writes
# the same status as vscaler, so later runs write none). Without this, the first measured operator
# alone would carry those 10,000 writes in its settle time and peak memory.
start=$SECONDS
start_operator "${operators[0]}"
vsbench settle --metrics "$OP_METRICS" --min-reconciles "$scalers" >/dev/null
stop_operator
echo "scale: warm-up (${operators[0]}: statuses written) in $((SECONDS - start)) s" >&2

size="$((scalers / 1000))k scalers / $((deployments / 1000))k Deployments"
for op in "${operators[@]}"; do
  echo "scale: $op" >&2
  started=$SECONDS
  case $op in
    vscaler) start_operator vscaler --resync-period "$period" --log-level debug ;;
    *) start_operator "$op" --sync-period "$period" ;;
  esac
  vsbench settle --metrics "$OP_METRICS" --min-reconciles "$scalers" >"$out/settle.$op"
  echo "scale: $op settled in $((SECONDS - started)) s: $(tr '\n' ' ' <"$out/settle.$op")" >&2
  rss=$(proc_kib "$OP_PID" VmRSS)
  vsbench apicount >"$out/api0.$op"
  if [ "$op" = vscaler ]; then
    # The first pass that starts after settling, then its reconciles (none when nothing drifted).
    vsbench resynclog --log "$OP_LOG" --after "$(date +%s%3N)" >"$out/resync.$op"
    echo "scale: vscaler resync pass: $(tr '\n' ' ' <"$out/resync.$op")" >&2
    wall=$(value wall_ms "$out/resync.$op")
    vsbench settle --metrics "$OP_METRICS" >/dev/null
  else
    vsbench resync --metrics "$OP_METRICS" >"$out/resync.$op"
    echo "scale: $op resync: $(tr '\n' ' ' <"$out/resync.$op")" >&2
    wall=$(value wall_ms "$out/resync.$op")
  fi
  vsbench apicount >"$out/api1.$op"
  hwm=$(proc_kib "$OP_PID" VmHWM)
  reads=$(($(value reads "$out/api1.$op") - $(value reads "$out/api0.$op")))
  writes=$(($(value writes "$out/api1.$op") - $(value writes "$out/api0.$op")))
  echo "scale: $op RSS $((rss / 1024)) MiB, peak $((hwm / 1024)) MiB; resync ${wall} ms," \
    "$reads reads, $writes writes" >&2
  {
    printf 'rss\tmemory: RSS once settled (MiB; goal <= 40), %s\t%s\n' "$size" "$(awk -v k="$rss" 'BEGIN {print k / 1024}')"
    printf 'hwm\tmemory: peak RSS (MiB; goal <= 64), %s\t%s\n' "$size" "$(awk -v k="$hwm" 'BEGIN {print k / 1024}')"
    printf 'wall\tone resync (peer: its cache resync), nothing drifted: wall time (ms; goal <= 1000), %s\t%s\n' "$size" "$wall"
    printf 'reads\tone resync (peer: its cache resync), nothing drifted: API reads\t%s\n' "$reads"
    printf 'writes\tone resync (peer: its cache resync), nothing drifted: API writes (goal 0)\t%s\n' "$writes"
  } >"$out/$op"
  stop_operator
done
control_plane_memory

[[ " ${operators[*]} " == *" vscaler "* ]] || { echo "scale: vscaler not run; no rows" >&2; exit 0; }
for peer in "${operators[@]}"; do
  [ "$peer" = vscaler ] && continue
  case $peer in
    peer-full) what="peer: controller-runtime, full Deployment cache" ;;
    peer-meta) what="peer: controller-runtime, metadata-only watch" ;;
  esac
  awk -F'\t' -v what="$what" 'BEGIN {OFS = FS} {$2 = $2 " [" what "]"; print}' "$out/vscaler" \
    >"$out/vscaler.vs.$peer"
  compare_rows "$out/vscaler.vs.$peer" "$out/$peer"
done
