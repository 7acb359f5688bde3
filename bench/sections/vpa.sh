#!/usr/bin/env bash
# Section "vpa" (issues 18, 28, 30): vscaler side by side with VerticalPodAutoscaler v1.8.1
# (recommender, updater, admission-controller: test/cluster/build.sh vpa, cached by version) on
# one local full plane (test/cluster/up.sh: kwok nodes whose Stages play the kubelet's resize,
# metrics-server). Each trace is a namespace with twin Deployments of 3 pods, "vs" (a
# VerticalScaler) and "vpa" (a VerticalPodAutoscaler), both updateMode Off, fed the same simulated
# usage (kwok usage objects, test/e2e/usage_lib.sh: never the pod template, whose change would be
# a rollout). Both get the same compressed time constants (a minute stands for a day, below).
# Traces: steady; step up x2; step down /2; a sine; a 30 s spike; a memory leak ending in an OOM
# kill; a container with a sidecar; unequal pods (requests 1000m / 500m / 100m after in-place
# resizes, using 80m / 400m / 900m and 256 / 512 / 1024Mi); the same with an OOM kill of the
# smallest replica. A namespace "apply" holds four more Deployments taking the step up: vscaler
# Auto against VPA Recreate, and both in InPlaceOrRecreate (VPA's updater and vscaler with the
# same lifetime and OOM thresholds), and a Helm-style reset (the manifest applied again) in the
# middle of the run; its pods' requests, as the kubelet (kwok) reports them, are polled every 2 s.
# Rows: per trace and resource target, lowerBound, upperBound at the end; the time from the
# change to the first target that reflects it (bench/peer-vpa/recs.py says how); per apply pair,
# pods replaced, rollouts / evictions, in-place resizes requested, and the seconds from the step
# (and from the recommendation reflecting it) to every pod carrying it; RSS and CPU seconds of
# each recommender's process (vscaler's is the whole operator). It asserts only that both
# systems made recommendations.
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
# The same time constants for both: a minute stands for a day (VPA's 12 h in-bounds eviction
# lifetime is 30 s, its 10 min OOM threshold and vscaler's 10 min min-update-interval 10 s).
interval=10s half_life=1m aggregation=30s

# shellcheck source=bench/tools/vpa_plane.sh
source bench/tools/vpa_plane.sh
vpa_plane /tmp/vscaler-bench-vpa

tmp=$(mktemp -d /tmp/vscaler-bench-vpa.XXXXXX)
pids=() namespaces=()
cleanup() {
  local pid ns
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  stop_operator
  certs/install.sh --uninstall --local >/dev/null 2>&1 || true
  k delete mutatingwebhookconfiguration vpa-webhook-config >/dev/null 2>&1 || true
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

# deployment NS NAME [SIDECAR]: 3 pods labelled app=NAME, container app (requests 100m / 100Mi)
# and, with SIDECAR, a container sidecar (50m / 50Mi). Applied again, it is a Helm-style reset.
deployment() {
  local sidecar=''
  [ -z "${3:-}" ] || sidecar=',{"name":"sidecar","image":"registry.k8s.io/pause:3.10",
     "resources":{"requests":{"cpu":"50m","memory":"50Mi"}}}'
  k -n "$1" apply -f - >/dev/null <<JSON
{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"$2"},
 "spec":{"replicas":3,"selector":{"matchLabels":{"app":"$2"}},
  "template":{"metadata":{"labels":{"app":"$2"}},
   "spec":{"containers":[{"name":"app","image":"registry.k8s.io/pause:3.10",
     "resources":{"requests":{"cpu":"100m","memory":"100Mi"}}}$sidecar]}}}}
JSON
}
# scaler NS NAME MODE: a VerticalScaler of Deployment NAME.
scaler() {
  k -n "$1" apply -f - >/dev/null <<JSON
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"$2"},
 "spec":{"deploymentName":"$2","updateMode":"$3"}}
