#!/usr/bin/env bash
# plane: full
# Applying recommendations (DESIGN.md "When to apply a recommendation"), with the recommendation
# written into status by the test and the recommender off (--recommender-interval 0), vscaler
# running as its ServiceAccount's user behind its url-based webhooks:
#   Auto: one template patch to the target (uncappedTarget ignored, limits in proportion,
#     RequestsOnly leaves limits, mode Off and fixed entries as they are), a new ReplicaSet, no
#     second patch while in bounds; out of bounds again within --min-update-interval: Deferred
#     with the time, then patched once it lifts; a kubectl-apply reset of resources is a no-op;
#   Initial: a new recommendation never patches; a template change comes out of admission with
#     the target (one rollout); a resources-only reset gets the old values back;
#   an HPA on cpu of the same Deployment: a warning when the scaler is applied;
#   a namespace LimitRange's Container max caps the proportional limit (and the request with it);
#   a `type: Pod` max scales the pod's recommended containers down together and
#     maxLimitRequestRatio holds a RequestsOnly request up: LimitRanger admits the pods.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

install_crd
WORK_DIR=$(mktemp -d /tmp/vscaler-e2e.XXXXXX)
CERT_DIR=$WORK_DIR/certs
WEBHOOK_PORT=$(free_port)
"$ROOT/certs/install.sh" --local --port "$WEBHOOK_PORT" --cert-dir "$CERT_DIR" >/dev/null
# A namespace with a LimitRange, there before vscaler starts: LimitRanges are listed at start,
# then every 30 s (list only, no watch).
capped_ns=$(unique_namespace apply-rec-capped)
k -n "$capped_ns" apply -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"caps"},
 "spec":{"limits":[{"type":"Container","max":{"cpu":"1"}}]}}
JSON
podmax_ns=$(unique_namespace apply-rec-podmax)
k -n "$podmax_ns" apply -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"pod-caps"},
 "spec":{"limits":[{"type":"Pod","max":{"cpu":"1"}},
                   {"type":"Container","maxLimitRequestRatio":{"cpu":"4"}}]}}
JSON
ns=$(unique_namespace apply-rec)
main_ns=$ns
# An HPA on cpu of Deployment "scaled", there before the operator starts: its first list of HPAs
# has it (they are listed every 30 s after that).
k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"scaled"},
 "spec":{"replicas":1,"selector":{"matchLabels":{"app":"scaled"}},
  "template":{"metadata":{"labels":{"app":"scaled"}},"spec":{"containers":[
   {"name":"app","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"100m"}}}]}}}}
JSON
k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"scaled-cpu"},
 "spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"scaled"},
  "minReplicas":1,"maxReplicas":1,
  "metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":80}}}]}}
