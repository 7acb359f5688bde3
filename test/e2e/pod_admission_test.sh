#!/usr/bin/env bash
# plane: full
# Issue 30, new pods sized at creation: with the url-based webhooks of manifests/local/ (the pod
# entry mutate-pods.vscaler.dev included) a Deployment whose scaler is in InPlaceOrRecreate or
# InPlace never rolls out for the scaler (generation and ReplicaSets unchanged, the running pods
# resized in place); a scale-up's pod is created with the values (generation 1: admitted so, not
# resized after); a StatefulSet's new pod too; a
# `kubectl rollout restart` (a write that changes the template anyway) carries the values into
# the template, so every new pod has them; Auto's pods are left as their template made them; a
# Helm-style write of a Deployment with pod-level resources succeeds in Auto mode, spec.resources
# raised in the same write; a misspelled mode is refused naming the allowed ones. kwok runs the
# pods.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

start_operator_with_webhooks --resync-period 1h --workers 2
ns=$(unique_namespace podadm)

OLD='{"requests":{"cpu":"100m","memory":"64Mi"}}'
SPEC='[{"name":"app","requests":{"cpu":"300m","memory":"128Mi"}}]'
# workload KIND NAME REPLICAS: one container "app" with $OLD.
workload() {
  local extra="\"replicas\":$3,"
  [ "$1" = StatefulSet ] && extra+="\"serviceName\":\"$2\","
  k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"apps/v1","kind":"$1","metadata":{"name":"$2"},
 "spec":{$extra"selector":{"matchLabels":{"app":"$2"}},
  "template":{"metadata":{"labels":{"app":"$2"}},
   "spec":{"terminationGracePeriodSeconds":0,
    "containers":[{"name":"app","image":"registry.k8s.io/pause:3.10","resources":$OLD}]}}}}
JSON
}
scaler() {
  k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"$1"},
 "spec":{"targetRef":{"apiVersion":"apps/v1","kind":"$2","name":"$1"},"updateMode":"$3","containers":$SPEC}}
JSON
}
# pods NAME: "pod cpu memory" per live pod of workload NAME, sorted.
pods() {
  k -n "$ns" get pods -l "app=$1" -o \
    jsonpath='{range .items[*]}{.metadata.deletionTimestamp}{"|"}{.metadata.name}{" "}{.spec.containers[0].resources.requests.cpu}{" "}{.spec.containers[0].resources.requests.memory}{"\n"}{end}' |
    sed -n 's/^|//p' | sort
}
count_pods() { [ "$(pods "$1" | wc -l)" -eq "$2" ]; }
all_pods_carry() { [ "$(pods "$1" | awk '{print $2, $3}' | sort -u)" = "$2" ]; }
template_cpu() { jp "$ns" "$1/$2" '{.spec.template.spec.containers[0].resources.requests.cpu}'; }
patched_before=$(metric 'vscaler_pod_admission_total{result="patched"}')

echo "--- a misspelled mode is refused, naming the allowed ones"
if out=$(scaler web Deployment InplaceOrRecreate 2>&1); then fail "updateMode InplaceOrRecreate was accepted"; fi
grep -q 'InPlaceOrRecreate' <<<"$out" || fail "the refusal does not name InPlaceOrRecreate: $out"
echo "ok: refused: $(head -c 200 <<<"$out")"

for mode in InPlaceOrRecreate InPlace; do
  name=$(tr 'A-Z' 'a-z' <<<"$mode")
  echo "--- $mode: Deployment $name, 2 running pods, then the scaler"
  workload Deployment "$name" 2
  eventually 60 count_pods "$name" 2
  before=$(pods "$name")
  generation=$(jp "$ns" "deployment/$name" '{.metadata.generation}')
  replicasets=$(k -n "$ns" get rs -l "app=$name" -o name | sort | tr '\n' ' ')
  scaler "$name" Deployment "$mode"
  applied() { [ "$(condition "$ns" "$name" Scaled)" = Applied ]; }
  eventually 60 applied
  echo "ok: Scaled=Applied: $(condition "$ns" "$name" Scaled message)"
  expect_eq "$mode: Deployment generation" "$(jp "$ns" "deployment/$name" '{.metadata.generation}')" "$generation"
  expect_eq "$mode: template cpu (no rollout of its own)" "$(template_cpu deployment "$name")" 100m
  expect_eq "$mode: ReplicaSets" "$(k -n "$ns" get rs -l "app=$name" -o name | sort | tr '\n' ' ')" "$replicasets"
  # The running pods were resized in place (in_place_resize_test): the same pods, new values.
  expect_eq "$mode: the running pods, resized" "$(pods "$name" | awk '{print $1}')" "$(awk '{print $1}' <<<"$before")"
  before=$(pods "$name")

  echo "--- $mode: a scale-up's pod is created with the values (generation 1: never resized)"
  k -n "$ns" scale "deployment/$name" --replicas=3 >/dev/null
  eventually 60 count_pods "$name" 3
  new=$(comm -13 <(echo "$before") <(pods "$name"))
  expect_eq "$mode: the new pod's cpu memory" "$(awk '{print $2, $3}' <<<"$new")" "300m 128Mi"
  expect_eq "$mode: the new pod's generation" \
    "$(k -n "$ns" get pod "$(awk '{print $1}' <<<"$new")" -o jsonpath='{.metadata.generation}')" 1
  # Marked by the hook (scaler, totals counted against the quota), so a re-invocation of it
  # (after a sidecar injector) counts only what the pod grew by.
  marker=$(k -n "$ns" get pod "$(awk '{print $1}' <<<"$new")" -o jsonpath='{.metadata.annotations.scaling\.vscaler\.dev/admitted}')
  expect_eq "$mode: the new pod's admitted annotation" \
    "$(python3 -c 'import json,sys; m=json.loads(sys.argv[1]); print(m["scaler"], m["requests"]["cpu"])' "$marker")" "$name 300m"
  expect_eq "$mode: the two old pods still" "$(comm -12 <(echo "$before") <(pods "$name"))" "$before"
