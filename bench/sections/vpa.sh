#!/usr/bin/env bash
# Section "vpa" (issue 18): vscaler's recommender side by side with VerticalPodAutoscaler's
# (vpa-recommender v1.8.1, test/cluster/build.sh vpa, cached by version) on one local full plane
# (test/cluster/up.sh: kwok nodes, metrics-server). Each trace is a namespace with twin
# Deployments of 3 pods, "vs" (a VerticalScaler) and "vpa" (a VerticalPodAutoscaler), both
# updateMode Off, fed the same simulated usage (test/e2e/usage_lib.sh: kwok usage objects, never
# the pod template). Both recommenders get the same compressed time constants (below), so a day
# of behaviour fits in minutes. Traces: steady; step up x2; step down /2.
# Rows: per trace and resource the target, lowerBound, upperBound at the end; the time from the
# change to the first target that reflects it (bench/peer-vpa/recs.py says how); RSS and CPU
# seconds of each recommender's process over the run (vscaler's is the whole operator).
# It asserts only that both systems produced recommendations for every trace.
# Environment: KUBECONFIG + VSCALER_CLUSTER_DIR of a running full plane to use it (else one is
# started in /tmp/vscaler-bench-vpa and torn down); VSCALER_BENCH_VPA_WARMUP / _OBSERVE (s).
# Prints table rows; see bench/run.sh, which configures $VSCALER_BUILD_DIR (default build/release).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
# shellcheck source=bench/lib.sh
source bench/lib.sh
build=${VSCALER_BUILD_DIR:-build/release}
warmup=${VSCALER_BENCH_VPA_WARMUP:-150}
observe=${VSCALER_BENCH_VPA_OBSERVE:-300}
# The same time constants for both: a minute stands for a day.
interval=10s half_life=1m aggregation=30s

cmake --build "$build" --target vscaler >&2
test/cluster/build.sh vpa >/dev/null
# shellcheck source=test/cluster/versions.sh
. test/cluster/versions.sh
export VSCALER_BIN=$root/$build/vscaler
vpa_deploy=$(go env GOMODCACHE)/k8s.io/autoscaler/vertical-pod-autoscaler@$VPA_VERSION/deploy
[ -f "$vpa_deploy/vpa-v1-crd-gen.yaml" ] ||
  (cd test/cluster/vpa && go mod download k8s.io/autoscaler/vertical-pod-autoscaler) >&2

own_cluster=0
if [ -z "${KUBECONFIG:-}" ] || [ -z "${VSCALER_CLUSTER_DIR:-}" ]; then
  export VSCALER_CLUSTER=full VSCALER_CLUSTER_DIR=/tmp/vscaler-bench-vpa
  test/cluster/up.sh >&2
  own_cluster=1
fi
export KUBECONFIG=$VSCALER_CLUSTER_DIR/kubeconfig KUBECTL=$VSCALER_CLUSTER_DIR/bin/kubectl
# shellcheck source=test/e2e/lib.sh
. test/e2e/lib.sh
# shellcheck source=test/e2e/usage_lib.sh
. test/e2e/usage_lib.sh
exec 3>&1 1>&2 # only table rows go to stdout (fd 3)

tmp=$(mktemp -d /tmp/vscaler-bench-vpa.XXXXXX)
vpa_pid='' sampler_pid='' namespaces=()
cleanup() {
  [ -z "$sampler_pid" ] || kill "$sampler_pid" 2>/dev/null || true
  [ -z "$vpa_pid" ] || kill "$vpa_pid" 2>/dev/null || true
  stop_operator
  for ns in "${namespaces[@]}"; do
    usage_clear "$ns" || true
    k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
  done
  [ "$own_cluster" = 0 ] || test/cluster/down.sh >/dev/null || true
  [ -n "${KEEP_LOGS:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT

install_crd
k apply -f manifests/crd/verticalscalercheckpoints.yaml -f "$vpa_deploy/vpa-v1-crd-gen.yaml" >/dev/null
k wait --for condition=established --timeout=60s crd/verticalscalercheckpoints.scaling.vscaler.dev \
  crd/verticalpodautoscalers.autoscaling.k8s.io crd/verticalpodautoscalercheckpoints.autoscaling.k8s.io >/dev/null

# twins NS: Deployments vs and vpa (3 pods each, requests 100m / 100Mi), their scaler and VPA.
twins() {
  local app
  for app in vs vpa; do
    k -n "$1" apply -f - >/dev/null <<JSON
{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"$app"},
 "spec":{"replicas":3,"selector":{"matchLabels":{"app":"$app"}},
  "template":{"metadata":{"labels":{"app":"$app"}},
   "spec":{"containers":[{"name":"app","image":"registry.k8s.io/pause:3.10",
     "resources":{"requests":{"cpu":"100m","memory":"100Mi"}}}]}}}}
JSON
  done
  k -n "$1" apply -f - >/dev/null <<JSON
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"vs"},
 "spec":{"deploymentName":"vs","updateMode":"Off"}}
