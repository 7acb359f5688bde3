#!/usr/bin/env bash
# Section "history" (issue 31): how long a new scaler of a workload that has run for 8 days waits
# for a recommendation it can trust (upperBound / target <= 1.5 for CPU and memory), with the
# history in the cluster's Prometheus: vscaler with --prometheus-address against
# VerticalPodAutoscaler v1.8.1's recommender with --storage=prometheus on the same Prometheus,
# and vscaler on a workload Prometheus holds no history of (what every scaler gets without it).
#
# One local full plane with its Prometheus (test/cluster/prometheus.sh: Debian's prometheus
# scraping kwok as job kubernetes-cadvisor). Three StatefulSets of 2 pods in one namespace, all
# using 300m / 400Mi (kwok usage): "seeded" and "vpa" with 8 days of that usage (a daily wave of
# +-30m, +-20Mi) seeded into Prometheus by test/cluster/history.py and promtool, "fresh" with
# none. VerticalScalers seeded and fresh (updateMode Off), a VerticalPodAutoscaler vpa (Off);
# then vscaler and VPA's recommender start at the same moment, both with a 10 s recommender
# interval and the default 8d history at 1h resolution, and every recommendation is polled each
# 2 s for VSCALER_BENCH_HISTORY_OBSERVE seconds (120).
#
# What VPA needs to read the same Prometheus (bench/sections/history.md says why):
#   --container-pod-name-label=pod --container-name-label=container (today's cAdvisor labels);
#   --metric-for-pod-labels='up{job="kubernetes-pods"}[8d]' and that series seeded with
#   pod_label_app (history.py --pod-labels): VPA links history to its objects through pod labels
#   read from such a series, and its default (an instant vector) is refused ("expected query to
#   return a matrix").
# Rows: seconds from the start to the first recommendation and to the first narrow one ("-":
# not within the observation), and upperBound / target of CPU and memory in the first one.
# Environment: KUBECONFIG + VSCALER_CLUSTER_DIR of a running full plane to use it (else one is
# started in /tmp/vscaler-bench-history and torn down). Prints table rows; see bench/run.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
# shellcheck source=bench/lib.sh
source bench/lib.sh
build=${VSCALER_BUILD_DIR:-build/release}
observe=${VSCALER_BENCH_HISTORY_OBSERVE:-120}

# shellcheck source=bench/tools/vpa_plane.sh
source bench/tools/vpa_plane.sh
vpa_plane /tmp/vscaler-bench-history

tmp=$(mktemp -d /tmp/vscaler-bench-history.XXXXXX)
ns="" vpa_pid=""
cleanup() {
  [ -z "$vpa_pid" ] || kill "$vpa_pid" 2>/dev/null || true
  stop_operator
  if [ -n "$ns" ]; then
    usage_clear "$ns" || true
    k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
  fi
  if [ "$own_cluster" = 1 ]; then test/cluster/down.sh >/dev/null || true; fi
  [ -n "${KEEP_LOGS:-}" ] || rm -rf "$tmp"
}
trap cleanup EXIT

test/cluster/prometheus.sh up >/dev/null
prometheus_url=$(cat "$VSCALER_CLUSTER_DIR/prometheus.url")
install_crd
k apply -f manifests/crd/verticalscalercheckpoints.yaml -f "$vpa_deploy/vpa-v1-crd-gen.yaml" >/dev/null
k wait --for condition=established --timeout=60s crd/verticalpodautoscalers.autoscaling.k8s.io \
  crd/verticalscalercheckpoints.scaling.vscaler.dev >/dev/null
ns=$(unique_namespace history)

# 8 days of seeded-0/1 and vpa-0/1, ending now (a point each 5 min), into Prometheus' TSDB.
history=(python3 test/cluster/history.py --namespace "$ns" --container app --cpu-mean 0.3
  --cpu-amplitude 0.03 --memory-mean-mib 400 --memory-amplitude-mib 20 --days 8 --step 300
  --end $(($(date +%s) / 300 * 300)))
"${history[@]}" --pods seeded-0,seeded-1 --owner StatefulSet/seeded >"$tmp/seeded.om"
"${history[@]}" --pods vpa-0,vpa-1 --owner StatefulSet/vpa --pod-labels app=vpa >"$tmp/vpa.om"
test/cluster/prometheus.sh seed "$tmp/seeded.om" "$tmp/vpa.om"