done

echo "--- InPlace: kubectl rollout restart: the template takes the values, every new pod has them"
k -n "$ns" rollout restart deployment/inplace >/dev/null
expect_eq "template cpu after the restart's write" "$(template_cpu deployment inplace)" 300m
eventually 90 all_pods_carry inplace "300m 128Mi"
eventually 90 count_pods inplace 3
echo "ok: every pod of inplace carries 300m 128Mi"

echo "--- a StatefulSet's new pod"
workload StatefulSet db 1
scaler db StatefulSet InPlace
eventually 60 count_pods db 1
k -n "$ns" scale statefulset/db --replicas=2 >/dev/null
eventually 60 count_pods db 2
expect_eq "db-1 cpu memory" "$(pods db | awk '$1 == "db-1" {print $2, $3}')" "300m 128Mi"
expect_eq "db-1 generation (sized at creation)" "$(k -n "$ns" get pod db-1 -o jsonpath='{.metadata.generation}')" 1

echo "--- Auto: pods are what the template says (the template is patched instead)"
workload Deployment auto 1
scaler auto Deployment Auto
auto_patched() { [ "$(template_cpu deployment auto)" = 300m ]; }
eventually 30 auto_patched
eventually 90 all_pods_carry auto "300m 128Mi"
echo "ok: Auto's template and pods carry 300m 128Mi"

echo "--- pod-level resources: a Helm-style write in Auto mode succeeds, spec.resources raised in it"
# podlevel_json CPU: a Deployment whose pod-level request (200m) holds its one container's CPU.
podlevel_json() {
  cat <<JSON
{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"podlevel"},
 "spec":{"replicas":1,"selector":{"matchLabels":{"app":"podlevel"}},
  "template":{"metadata":{"labels":{"app":"podlevel"}},
   "spec":{"terminationGracePeriodSeconds":0,"resources":{"requests":{"cpu":"200m"}},
    "containers":[{"name":"app","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"$1"}}}]}}}}
JSON
}
k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"podlevel"},
 "spec":{"deploymentName":"podlevel","updateMode":"Auto","containers":[{"name":"app","requests":{"cpu":"300m"}}]}}
JSON
# Without the raise the API server would refuse this write: "must be greater than or equal to
# aggregate container requests".
podlevel_json 100m | k -n "$ns" apply -f - >/dev/null || fail "the Helm-style write of podlevel was refused"
expect_eq "podlevel: container cpu" "$(template_cpu deployment podlevel)" 300m
expect_eq "podlevel: pod-level cpu request" \
  "$(jp "$ns" deployment/podlevel '{.spec.template.spec.resources.requests.cpu}')" 300m
podlevel_json 150m | k -n "$ns" apply -f - >/dev/null || fail "the second Helm-style write was refused"
expect_eq "podlevel after a reset: container cpu" "$(template_cpu deployment podlevel)" 300m
eventually 60 all_pods_carry podlevel "300m "

patched=$(metric 'vscaler_pod_admission_total{result="patched"}')
rose=$(awk -v a="$patched_before" -v b="$patched" 'BEGIN { printf "%d", b - a }')
[ "$rose" -ge 3 ] || fail "vscaler_pod_admission_total{result=\"patched\"} rose by $rose, want >= 3"
echo "ok: vscaler_pod_admission_total{result=\"patched\"} rose by $rose"
echo "PASS"