JSON
}
# vpa NS NAME MODE: a VerticalPodAutoscaler of Deployment NAME.
vpa() {
  k -n "$1" apply -f - >/dev/null <<JSON
{"apiVersion":"autoscaling.k8s.io/v1","kind":"VerticalPodAutoscaler","metadata":{"name":"$2"},
 "spec":{"targetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"$2"},
  "updatePolicy":{"updateMode":"$3"}}}
JSON
}
# use NS CONTAINER CPU MEMORY APP...: the same usage for CONTAINER of every APP, in one write of
# vscaler-usage (so the twins' usage changes at the same moment).
use() {
  local ns=$1 container=$2 cpu=$3 memory=$4 attempt out app
  shift 4
  for attempt in 1 2 3 4 5; do
    out=$(k get clusterresourceusage vscaler-usage -o json) || return 1
    for app in "$@"; do
      out=$(python3 "$USAGE_PY" set "$ns" "$app" "$container" "$cpu" "$memory" <<<"$out") || return 1
    done
    k replace -f - >/dev/null 2>&1 <<<"$out" && return 0
    sleep 0.2
  done
  fail "use $ns: vscaler-usage kept changing under us"
}
# oom_kill NS APP [POD]: every pod of APP (or only POD) reports an OOM kill of container app
# (lastState, restartCount + 1; kwok keeps the container running), as recommender_test.sh does.
oom_kill() {
  local pod now pods
  now=$(date -u +%Y-%m-%dT%H:%M:%SZ)
  pods=${3:-$(k -n "$1" get pods -l "app=$2" -o jsonpath='{.items[*].metadata.name}')}
  for pod in $pods; do
    k -n "$1" patch pod "$pod" --subresource=status --type=json -p "[
 {\"op\":\"add\",\"path\":\"/status/containerStatuses/0/lastState\",\"value\":{\"terminated\":
   {\"reason\":\"OOMKilled\",\"exitCode\":137,\"startedAt\":\"$now\",\"finishedAt\":\"$now\"}}},
 {\"op\":\"replace\",\"path\":\"/status/containerStatuses/0/restartCount\",\"value\":1}]" >/dev/null
  done
}
# pods_of NS APP: APP's pod names, sorted (the twins' i-th pods get the same unequal usage).
pods_of() { k -n "$1" get pods -l "app=$2" -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort; }
# unequal NS APP: APP's three pods resized in place to cpu requests 1000m / 500m / 100m (the
# kubelet's part played by kwok's Stage) and given usage 80m / 400m / 900m and 256 / 512 / 1024Mi
# by pod annotation (APP has no row in the usage table, so kwok reads the annotations).
unequal() {
  local requests=(1000m 500m 100m) cpus=(80m 400m 900m) memories=(256Mi 512Mi 1024Mi) i=0 pod
  for pod in $(pods_of "$1" "$2"); do
    k -n "$1" patch pod "$pod" --subresource resize -p \
      "{\"spec\":{\"containers\":[{\"name\":\"app\",\"resources\":{\"requests\":{\"cpu\":\"${requests[i]}\"}}}]}}" >/dev/null
    k -n "$1" annotate --overwrite pod "$pod" "kwok.x-k8s.io/usage-cpu=${cpus[i]}" \
      "kwok.x-k8s.io/usage-memory=${memories[i]}" >/dev/null
    i=$((i + 1))
  done
  [ "$i" = 3 ] || fail "unequal $1 $2: $i pods, not 3"
}

# The traces: a namespace each, twins vs / vpa, mode Off.
trace_names=(steady step-up step-down sine spike leak sidecar unequal oom-small)
declare -A ns_of
for name in "${trace_names[@]}"; do
  ns_of[$name]=$(unique_namespace "vpa-$name")
  namespaces+=("${ns_of[$name]}")
done
twins() { use "${ns_of[$1]}" "$2" "$3" "$4" vs vpa; }
for name in steady step-up sine spike leak sidecar; do twins "$name" app 300m 400Mi; done
twins step-down app 600m 800Mi
twins sidecar sidecar 50m 100Mi
for name in "${trace_names[@]}"; do
  sidecar=''
  [ "$name" != sidecar ] || sidecar=1
  deployment "${ns_of[$name]}" vs $sidecar
  deployment "${ns_of[$name]}" vpa $sidecar
  scaler "${ns_of[$name]}" vs Off
  vpa "${ns_of[$name]}" vpa Off
done
# Applying: vscaler Auto / InPlaceOrRecreate against VPA Recreate / InPlaceOrRecreate, the step up.
apply_ns=$(unique_namespace vpa-apply)
namespaces+=("$apply_ns")
apply_apps=(vs-auto vs-inplace vpa-recreate vpa-inplace)
use "$apply_ns" app 300m 400Mi "${apply_apps[@]}"
for app in "${apply_apps[@]}"; do deployment "$apply_ns" "$app"; done
for ns in "${namespaces[@]}"; do
  for d in $(k -n "$ns" get deployments -o name); do
    k -n "$ns" rollout status "$d" --timeout=180s >/dev/null || fail "$ns $d did not roll out"
  done
done
for name in unequal oom-small; do
  unequal "${ns_of[$name]}" vs
  unequal "${ns_of[$name]}" vpa
done

# vscaler behind its webhooks (certs/install.sh --local), VPA's admission-controller registered
# by URL with a CA of its own, both recommenders started together; t = seconds since then.
WORK_DIR=$tmp/operator
CERT_DIR=$WORK_DIR/certs
WEBHOOK_PORT=$(free_port)
mkdir -p "$WORK_DIR"
certs/install.sh --local --port "$WEBHOOK_PORT" --cert-dir "$CERT_DIR" >/dev/null
certs/generate.sh --cert-dir "$tmp/vpa-certs" --san IP:127.0.0.1 >/dev/null
vpa_port=$(free_port)
"$VPA_BIN_DIR/vpa-admission-controller" --kubeconfig "$KUBECONFIG" --port "$vpa_port" \
  --client-ca-file "$tmp/vpa-certs/ca.crt" --tls-cert-file "$tmp/vpa-certs/tls.crt" \
  --tls-private-key "$tmp/vpa-certs/tls.key" --register-by-url --webhook-address https://127.0.0.1 \
  --webhook-port "$vpa_port" --address "127.0.0.1:$(free_port)" >"$tmp/vpa-admission.log" 2>&1 &
pids+=($!)
timing=(--recommender-interval "$interval" --cpu-histogram-decay-half-life "$half_life"
  --memory-histogram-decay-half-life "$half_life" --memory-aggregation-interval "$aggregation")
start=$EPOCHREALTIME
# now: seconds since vscaler started; the report counts VPA's from its own start.
now() { python3 -c "import sys; print(round(float(sys.argv[1]) - float(sys.argv[2]), 1))" "$EPOCHREALTIME" "$start"; }
KEEP_LOGS=1 start_operator "${timing[@]}" --checkpoint-interval 1m --min-update-interval 10s \
  --in-recommendation-bounds-eviction-lifetime-threshold 30s --evict-after-oom-threshold 10s
trap cleanup EXIT
"$VPA_BIN_DIR/vpa-recommender" --kubeconfig "$KUBECONFIG" "${timing[@]}" \
  --address "127.0.0.1:$(free_port)" >"$tmp/vpa-recommender.log" 2>&1 &
vpa_pid=$!
pids+=("$vpa_pid")
printf 'vpa\t%s\n' "$(now)" >"$tmp/offsets"
"$VPA_BIN_DIR/vpa-updater" --kubeconfig "$KUBECONFIG" --updater-interval "$interval" \
  --in-recommendation-bounds-eviction-lifetime-threshold 30s --evict-after-oom-threshold 10s \
  --address "127.0.0.1:$(free_port)" >"$tmp/vpa-updater.log" 2>&1 &
pids+=($!)
for name in "${apply_apps[@]}"; do
  case $name in
    vs-auto) scaler "$apply_ns" "$name" Auto ;;
    vs-inplace) scaler "$apply_ns" "$name" InPlaceOrRecreate ;;
    vpa-recreate) vpa "$apply_ns" "$name" Recreate ;;
    vpa-inplace) vpa "$apply_ns" "$name" InPlaceOrRecreate ;;
  esac
