#!/usr/bin/env bash
# Section "recommender_memory" (issue 17: "with recommendations on, 10,000 scalers, 2 containers
# each, histories filled, settled <= 64 MiB"): the whole operator's memory while its recommender
# (the leader: no --leader-elect) holds VSCALER_BENCH_REC_MEM_SCALERS (10,000) filled histories
# of 2 containers each, on a minimal control plane (etcd + kube-apiserver).
#
# Why the state is faithful without 10,000 pods sampled for a day: a recommender keeps its
# histories in VerticalScalerCheckpoints and resumes from them (DESIGN.md), and it keeps the
# aggregates of a scaler whose target has no pod (NoPodsMatched) until the scaler goes, as VPA
# keeps aggregates of containers without pods. So each scaler here is the seed's smallest one
# (every container recommended, mode Auto) over a Deployment of two containers with replicas 0,
# with the checkpoint a previous leader would have written: a day of noisy usage of 2 pods at
# one sample a minute, folded and encoded by the project's own code (bench/tools/checkpoint_day,
# 8 variants), and the status.recommendation that history gives (the Deployments' requests are
# its targets: nothing to patch). No metrics.k8s.io is needed: with no pod the metrics list is
# not needed either (the plane's 404 is an unavailable-metrics answer, not a failure). What this
# state lacks against a real cluster is the pods themselves, which the recommender caches for one
# pass only (DESIGN.md): they add to the peak, not to the settled figure.
#
# Runs: an unmeasured warm-up operator (restores, writes the RecommendationProvided conditions
# and the reconciler's status once, and on SIGTERM the checkpoints), then the measured one:
# RSS (VmRSS) once its second recommender pass is over and the queue settled (3 s without a
# reconcile), peak (VmHWM) then. The count of filled aggregates and their bytes come from the
# recommender's own "recommender pass" log line. No peer: VPA's recommender would need 10,000 VPAs
# and VPA checkpoints of its own format; not measured (n/a). VSCALER_BENCH_CLUSTER_DIR reuses a
# running control plane. Prints table rows; see bench/run.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
source bench/lib.sh
source bench/tools/operators.sh
scalers=${VSCALER_BENCH_REC_MEM_SCALERS:-10000}
namespaces=${VSCALER_BENCH_REC_MEM_NAMESPACES:-100}
interval=${VSCALER_BENCH_REC_MEM_INTERVAL:-20s}
build=${VSCALER_BUILD_DIR:-build/release}

cmake --build "$build" --target checkpoint_day >&2
bench_setup
"$KUBECTL" apply -f manifests/crd/verticalscalercheckpoints.yaml >/dev/null
"$KUBECTL" wait --for condition=established --timeout=60s \
  crd/verticalscalercheckpoints.scaling.vscaler.dev >/dev/null
out=$BENCH_WORK/out
mkdir -p "$out"
"$build/bench/tools/checkpoint_day" 8 >"$out/histories.jsonl"
start=$SECONDS
vsbench populate-histories --prefix bench-recmem --namespaces "$namespaces" --scalers "$scalers" \
  --histories "$out/histories.jsonl" >&2
echo "recommender_memory: populated in $((SECONDS - start)) s" >&2

# passes N: waits until the operator's log holds N "recommender pass" lines; prints the last.
passes() {
  local deadline=$((SECONDS + 900))
  until [ "$(grep -c '"msg":"recommender pass"' "$OP_LOG" || true)" -ge "$1" ]; do
    if ! kill -0 "$OP_PID" 2>/dev/null || [ $SECONDS -ge $deadline ]; then
      echo "recommender_memory: no recommender pass $1; the log's end:" >&2
      tail -n 5 "$OP_LOG" >&2
      return 1
    fi
    sleep 1
  done
  grep '"msg":"recommender pass"' "$OP_LOG" | tail -n 1
}
# field NAME LINE: a field of a JSON log line.
field() { python3 -c 'import json, sys; print(json.loads(sys.argv[2])[sys.argv[1]])' "$1" "$2"; }

start=$SECONDS
start_operator vscaler --recommender-interval "$interval"
line=$(passes 1)
vsbench settle --metrics "$OP_METRICS" --min-reconciles "$scalers" >/dev/null
stop_operator
echo "recommender_memory: warm-up in $((SECONDS - start)) s; its first pass: $line" >&2

start=$SECONDS
start_operator vscaler --recommender-interval "$interval"
first=$(passes 1)
line=$(passes 2)
vsbench settle --metrics "$OP_METRICS" --min-reconciles "$scalers" >/dev/null
rss=$(proc_kib "$OP_PID" VmRSS)
hwm=$(proc_kib "$OP_PID" VmHWM)
aggregates=$(field aggregates "$line")
bytes=$(field history_bytes "$line")
echo "recommender_memory: measured in $((SECONDS - start)) s; first pass: $first; second: $line" >&2
echo "recommender_memory: RSS $((rss / 1024)) MiB, peak $((hwm / 1024)) MiB, $aggregates filled" \
  "aggregates, $((bytes / 1024)) KiB of histories; load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
stop_operator

size="$((scalers / 1000))k scalers / $((scalers * 2 / 1000))k containers, histories filled"
{
  printf 'rss\trecommendations on, %s: RSS once settled (MiB; goal <= 64)\t%s\n' "$size" \
    "$(awk -v k="$rss" 'BEGIN {print k / 1024}')"
  printf 'hwm\trecommendations on, %s: peak RSS (MiB)\t%s\n' "$size" \
    "$(awk -v k="$hwm" 'BEGIN {print k / 1024}')"
  printf 'aggregates\trecommendations on, %s: filled container aggregates held (goal %s)\t%s\n' \
    "$size" "$((scalers * 2))" "$aggregates"
  printf 'bytes\trecommendations on, %s: the histories'"'"' own bytes per container\t%s\n' \
    "$size" "$(awk -v b="$bytes" -v n="$aggregates" 'BEGIN {print (n > 0 ? b / n : 0)}')"
} >"$out/vscaler"
: >"$out/peer"
table_rows "$out/vscaler" "$out/peer"