JSON
  k -n "$1" apply -f - >/dev/null <<JSON
{"apiVersion":"autoscaling.k8s.io/v1","kind":"VerticalPodAutoscaler","metadata":{"name":"vpa"},
 "spec":{"targetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"vpa"},
  "updatePolicy":{"updateMode":"Off"}}}
JSON
}
# both NS CPU MEMORY: the same usage for the twins' container app.
both() {
  usage_set "$1" vs app "$2" "$3"
  usage_set "$1" vpa app "$2" "$3"
}

# trace NAME START_CPU START_MEMORY [CHANGED_CPU CHANGED_MEMORY DIRECTION]
trace_names=() trace_ns=() trace_change=()
trace() {
  local ns
  ns=$(unique_namespace "vpa-$1")
  namespaces+=("$ns")
  trace_names+=("$1") trace_ns+=("$ns") trace_change+=("${4:--} ${5:--} ${6:-0}")
  both "$ns" "$2" "$3"
  twins "$ns"
}
trace steady 300m 400Mi
trace step-up 300m 400Mi 600m 800Mi 1
trace step-down 600m 800Mi 300m 400Mi -1
for ns in "${namespaces[@]}"; do
  for app in vs vpa; do
    k -n "$ns" rollout status "deployment/$app" --timeout=180s >/dev/null || fail "$ns/$app did not roll out"
  done
done

# Both recommenders start together; t = seconds since then.
timing=(--recommender-interval "$interval" --cpu-histogram-decay-half-life "$half_life"
  --memory-histogram-decay-half-life "$half_life" --memory-aggregation-interval "$aggregation")
WORK_DIR=$tmp/operator KEEP_LOGS=1 start_operator "${timing[@]}" --checkpoint-interval 1m
trap cleanup EXIT
"$VPA_BIN_DIR/vpa-recommender" --kubeconfig "$KUBECONFIG" "${timing[@]}" \
  --address "127.0.0.1:$(free_port)" >"$tmp/vpa-recommender.log" 2>&1 &
vpa_pid=$!
start=$EPOCHREALTIME
now() { python3 -c "import sys; print(round(float(sys.argv[1]) - float(sys.argv[2]), 1))" "$EPOCHREALTIME" "$start"; }

sampler() {
  while :; do
    local t
    t=$(now)
    if k get vsc -A -o json >"$tmp/vsc.json" && k get vpa -A -o json >"$tmp/vpa.json"; then
      python3 bench/peer-vpa/recs.py sample "$t" "$tmp/vsc.json" "$tmp/vpa.json" >>"$tmp/samples"
    fi
    sleep 5
  done
}
sampler &
sampler_pid=$!

echo "bench vpa: warm-up ${warmup}s, then the changes, then ${observe}s" >&2
sleep "$warmup" # a benchmark's timeline, not a wait for a condition
: >"$tmp/traces"
for i in "${!trace_names[@]}"; do
  read -r cpu memory direction <<<"${trace_change[$i]}"
  change=-
  if [ "$direction" != 0 ]; then
    change=$(now)
    both "${trace_ns[$i]}" "$cpu" "$memory"
  fi
  printf '%s\t%s\t%s\t%s\n' "${trace_ns[$i]}" "${trace_names[$i]}" "$change" "$direction" >>"$tmp/traces"
done
sleep "$observe"

# proc_rows PID: "id<TAB>label<TAB>value" rows of a process's RSS, peak RSS and CPU seconds.
proc_rows() {
  local ticks rss hwm
  ticks=$(getconf CLK_TCK)
  rss=$(awk '/^VmRSS/ {print $2 / 1024}' "/proc/$1/status")
  hwm=$(awk '/^VmHWM/ {print $2 / 1024}' "/proc/$1/status")
  printf 'rss\tvpa recommender process: RSS at the end (MiB)\t%s\n' "$rss"
  printf 'hwm\tvpa recommender process: peak RSS (MiB)\t%s\n' "$hwm"
  awk -v t="$ticks" '{ sub(/^.*\) /, ""); printf "cpu\tvpa recommender process: CPU seconds over the run (s)\t%.2f\n", ($12 + $13) / t }' "/proc/$1/stat"
}
kill "$sampler_pid" && sampler_pid=''
python3 bench/peer-vpa/recs.py report "$tmp/samples" "$tmp/traces" "$tmp" ||
  fail "a system made no recommendation (logs: $tmp; KEEP_LOGS=1 keeps them)"
proc_rows "$OPERATOR_PID" >>"$tmp/vscaler"
proc_rows "$vpa_pid" >>"$tmp/peer"
table_rows "$tmp/vscaler" "$tmp/peer" >&3