done

sampler() {
  local t
  while :; do
    t=$(now)
    if k get vsc -A -o json >"$tmp/vsc.json" && k get vpa -A -o json >"$tmp/vpa.json"; then
      python3 bench/peer-vpa/recs.py sample "$t" "$tmp/vsc.json" "$tmp/vpa.json" >>"$tmp/samples"
    fi
    sleep 5
  done
}
sampler &
pids+=($!)
# carrier: every 2 s, each apply Deployment's target and its pods' cpu requests as reported.
carrier() {
  local t
  while :; do
    t=$(now)
    if k -n "$apply_ns" get pods -o json >"$tmp/apply-pods.json" &&
      k -n "$apply_ns" get vsc,vpa -o json >"$tmp/apply-objects.json"; then
      python3 bench/peer-vpa/recs.py carry-sample "$t" "$tmp/apply-pods.json" \
        "$tmp/apply-objects.json" >>"$tmp/carry"
    fi
    sleep 2
  done
}
carrier &
pids+=($!)

# counts: pods created, rollouts, evictions, resize requests of the apply Deployments.
counts() {
  k -n "$apply_ns" get replicasets -o json >"$tmp/rs.json"
  k -n "$apply_ns" get events -o json >"$tmp/events.json"
  python3 bench/peer-vpa/recs.py counts "$tmp/rs.json" "$tmp/events.json" "${apply_apps[@]}"
}