for app in seeded fresh vpa; do
  usage_set "$ns" "$app" app 300m 400Mi
  k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"$app"},
 "spec":{"replicas":2,"serviceName":"$app","selector":{"matchLabels":{"app":"$app"}},
  "template":{"metadata":{"labels":{"app":"$app"}},"spec":{"containers":[
   {"name":"app","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}]}}}}
JSON
done
for app in seeded fresh vpa; do
  k -n "$ns" rollout status "statefulset/$app" --timeout=120s >/dev/null
done
for app in seeded fresh; do
  k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"$app"},
 "spec":{"targetRef":{"apiVersion":"apps/v1","kind":"StatefulSet","name":"$app"},"updateMode":"Off"}}
JSON
done
k -n "$ns" apply -f - >/dev/null <<'JSON'
{"apiVersion":"autoscaling.k8s.io/v1","kind":"VerticalPodAutoscaler","metadata":{"name":"vpa"},
 "spec":{"targetRef":{"apiVersion":"apps/v1","kind":"StatefulSet","name":"vpa"},
  "updatePolicy":{"updateMode":"Off"}}}
JSON

# Both recommenders from the same moment; t = seconds since then.
start=$EPOCHREALTIME
KEEP_LOGS=1 start_operator --recommender-interval 10s --resync-period 1h --checkpoint-interval 1h \
  --prometheus-address "$prometheus_url"
trap cleanup EXIT
"$VPA_BIN_DIR/vpa-recommender" --kubeconfig "$KUBECONFIG" --recommender-interval 10s \
  --storage prometheus --prometheus-address "$prometheus_url" --history-length 8d \
  --history-resolution 1h --container-pod-name-label pod --container-name-label container \
  --metric-for-pod-labels 'up{job="kubernetes-pods"}[8d]' --address "127.0.0.1:$(free_port)" \
  --v 4 >"$tmp/vpa-recommender.log" 2>&1 &
vpa_pid=$!

# Each 2 s: "t name cpu-ratio memory-ratio" per object with a recommendation of container app.
poll() {
  k -n "$ns" get vsc -o json >"$tmp/vsc.json" && k -n "$ns" get vpa -o json >"$tmp/vpa.json" &&
    python3 - "$1" "$tmp/vsc.json" "$tmp/vpa.json" <<'PY'
import json, re, sys
UNITS = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
def amount(q):
    number, unit = re.fullmatch(r"([0-9.eE+-]+?)([a-zA-Z]*)", str(q)).groups()
    return float(number) * UNITS[unit]
for path in sys.argv[2:]:
    for item in json.load(open(path))["items"]:
        for rec in ((item.get("status") or {}).get("recommendation") or {}).get("containerRecommendations") or []:
            if rec.get("containerName") != "app" or "target" not in rec or "upperBound" not in rec:
                continue
            ratio = [amount(rec["upperBound"][r]) / amount(rec["target"][r]) for r in ("cpu", "memory")]
            print(sys.argv[1], item["metadata"]["name"], f"{ratio[0]:.3f}", f"{ratio[1]:.3f}")
PY
}
: >"$tmp/polls"
while :; do
  t=$(python3 -c "import sys; print(round(float(sys.argv[1]) - float(sys.argv[2]), 1))" "$EPOCHREALTIME" "$start")
  awk -v t="$t" -v limit="$observe" 'BEGIN { exit !(t > limit) }' && break
  poll "$t" >>"$tmp/polls" || true
  # Done once every object's recommendation is narrow.
  [ "$(awk '$3 <= 1.5 && $4 <= 1.5 {narrow[$2] = 1} END {print length(narrow)}' "$tmp/polls")" = 3 ] && break
  sleep 2
done
grep -q 'Initializing VPA from history provider' "$tmp/vpa-recommender.log" ||
  echo "history: VPA's recommender did not read its history provider (log $tmp/vpa-recommender.log)"
if grep -q 'Cannot get cluster history' "$tmp/vpa-recommender.log"; then
  echo "history: VPA could not read Prometheus: $(grep -m1 'Cannot get cluster history' "$tmp/vpa-recommender.log")"
fi

# rows NAME FILE: NAME's "id<TAB>label<TAB>value" lines.
rows() {
  awk -v name="$1" '
    $2 == name && first == "" { first = $1; cpu = $3; memory = $4 }
    $2 == name && narrow == "" && $3 <= 1.5 && $4 <= 1.5 { narrow = $1 }
    END {
      printf "first\thistory: s to the first recommendation (lower is better)\t%s\n", first == "" ? "-" : first
      printf "narrow\thistory: s to upperBound/target <= 1.5, cpu and memory (lower is better)\t%s\n", narrow == "" ? "-" : narrow
      printf "cpu\thistory: first recommendation, cpu upperBound/target (lower is better)\t%s\n", first == "" ? "-" : cpu
      printf "memory\thistory: first recommendation, memory upperBound/target (lower is better)\t%s\n", first == "" ? "-" : memory
    }' "$tmp/polls"
}
rows seeded >"$tmp/vscaler"
rows vpa >"$tmp/peer"
rows fresh | sed 's/\thistory: /\thistory, a workload without history in Prometheus: /' >"$tmp/fresh"
table_rows "$tmp/vscaler" "$tmp/peer" >&3
table_rows "$tmp/fresh" /dev/null >&3
[ -s "$tmp/polls" ] || { echo "history: no recommendation at all in $observe s"; exit 1; }