JSON
start_operator --resync-period 1h --recommender-interval 0 --min-update-interval 20s
cleanup() {
  "$ROOT/certs/install.sh" --uninstall --local >/dev/null 2>&1 || true
  stop_operator
  # Its scalers would keep applying recommendations under the next tests' operators.
  k delete namespace "$main_ns" "$capped_ns" "$podmax_ns" --timeout=90s >/dev/null 2>&1 || true
}
trap cleanup EXIT
# applied NAME: how many recommendations vscaler applied with trigger NAME (since it started).
applied() { metric "vscaler_recommendation_applied_total{trigger=\"$1\"}"; }
gen() { jp "$ns" "deploy/$1" '{.metadata.generation}'; }
req() { jp "$ns" "deploy/$1" "{.spec.template.spec.containers[?(@.name==\"$2\")].resources.requests.$3}"; }
lim() { jp "$ns" "deploy/$1" "{.spec.template.spec.containers[?(@.name==\"$2\")].resources.limits.$3}"; }
is() { [ "$("${@:2}")" = "$1" ]; }
# recommend SCALER JSON_LIST: writes status.recommendation.containerRecommendations.
recommend() {
  k -n "$ns" patch vsc "$1" --subresource=status --type=merge \
    -p "{\"status\":{\"recommendation\":{\"containerRecommendations\":$2}}}" >/dev/null
}
# rec NAME TARGET_CPU LOWER UPPER [UNCAPPED]: one containerRecommendations entry (cpu only).
rec() {
  echo "{\"containerName\":\"$1\",\"target\":{\"cpu\":\"$2\"},\"lowerBound\":{\"cpu\":\"$3\"},\"upperBound\":{\"cpu\":\"$4\"},\"uncappedTarget\":{\"cpu\":\"${5:-$2}\"}}"
}
# web: the Deployment as a chart renders it (kubectl apply again = a Helm-style reset).
web_manifest() {
  cat <<JSON
{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},
 "spec":{"replicas":1,"selector":{"matchLabels":{"app":"web"}},
  "template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[
   {"name":"app","image":"registry.k8s.io/pause:3.10",
    "resources":{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"cpu":"200m"}}},
   {"name":"worker","image":"registry.k8s.io/pause:3.10",
    "resources":{"requests":{"cpu":"100m"},"limits":{"cpu":"1"}}},
   {"name":"fixed","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"50m"}}},
   {"name":"proxy","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"10m"}}}]}}}}
JSON
}

echo "--- an HPA on cpu of the same Deployment: the scaler's condition and a Warning Event say so"
k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"scaled"},
 "spec":{"deploymentName":"scaled","updateMode":"Auto","containers":[{"name":"app"}]}}
JSON
hpa_condition() {
  jp "$ns" vsc/scaled '{.status.conditions[?(@.type=="HorizontalPodAutoscalerConflict")].message}'
}
hpa_reported() { hpa_condition | grep -q "HorizontalPodAutoscaler scaled-cpu scales Deployment scaled on cpu"; }
eventually 20 hpa_reported
hpa_event() {
  k -n "$ns" get events --field-selector involvedObject.name=scaled,reason=ScalesOnCpuOrMemory \
    -o jsonpath='{.items[*].type}' | grep -q Warning
}
eventually 10 hpa_event
echo "ok: HorizontalPodAutoscalerConflict: $(hpa_condition); a Warning Event"

echo "--- Auto: a recommendation out of bounds is applied once, as the policy says"
web_manifest | k -n "$ns" apply -f - >/dev/null
make_scaler "$ns" web web Auto '[{"name":"app","minAllowed":{"cpu":"50m"},"maxAllowed":{"cpu":"2"}},
  {"name":"worker","controlledValues":"RequestsOnly"},{"name":"fixed","requests":{"cpu":"150m"}},
  {"name":"proxy","mode":"Off"}]'
eventually 30 is 150m req web fixed cpu
k -n "$ns" rollout status deploy/web --timeout=120s >/dev/null || fail "first rollout"
g0=$(gen web)
bounds0=$(applied bounds)
# uncappedTarget (above maxAllowed) is what the recommender computed; the target is what applies.
recommend web "[$(rec app 300m 250m 500m 3), $(rec worker 400m 300m 600m)]"
eventually 30 is 300m req web app cpu
expect_eq "app limit, in proportion (200m x 300m/100m)" "$(lim web app cpu)" "600m"
expect_eq "app memory request (not recommended: no memory target)" "$(req web app memory)" "64Mi"
expect_eq "worker request (RequestsOnly)" "$(req web worker cpu)" "400m"
expect_eq "worker limit untouched (RequestsOnly)" "$(lim web worker cpu)" "1"
expect_eq "fixed container keeps its fixed value" "$(req web fixed cpu)" "150m"
expect_eq "proxy (mode Off) untouched" "$(req web proxy cpu)" "10m"
expect_eq "one template patch" "$(gen web)" "$((g0 + 1))"
eventually 30 is Applied condition "$ns" web Scaled
[ -n "$(jp "$ns" vsc/web '{.status.lastRecommendationUpdateTime}')" ] || fail "no lastRecommendationUpdateTime"
expect_eq "RecommendationProvided with the recommender off" "$(condition "$ns" web RecommendationProvided)" "RecommenderDisabled"
expect_eq "applied_total{trigger=bounds}" "$(applied bounds)" "$((bounds0 + 1))"
k -n "$ns" rollout status deploy/web --timeout=120s >/dev/null || fail "the recommendation's rollout"
expect_eq "ReplicaSets (creation, fixed value, recommendation)" "$(k -n "$ns" get rs -l app=web -o name | wc -l)" "3"
# The recommendation moves within the bounds: no patch.
recommend web "[$(rec app 320m 250m 500m 3), $(rec worker 400m 300m 600m)]"
sleep 2
expect_eq "no patch while in bounds" "$(gen web)" "$((g0 + 1))"
expect_eq "Scaled while in bounds" "$(condition "$ns" web Scaled)" "Applied"

