#!/usr/bin/env bash
# The peer of bench/tools/recommender_pass.sh: VerticalPodAutoscaler's recommender (v1.8.1, its
# default client rate limits) over the Deployments of namespace NS, one updateMode "Off"
# VerticalPodAutoscaler each, --recommender-interval INTERVAL. Once every VPA has a
# recommendation it measures two intervals, or two main loops where a loop outlasts the interval
# (10,000 VPAs), and prints "key<TAB>value" lines: wall_s (its mean main-loop time then,
# vpa_recommender_execution_latency_seconds{step="total"}), requests (API requests per interval
# the API server counted while it ran, less the same count over an interval before it started:
# the plane's own traffic), cpu_s (CPU seconds per interval), rss_kib.
# The VPAs are deleted at exit. Env of test/run.sh (KUBECONFIG, KUBECTL); the CRDs are applied.
#   bench/peer-vpa/recommender_pass.sh NS [INTERVAL]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
. test/e2e/lib.sh
. test/cluster/versions.sh
ns=$1
interval=${2:-30s}
seconds=${interval%s}
vpa_deploy=$(go env GOMODCACHE)/k8s.io/autoscaler/vertical-pod-autoscaler@$VPA_VERSION/deploy
[ -f "$vpa_deploy/vpa-v1-crd-gen.yaml" ] ||
  (cd test/cluster/vpa && go mod download k8s.io/autoscaler/vertical-pod-autoscaler) >&2
k apply -f "$vpa_deploy/vpa-v1-crd-gen.yaml" >/dev/null
k wait --for condition=established --timeout=60s crd/verticalpodautoscalers.autoscaling.k8s.io >/dev/null
tmp=$(mktemp -d)
pid=
cleanup() {
  [ -z "$pid" ] || { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; }
  k -n "$ns" delete vpa --all --wait=false >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
names=$(k -n "$ns" get deployments -o jsonpath='{.items[*].metadata.name}')
python3 - $names <<'PY' | k -n "$ns" apply -f - >/dev/null
import json, sys
items = [{"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
          "metadata": {"name": n},
          "spec": {"targetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": n},
                   "updatePolicy": {"updateMode": "Off"}}} for n in sys.argv[1:]]
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
PY
n=$(wc -w <<<"$names")
api_requests() { k get --raw /metrics | awk '/^apiserver_request_total\{/ {sum += $NF} END {printf "%d", sum}'; }
r0=$(api_requests)
sleep "$seconds"
background=$(($(api_requests) - r0))
port=$(free_port)
"$VPA_BIN_DIR/vpa-recommender" --kubeconfig "$KUBECONFIG" --recommender-interval "$interval" \
  --address "127.0.0.1:$port" >"$tmp/log" 2>&1 &
pid=$!
# Rests 0.2 s per 100 VPAs after a miss: a list of 10,000 every 0.2 s would load the API server.
recommended() {
  [ "$(k -n "$ns" get vpa -o jsonpath='{range .items[*]}{.status.recommendation.containerRecommendations[0].target.cpu}{"\n"}{end}' | grep -c .)" -ge "$n" ] ||
    { sleep "$(awk -v n="$n" 'BEGIN {print n / 500}')"; false; }
}
eventually 3600 recommended
echo "every VPA has a recommendation" >&2
loop_metric() { # sum and count of the main loop's time
  curl -fsS "http://127.0.0.1:$port/metrics" |
    awk 'index($1, "execution_latency_seconds_sum{step=\"total\"}") {s = $NF}
      index($1, "execution_latency_seconds_count{step=\"total\"}") {c = $NF} END {print s + 0, c + 0}'
}
cpu_ticks() { awk '{sub(/^.*\) /, ""); print $12 + $13}' "/proc/$pid/stat"; }
read -r s0 c0 <<<"$(loop_metric)"
ticks0=$(cpu_ticks)
r0=$(api_requests)
start=$SECONDS
sleep $((2 * seconds))
read -r s1 c1 <<<"$(loop_metric)"
# Two whole loops at least, however long they take (measured from the first one ending).
until [ "$((c1 - c0))" -ge 2 ] || [ $((SECONDS - start)) -gt 3600 ]; do
  sleep 1
  read -r s1 c1 <<<"$(loop_metric)"
done
ticks1=$(cpu_ticks)
r1=$(api_requests)
elapsed=$((SECONDS - start))
hz=$(getconf CLK_TCK)
awk -v s="$(awk -v a="$s0" -v b="$s1" 'BEGIN {print b - a}')" -v c="$((c1 - c0))" \
  'BEGIN {printf "wall_s\t%s\n", (c > 0 ? s / c : 0)}'
# Per interval: the window's counts scaled to one interval.
awk -v r="$((r1 - r0))" -v e="$elapsed" -v i="$seconds" -v b="$background" \
  'BEGIN {printf "requests\t%d\n", r * i / e - b}'
awk -v t="$((ticks1 - ticks0))" -v hz="$hz" -v e="$elapsed" -v i="$seconds" \
  'BEGIN {printf "cpu_s\t%s\n", t / hz * i / e}'
printf 'rss_kib\t%s\n' "$(awk '/VmRSS/ {print $2}' "/proc/$pid/status")"