# The driver: one tick every 10 s changes the usage of the traces that change; a change is
# recorded as "trace<TAB>t<TAB>direction" in $tmp/changes.
echo "bench vpa: warm-up ${warmup}s, then the changes, then ${observe}s" >&2
: >"$tmp/changes"
stepped=0 spiked=0 oom_at=$((warmup + observe - 90)) oomed=0 reset_at=$((warmup + observe / 2)) reset=0
end=$((warmup + observe))
while :; do
  t=$(now) e=${t%.*}
  [ "$e" -lt "$end" ] || break
  read -r sine_cpu sine_memory <<<"$(python3 -c "import math, sys; x = math.sin(2 * math.pi * float(sys.argv[1]) / 60)
print(f'{300 + 200 * x:.0f}m {400 + 100 * x:.0f}Mi')" "$t")"
  twins sine app "$sine_cpu" "$sine_memory"
  if [ "$stepped" = 0 ] && [ "$e" -ge "$warmup" ]; then
    stepped=1
    printf 'step-up\t%s\t1\nstep-down\t%s\t-1\nspike\t%s\t1\napply\t%s\t1\n' "$(now)" "$(now)" \
      "$(now)" "$(now)" >>"$tmp/changes"
    twins step-up app 600m 800Mi
    twins step-down app 300m 400Mi
    twins spike app 2 1200Mi
    use "$apply_ns" app 600m 800Mi "${apply_apps[@]}"
  fi
  if [ "$stepped" = 1 ] && [ "$spiked" = 0 ] && [ "$e" -ge $((warmup + 30)) ]; then
    spiked=1
    twins spike app 300m 400Mi
  fi
  if [ "$e" -ge "$warmup" ] && [ "$oomed" = 0 ]; then
    twins leak app 300m "$((400 + e - warmup))Mi" # 1 Mi a second
  fi
  if [ "$oomed" = 0 ] && [ "$e" -ge "$oom_at" ]; then
    oomed=1
    printf 'leak\t%s\t1\n' "$(now)" >>"$tmp/changes"
    oom_kill "${ns_of[leak]}" vs
    oom_kill "${ns_of[leak]}" vpa
    # The smallest replica (256Mi, the first pod of `unequal`) of the oom-small twins.
    oom_kill "${ns_of[oom-small]}" vs "$(pods_of "${ns_of[oom-small]}" vs | head -1)"
    oom_kill "${ns_of[oom-small]}" vpa "$(pods_of "${ns_of[oom-small]}" vpa | head -1)"
    twins leak app 300m 400Mi # restarted
  fi
  if [ "$reset" = 0 ] && [ "$e" -ge "$reset_at" ]; then
    reset=1
    counts >"$tmp/counts.before-reset"
    for app in "${apply_apps[@]}"; do deployment "$apply_ns" "$app"; done
  fi
  sleep 10
done

