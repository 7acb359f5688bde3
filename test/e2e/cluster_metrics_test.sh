#!/usr/bin/env bash
# plane: full
# The full local cluster reports simulated usage through metrics.k8s.io: a pod annotated
# kwok.x-k8s.io/usage-cpu: 300m / usage-memory: 400Mi shows that in the raw PodMetrics and in
# `kubectl top pods` within 90 s, and a changed annotation changes what is reported; the usage
# helper (usage_lib.sh) gives the containers of one pod different usage and changes it without a
# rollout, and the usage survives a rollout.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/usage_lib.sh"

ns=$(unique_namespace cluster-metrics)
# The plane is shared with the other full-plane suites: leave no usage rows and no pods behind.
trap 'usage_clear "$ns" || true; k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true' EXIT

# deployment NAME ANNOTATIONS_JSON CONTAINER...: one replica; its pods labelled app=NAME.
deployment() {
  local name=$1 annotations=$2 containers="" c
  shift 2
  for c in "$@"; do containers+="${containers:+,}{\"name\":\"$c\",\"image\":\"registry.k8s.io/pause:3.10\"}"; done
  k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"$name"},
 "spec":{"replicas":1,"selector":{"matchLabels":{"app":"$name"}},
  "template":{"metadata":{"labels":{"app":"$name"},"annotations":$annotations},
   "spec":{"containers":[$containers]}}}}
JSON
  k -n "$ns" rollout status "deployment/$name" --timeout=120s >/dev/null || fail "$name did not roll out"
}
pod_of() { k -n "$ns" get pods -l "app=$1" --field-selector=status.phase=Running -o jsonpath='{.items[0].metadata.name}'; }

# reports POD CONTAINER CPU_M MEM_MI: true when the metrics API reports CONTAINER of POD at
# CPU_M millicores (within 5 %: a rate over two scrapes) and MEM_MI Mi (exactly: a gauge).
reports() {
  local line
  line=$(pod_metrics "$ns" "$1" | awk -v c="$2" '$1 == c')
  [ -n "$line" ] || return 1
  last_seen="$line"
  awk -v cpu="$3" -v mem="$4" '{ exit !($2 >= cpu * 0.95 && $2 <= cpu * 1.05 && $3 == mem) }' <<<"$line"
}
# within SECONDS POD CONTAINER CPU_M MEM_MI: reports, within SECONDS; says how long it took.
within() {
  local seconds=$1 start=$SECONDS
  shift
  last_seen=""
  until reports "$@"; do
    [ $((SECONDS - start)) -lt "$seconds" ] || fail "$1/$2 not reported at $3m/$4Mi within ${seconds}s (last: '${last_seen:-nothing}')"
    sleep 1
  done
  echo "ok: $1 $2 reported at ${3}m ${4}Mi after $((SECONDS - start))s"
}

# 1. The stock annotations, every container of the pod.
deployment annotated '{"kwok.x-k8s.io/usage-cpu":"300m","kwok.x-k8s.io/usage-memory":"400Mi"}' app
pod=$(pod_of annotated)
within 90 "$pod" app 300 400
top=$(k -n "$ns" top pod "$pod" --no-headers)
awk '{ c = $2; sub("m$", "", c); exit !(c >= 285 && c <= 315 && $3 == "400Mi") }' <<<"$top" ||
  fail "kubectl top pod says '$top', want about 300m and 400Mi"
echo "ok: kubectl top pod: $top"

# A changed annotation on the pod (not the template: no rollout) changes what is reported.
k -n "$ns" annotate pod "$pod" --overwrite kwok.x-k8s.io/usage-cpu=500m kwok.x-k8s.io/usage-memory=256Mi >/dev/null
within 90 "$pod" app 500 256
expect_eq "ReplicaSets of annotated" "$(k -n "$ns" get rs -l app=annotated -o name | wc -l)" "1"

# 2. The helper: two containers of one pod, each its own usage.
deployment multi '{}' app sidecar
usage_set "$ns" multi app 200m 300Mi
usage_set "$ns" multi '*' 50m 64Mi
pod=$(pod_of multi)
within 90 "$pod" app 200 300
within 30 "$pod" sidecar 50 64

# Changed over time without touching the template: only app's CPU moves.
usage_set "$ns" multi app 600m -
within 90 "$pod" app 600 300
within 30 "$pod" sidecar 50 64
expect_eq "multi's generation after usage changes" "$(jp "$ns" deployment/multi '{.metadata.generation}')" "1"
expect_eq "multi's pod after usage changes" "$(pod_of multi)" "$pod"

# The usage belongs to the app's pods, so a rollout keeps it.
k -n "$ns" set env deployment/multi VERSION=2 >/dev/null
k -n "$ns" rollout status deployment/multi --timeout=120s >/dev/null || fail "multi's second rollout did not complete"
one_pod() { [ "$(k -n "$ns" get pods -l app=multi -o name | wc -l)" = 1 ]; }
eventually 90 one_pod
new_pod=$(pod_of multi)
[ "$new_pod" != "$pod" ] || fail "the rollout kept pod $pod"
within 90 "$new_pod" app 600 300
within 30 "$new_pod" sidecar 50 64

# Bad input is refused with a message naming it.
if out=$(usage_set "$ns" multi app 3OOm - 2>&1); then fail "usage_set accepted cpu 3OOm"; fi
grep -q "cpu '3OOm' is not a quantity" <<<"$out" || fail "usage_set's error does not name the bad cpu: $out"
echo "ok: usage_set refuses a bad quantity: $out"

# usage_clear gives the pods back their annotations' (here: none, so kwok's 1m / 1Mi) usage.
usage_clear "$ns" multi
within 90 "$new_pod" app 1 1
echo "PASS"
