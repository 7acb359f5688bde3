#!/usr/bin/env bash
# plane: full
# Issue 30, recommended values in place: a Deployment of 3 running pods (100m, usage 300m) gets a
# scaler in InPlace with no fixed values; its pods are resized to the recommendation; then the
# usage steps up to 700m and, by VPA's updater rules (a request out of the bounds, or over 10 %
# from the target once the pod has lived --in-recommendation-bounds-eviction-lifetime-threshold,
# 10s here), the same 3 pods (same UIDs, restartCount 0) come to carry the higher target; the
# Deployment's generation and ReplicaSets never move. Time constants are compressed as in
# recommender_test.sh (a minute stands for a day).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/usage_lib.sh"

k apply -f "$ROOT/manifests/crd/verticalscalercheckpoints.yaml" >/dev/null
start_operator_with_webhooks --resync-period 1h --recommender-interval 5s --checkpoint-interval 1m \
  --cpu-histogram-decay-half-life 1m --memory-histogram-decay-half-life 1m \
  --memory-aggregation-interval 30s --min-update-interval 5s \
  --in-recommendation-bounds-eviction-lifetime-threshold 10s
ns=$(unique_namespace inplace-rec)
trap 'usage_clear "$ns" || true; stop_operator' EXIT

# pods: "uid cpu(spec) cpu(status) restarts" per running pod of web.
pods() {
  k -n "$ns" get pods -l app=web -o \
    jsonpath='{range .items[*]}{.metadata.deletionTimestamp}{"|"}{.metadata.uid}{" "}{.spec.containers[0].resources.requests.cpu}{" "}{.status.containerStatuses[0].resources.requests.cpu}{" "}{.status.containerStatuses[0].restartCount}{"\n"}{end}' |
    sed -n 's/^|//p' | sort
}
uids() { pods | awk '{print $1}'; }
millis() { awk '{ q = $0; if (q ~ /m$/) { sub(/m$/, "", q); print q } else print q * 1000 }'; }
target() { jp "$ns" vsc/web '{.status.recommendation.containerRecommendations[0].target.cpu}' | millis; }
# carried LOW: every pod (3) carries in spec and status the same request, at least LOW millicores,
# within 10 % of the target, never restarted.
carried() {
  local t
  t=$(target)
  [ -n "$t" ] && [ "$(pods | wc -l)" = 3 ] &&
    [ -z "$(pods | awk -v low="$1" -v t="$t" '{ c = $2; sub(/m$/, "", c); if ($2 !~ /m$/) c = c * 1000
      if (!($2 == $3 && c >= low && c >= 0.9 * t && c <= 1.1 * t && $4 == 0)) print }')" ]
}

usage_set "$ns" web app 300m 64Mi
make_deployment "$ns" web '[{"name":"app","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}]'
k -n "$ns" scale deployment/web --replicas=3 >/dev/null
running() { [ "$(k -n "$ns" get pods -l app=web --field-selector=status.phase=Running -o name | wc -l)" -eq 3 ]; }
eventually 60 running
before=$(uids)
generation=$(jp "$ns" deployment/web '{.metadata.generation}')
replicasets=$(k -n "$ns" get rs -l app=web -o name | sort | tr '\n' ' ')

echo "--- the recommendation (usage 300m) resizes the 100m pods in place"
k -n "$ns" apply -f - >/dev/null <<'JSON'
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"web"},
 "spec":{"deploymentName":"web","updateMode":"InPlace","containers":[{"name":"app","controlledResources":["cpu"]}]}}
JSON
eventually 90 carried 250
echo "ok: the 3 pods carry $(pods | awk '{print $2}' | sort -u) (target $(target)m)"

echo "--- usage steps up to 700m: the same pods come to carry the higher target"
usage_set "$ns" web app 700m 64Mi
eventually 120 carried 560
echo "ok: the 3 pods carry $(pods | awk '{print $2}' | sort -u) (target $(target)m)"
expect_eq "pod UIDs (nothing replaced)" "$(uids)" "$before"
expect_eq "Deployment generation" "$(jp "$ns" deployment/web '{.metadata.generation}')" "$generation"
expect_eq "ReplicaSets" "$(k -n "$ns" get rs -l app=web -o name | sort | tr '\n' ' ')" "$replicasets"
echo "PASS"