echo "--- Auto: a kubectl-apply reset of the resources is a no-op write"
web_manifest | k -n "$ns" apply -f - >/dev/null 2>&1
expect_eq "app request after the reset" "$(req web app cpu)" "300m"
expect_eq "fixed after the reset" "$(req web fixed cpu)" "150m"
expect_eq "generation after the reset" "$(gen web)" "$((g0 + 1))"

echo "--- Auto: out of bounds again within --min-update-interval: Deferred, then applied once"
recommend web "[$(rec app 800m 700m 1) , $(rec worker 400m 300m 600m)]"
eventually 20 is Deferred condition "$ns" web Scaled
msg=$(condition "$ns" web Scaled message)
grep -q "applies at 20" <<<"$msg" || fail "the Deferred message has no time: $msg"
echo "ok: Deferred: $msg"
expect_eq "Ready while Deferred" "$(condition "$ns" web Ready status)" "True"
expect_eq "no patch while deferred" "$(gen web)" "$((g0 + 1))"
eventually 40 is 800m req web app cpu
expect_eq "one more patch when the deferral lifted" "$(gen web)" "$((g0 + 2))"
expect_eq "applied_total{trigger=bounds}" "$(applied bounds)" "$((bounds0 + 2))"
eventually 10 is Applied condition "$ns" web Scaled
# The rate-limit clock restarted at that patch: the next deferral counts from it.
recommend web "[$(rec app 300m 200m 400m), $(rec worker 400m 300m 600m)]"
eventually 20 is Deferred condition "$ns" web Scaled
msg2=$(condition "$ns" web Scaled message)
# "... applies at <RFC 3339 time>, ...": the second time is later than the first.
at() { sed -n 's/.*applies at \([0-9TZ:-]*\).*/\1/p' <<<"$1"; }
[ -n "$(at "$msg2")" ] && [[ "$(at "$msg2")" > "$(at "$msg")" ]] ||
  fail "the second deferral does not count from the patch that lifted the first: '$msg' then '$msg2'"
echo "ok: Deferred again, until $(at "$msg2") (the first until $(at "$msg"))"
sleep 2
expect_eq "not patched again within the interval" "$(gen web)" "$((g0 + 2))"