# proc_rows PID: "id<TAB>label<TAB>value" rows of a process's RSS, peak RSS and CPU seconds.
proc_rows() {
  local ticks
  ticks=$(getconf CLK_TCK)
  awk '/^VmRSS/ {printf "rss\tvpa recommender process: RSS at the end (MiB)\t%.1f\n", $2 / 1024}
    /^VmHWM/ {printf "hwm\tvpa recommender process: peak RSS (MiB)\t%.1f\n", $2 / 1024}' "/proc/$1/status"
  awk -v t="$ticks" '{ sub(/^.*\) /, ""); printf "cpu\tvpa recommender process: CPU seconds over the run (s)\t%.2f\n", ($12 + $13) / t }' "/proc/$1/stat"
}
counts >"$tmp/counts.end"
: >"$tmp/traces"
for name in "${trace_names[@]}"; do
  change=$(awk -F'\t' -v n="$name" '$1 == n {print $2 "\t" $3; exit}' "$tmp/changes")
  printf '%s\t%s\t%s\n' "${ns_of[$name]}" "$name" "${change:-$(printf -- '-\t0')}" >>"$tmp/traces"
done
python3 bench/peer-vpa/recs.py report "$tmp/samples" "$tmp/traces" "$tmp" ||
  fail "a system made no recommendation (logs: $tmp; KEEP_LOGS=1 keeps them)"
step_at=$(awk -F'\t' '$1 == "apply" {print $2; exit}' "$tmp/changes")
python3 bench/peer-vpa/recs.py carry "$tmp/carry" "${step_at:--1}" "${apply_apps[@]}" >"$tmp/carried"
# apply_rows VSCALER_APP VPA_APP WHAT: rows of pods replaced (over the run, and by the reset),
# rollouts / evictions, in-place resizes, and how long the step took to reach every pod.
apply_rows() {
  local v p vb pb side app counts before
  read -ra v <<<"$(awk -v a="$1" '$1 == a' "$tmp/counts.end")"
  read -ra p <<<"$(awk -v a="$2" '$1 == a' "$tmp/counts.end")"
  read -ra vb <<<"$(awk -v a="$1" '$1 == a' "$tmp/counts.before-reset")"
  read -ra pb <<<"$(awk -v a="$2" '$1 == a' "$tmp/counts.before-reset")"
  printf '%s.replaced\tvpa apply %s: pods replaced over the run\t%s\n' "$3" "$3" "$((v[1] - 3))" >>"$tmp/vscaler"
  printf '%s.replaced\tvpa apply %s: pods replaced over the run\t%s\n' "$3" "$3" "$((p[1] - 3))" >>"$tmp/peer"
  printf '%s.reset\tvpa apply %s: pods replaced after the Helm reset\t%s\n' "$3" "$3" "$((v[1] - vb[1]))" >>"$tmp/vscaler"
  printf '%s.reset\tvpa apply %s: pods replaced after the Helm reset\t%s\n' "$3" "$3" "$((p[1] - pb[1]))" >>"$tmp/peer"
  printf '%s.actions\tvpa apply %s: rollouts / evictions\t%s\n' "$3" "$3" "${v[2]}" >>"$tmp/vscaler"
  printf '%s.actions\tvpa apply %s: rollouts / evictions\t%s\n' "$3" "$3" "${p[3]}" >>"$tmp/peer"
  if [ "$2" = vpa-inplace ]; then
    printf '%s.resizes\tvpa apply %s: in-place resizes requested\t%s\n' "$3" "$3" "$(metric 'vscaler_pod_resizes_total{result="requested"}')" >>"$tmp/vscaler"
    printf '%s.resizes\tvpa apply %s: in-place resizes requested\t%s\n' "$3" "$3" "${p[4]}" >>"$tmp/peer"
  fi
  for side in "vscaler $1" "peer $2"; do
    read -r counts app <<<"$side"
    awk -F'\t' -v a="$app" -v w="$3" '$1 == a {
      printf "%s.reflect\tvpa apply %s: the step -> a cpu target reflecting it (s)\t%s\n", w, w, $2
      printf "%s.carry\tvpa apply %s: the step -> every pod carrying it (s)\t%s\n", w, w, $3
      printf "%s.lag\tvpa apply %s: that target -> every pod carrying it (s)\t%s\n", w, w, $4
    }' "$tmp/carried" >>"$tmp/$counts"
  done
}
apply_rows vs-auto vpa-recreate "Auto / Recreate"
apply_rows vs-inplace vpa-inplace "InPlaceOrRecreate"
proc_rows "$OPERATOR_PID" >>"$tmp/vscaler"
proc_rows "$vpa_pid" >>"$tmp/peer"
table_rows "$tmp/vscaler" "$tmp/peer" >&3
