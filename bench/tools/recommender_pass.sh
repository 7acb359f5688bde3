#!/usr/bin/env bash
# Measures one recommender pass over N scalers (default 100) on the local full plane: N
# Deployments of one pod each with simulated usage, N updateMode "Off" scalers, vscaler with
# --recommender-interval 10s; once every scaler is Recommended, prints the wall time and the API
# requests of the last passes (from the operator's "recommender pass" log lines), and the
# process's resident memory. Needs a running full cluster (test/cluster/up.sh) and the env of
# test/run.sh (KUBECONFIG, KUBECTL, VSCALER_BIN).
#   bench/tools/recommender_pass.sh [N]
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../test/e2e/lib.sh"
n=${1:-100}
ns=$(unique_namespace recommender-bench)
cleanup() {
  stop_operator
  k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
}
install_crd
k apply -f "$ROOT/manifests/crd/verticalscalercheckpoints.yaml" >/dev/null
python3 - "$n" <<'PY' | k -n "$ns" apply -f - >/dev/null
import json, sys
n = int(sys.argv[1])
items = []
for i in range(n):
    name = f"w{i}"
    items.append({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                           "template": {"metadata": {"labels": {"app": name},
                                                     "annotations": {"kwok.x-k8s.io/usage-cpu": "300m",
                                                                     "kwok.x-k8s.io/usage-memory": "400Mi"}},
                                        "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}}}})
    items.append({"apiVersion": "scaling.vscaler.dev/v1beta1", "kind": "VerticalScaler",
                  "metadata": {"name": name}, "spec": {"deploymentName": name, "updateMode": "Off"}})
print(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
PY
running() { [ "$(k -n "$ns" get pods --field-selector=status.phase=Running --no-headers 2>/dev/null | wc -l)" -ge "$n" ]; }
eventually 300 running
echo "$n pods running" >&2
start_operator --recommender-interval 10s --checkpoint-interval 1h --namespace "$ns"
trap cleanup EXIT  # after start_operator, which sets its own
recommended() {
  [ "$(k -n "$ns" get vsc -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="RecommendationProvided")].reason}{"\n"}{end}' | grep -c '^Recommended$')" -ge "$n" ]
}
eventually 300 recommended
echo "every scaler Recommended" >&2
passes=$(grep -c '"msg":"recommender pass"' "$OPERATOR_LOG")
more() { [ "$(grep -c '"msg":"recommender pass"' "$OPERATOR_LOG")" -ge $((passes + 2)) ]; }
eventually 60 more
echo "last passes over $n scalers (published: status writes; the bounds of a young history move every pass):"
grep '"msg":"recommender pass"' "$OPERATOR_LOG" | tail -n 3
echo "resident memory: $(awk '/VmRSS/ {print $2, $3}' "/proc/$OPERATOR_PID/status")"
