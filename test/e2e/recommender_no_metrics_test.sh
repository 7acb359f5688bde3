#!/usr/bin/env bash
# plane: full
# Issue 14: the metrics API going away and coming back. With metrics-server stopped the
# APIService answers 503: RecommendationProvided turns False, reason NoMetrics, and the last
# recommendation stays in status; once metrics-server serves again, Recommended again. On
# SIGTERM the leader writes its checkpoints before it exits.
# metrics-server is restarted before the namespace is deleted (an unavailable aggregated API
# blocks namespace deletion), also when the test fails.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/usage_lib.sh"
: "${VSCALER_CLUSTER_DIR:?run through test/run.sh (VSCALER_CLUSTER_DIR unset)}"
metrics_server() { VSCALER_CLUSTER_DIR=$VSCALER_CLUSTER_DIR "$ROOT/test/cluster/metrics-server.sh" "$1" >/dev/null; }

install_crd
k apply -f "$ROOT/manifests/crd/verticalscalercheckpoints.yaml" >/dev/null
k wait --for condition=established --timeout=60s crd/verticalscalercheckpoints.scaling.vscaler.dev >/dev/null
ns=$(unique_namespace recommender-nometrics)
cleanup() {
  stop_operator
  metrics_server start || echo "metrics-server did not come back" >&2
  usage_clear "$ns" || true
  k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
}

usage_set "$ns" web app 200m 300Mi
k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},
 "spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},
  "template":{"metadata":{"labels":{"app":"web"}},
   "spec":{"containers":[{"name":"app","image":"registry.k8s.io/pause:3.10"}]}}}}
JSON
k -n "$ns" rollout status deployment/web --timeout=120s >/dev/null || fail "web did not roll out"
k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"web"},
 "spec":{"deploymentName":"web","updateMode":"Off"}}
JSON
start_operator --recommender-interval 3s --checkpoint-interval 1h --namespace "$ns"
trap cleanup EXIT
cond_is() { [ "$(condition "$ns" web RecommendationProvided)" = "$1" ]; }
target() { jp "$ns" vsc/web '{.status.recommendation.containerRecommendations[0].target}'; }

eventually 150 cond_is Recommended
before=$(target)
echo "ok: Recommended, target $before"

metrics_server stop
eventually 30 cond_is NoMetrics
expect_eq "status while the metrics API is down" "$(condition "$ns" web RecommendationProvided status)" "False"
echo "message: $(condition "$ns" web RecommendationProvided message)"
expect_eq "the last recommendation is kept" "$(target)" "$before"

metrics_server start
eventually 90 cond_is Recommended
expect_eq "status after recovery" "$(condition "$ns" web RecommendationProvided status)" "True"
echo "ok: Recommended again, target $(target)"

# --checkpoint-interval 1h: no periodic checkpoint yet; SIGTERM writes one before the process
# exits (the next leader resumes from it).
k -n "$ns" get verticalscalercheckpoint web >/dev/null 2>&1 && fail "a checkpoint before the first interval"
stop_operator
samples=$(k -n "$ns" get verticalscalercheckpoint web -o jsonpath='{.spec.containers[0].totalSamplesCount}')
[ "${samples:-0}" -gt 0 ] || fail "no checkpoint written on SIGTERM (samples: '${samples:-}')"
echo "ok: SIGTERM wrote the checkpoint ($samples samples)"
echo "PASS"