echo "--- Initial: a new recommendation never patches; a template change carries it"
make_deployment "$ns" init '[{"name":"app","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"100m"}}}]'
make_scaler "$ns" init init Initial '[{"name":"app"}]'
eventually 30 is AwaitingRecommendation condition "$ns" init Scaled
k -n "$ns" rollout status deploy/init --timeout=120s >/dev/null || fail "init rollout"
gi=$(gen init)
recommend init "[$(rec app 200m 150m 300m)]"
eventually 20 is Deferred condition "$ns" init Scaled
grep -q "next template change" <<<"$(condition "$ns" init Scaled message)" || fail "Initial's Deferred message"
sleep 2
expect_eq "Initial: no patch of its own" "$(gen init)" "$gi"
expect_eq "Initial: request unchanged" "$(req init app cpu)" "100m"
admissions=$(applied admission)
k -n "$ns" set env deploy/init VERSION=2 >/dev/null
expect_eq "Initial: the template change carries the target" "$(req init app cpu)" "200m"
expect_eq "Initial: one rollout" "$(gen init)" "$((gi + 1))"
expect_eq "applied_total{trigger=admission}" "$(applied admission)" "$((admissions + 1))"
k -n "$ns" set resources deploy/init -c app --requests=cpu=50m >/dev/null 2>&1
expect_eq "Initial: a resources-only write gets the old value back" "$(req init app cpu)" "200m"
expect_eq "Initial: that write is a no-op" "$(gen init)" "$((gi + 1))"
eventually 20 is Applied condition "$ns" init Scaled

echo "--- Auto: a namespace LimitRange's max caps the proportional limit, and so the request"
ns=$capped_ns # the helpers above read $ns
make_deployment "$ns" capped '[{"name":"app","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"100m"},"limits":{"cpu":"500m"}}}]'
make_scaler "$ns" capped capped Auto '[{"name":"app"}]'
eventually 30 is AwaitingRecommendation condition "$ns" capped Scaled
k -n "$ns" rollout status deploy/capped --timeout=120s >/dev/null || fail "capped rollout"
# 100m:500m is 1:5: the target 300m would make the limit 1500m, which LimitRanger refuses.
recommend capped "[$(rec app 300m 250m 350m)]"
eventually 30 is 200m req capped app cpu
expect_eq "limit capped at the LimitRange max" "$(lim capped app cpu)" "1"
k -n "$ns" rollout status deploy/capped --timeout=120s >/dev/null ||
  fail "the capped values' pods were not admitted: $(k -n "$ns" get events --field-selector reason=FailedCreate -o name | head -3)"
echo "ok: the LimitRange caps the applied values and their pods are admitted"

echo "--- Auto: a Pod max and maxLimitRequestRatio; the pods are admitted"
ns=$podmax_ns
make_deployment "$ns" pm '[
 {"name":"app","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"100m"},"limits":{"cpu":"200m"}}},
 {"name":"ro","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"200m"},"limits":{"cpu":"400m"}}},
 {"name":"side","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"300m"},"limits":{"cpu":"300m"}}}]'
make_scaler "$ns" pm pm Auto '[{"name":"app"},{"name":"ro","controlledValues":"RequestsOnly"}]'
eventually 30 is AwaitingRecommendation condition "$ns" pm Scaled
k -n "$ns" rollout status deploy/pm --timeout=120s >/dev/null || fail "pm rollout"
# app alone: 400m, limit 800m (1:2). ro: RequestsOnly under limit 400m and ratio 4 -> at least
# 100m. The pod's limits would sum to 800m + 400m + 300m > 1 core: app's (the one scalable
# limit) x 300m / 800m = 300m, and its request with it (a request above its limit is invalid).
recommend pm "[$(rec app 400m 350m 450m),$(rec ro 50m 40m 60m)]"
eventually 30 is 300m lim pm app cpu
expect_eq "app request held at its scaled limit" "$(req pm app cpu)" "300m"
expect_eq "ro request held at limit / maxLimitRequestRatio" "$(req pm ro cpu)" "100m"
expect_eq "ro limit untouched (RequestsOnly)" "$(lim pm ro cpu)" "400m"
expect_eq "side untouched (not in the scaler)" "$(req pm side cpu)" "300m"
k -n "$ns" rollout status deploy/pm --timeout=120s >/dev/null ||
  fail "the Pod-max values' pods were not admitted: $(k -n "$ns" get events --field-selector reason=FailedCreate -o jsonpath='{.items[*].message}' | head -c 600)"
echo "ok: Pod max and maxLimitRequestRatio respected; the pods are admitted"
echo "ok: apply_recommendation"
