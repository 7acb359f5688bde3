#!/usr/bin/env bash
# Measures recommender passes over N scalers (default 100) on the local full plane: N Deployments
# of REPLICAS pods each (default 1) with simulated usage, N updateMode "Off" scalers, vscaler with
# --recommender-interval INTERVAL (default 10s). Once every scaler is Recommended it waits for two
# more passes and prints, on stderr, the last passes' "recommender pass" log lines and, on stdout,
# "key<TAB>value" lines: wall_s, requests and writes_waiting (status writes the pass left waiting
# for the writers at its end; the pass does not wait for them) of the last pass, cpu_s (the operator's CPU seconds between the last two passes:
# one pass plus an idle interval), rss_kib, rss_peak_kib (VmHWM), pods, namespace (deleted at
# exit unless RECOMMENDER_PASS_KEEP=1, for a peer to measure on the same pods). Needs a running
# full cluster (test/cluster/up.sh) with room for N*REPLICAS pods, and the env of test/run.sh
# (KUBECONFIG, KUBECTL, VSCALER_BIN). RECOMMENDER_PASS_NAMESPACE=NS measures on the workloads an
# earlier run kept there (RECOMMENDER_PASS_KEEP=1) instead of creating them: at 10,000 that is
# minutes saved, and a restart from the checkpoints that run wrote. RECOMMENDER_PASS_SETTLE=K lets
# K more passes go by before the two measured (default 0): a young history's upperBound moves by
# about 1/n of itself in its n-th pass (confidence grows with the history's length), more than the
# 5 % write tolerance for its first ~20 passes, so every status is written until then and then
# about one pass in n/20.
#   bench/tools/recommender_pass.sh [N] [REPLICAS] [INTERVAL]
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../test/e2e/lib.sh"
n=${1:-100}
replicas=${2:-1}
interval=${3:-10s}
ns=${RECOMMENDER_PASS_NAMESPACE:-}
[ -n "$ns" ] || ns=$(unique_namespace recommender-bench)
cleanup() {
  stop_operator
  [ -n "${RECOMMENDER_PASS_KEEP:-}" ] || k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
}
install_crd
k apply -f "$ROOT/manifests/crd/verticalscalercheckpoints.yaml" >/dev/null
[ -n "${RECOMMENDER_PASS_NAMESPACE:-}" ] || python3 - "$n" "$replicas" <<'PY' | k -n "$ns" apply -f - >/dev/null
import json, sys
n, replicas = int(sys.argv[1]), int(sys.argv[2])
items = []
for i in range(n):
    name = f"w{i}"
    items.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                  "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                           "template": {"metadata": {"labels": {"app": name},
                                                     "annotations": {"kwok.x-k8s.io/usage-cpu": "300m",
                                                                     "kwok.x-k8s.io/usage-memory": "400Mi"}},
                                        "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}}}})
    items.append({"apiVersion": "scaling.vscaler.dev/v1beta1", "kind": "VerticalScaler",
                  "metadata": {"name": name}, "spec": {"deploymentName": name, "updateMode": "Off"}})
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
PY
pods=$((n * replicas))
# A list of N objects every 0.2 s would load the API server the pass is measured against: the
# checks below rest 0.2 s per 100 objects after each miss.
rest() { sleep "$(awk -v n="$1" 'BEGIN {print n / 500}')"; }
running() {
  [ "$(k -n "$ns" get pods --field-selector=status.phase=Running --no-headers 2>/dev/null | wc -l)" -ge "$pods" ] ||
    { rest "$pods"; false; }
}
eventually 1800 running
echo "$pods pods running" >&2
start_operator --recommender-interval "$interval" --checkpoint-interval 1h --namespace "$ns"
trap cleanup EXIT  # after start_operator, which sets its own
recommended() {
  [ "$(k -n "$ns" get vsc -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="RecommendationProvided")].reason}{"\n"}{end}' | grep -c '^Recommended$')" -ge "$n" ] ||
    { rest "$n"; false; }
}
eventually 1800 recommended
echo "every scaler Recommended" >&2
pass_lines() { grep -c '"msg":"recommender pass"' "$OPERATOR_LOG" || true; }  # 0 lines: grep fails
cpu_ticks() { awk '{print $14 + $15}' "/proc/$OPERATOR_PID/stat"; }
passes=$(pass_lines)
more() { [ "$(pass_lines)" -ge $((passes + 1)) ]; }
for ((settle = 0; settle < ${RECOMMENDER_PASS_SETTLE:-0}; settle++)); do
  eventually 1800 more
  passes=$(pass_lines)
done
eventually 1800 more
ticks0=$(cpu_ticks)
passes=$(pass_lines)
eventually 1800 more
ticks1=$(cpu_ticks)
echo "last passes over $n scalers (published: status writes; the bounds of a young history move every pass):" >&2
grep '"msg":"recommender pass"' "$OPERATOR_LOG" | tail -n $((3 + ${RECOMMENDER_PASS_SETTLE:-0})) >&2
last=$(grep '"msg":"recommender pass"' "$OPERATOR_LOG" | tail -n 1)
field() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$last" "$1"; }
printf 'wall_s\t%s\n' "$(field seconds)"
printf 'requests\t%s\n' "$(field requests)"
printf 'writes_waiting\t%s\n' "$(field writes_waiting)"
printf 'published\t%s\n' "$(field published)"
printf 'cpu_s\t%s\n' "$(awk -v t="$((ticks1 - ticks0))" -v hz="$(getconf CLK_TCK)" 'BEGIN {print t / hz}')"
printf 'rss_kib\t%s\n' "$(awk '/VmRSS/ {print $2}' "/proc/$OPERATOR_PID/status")"
printf 'rss_peak_kib\t%s\n' "$(awk '/VmHWM/ {print $2}' "/proc/$OPERATOR_PID/status")"
printf 'pods\t%s\n' "$pods"
printf 'namespace\t%s\n' "$ns"
