#!/usr/bin/env bash
# The ValidatingAdmissionPolicy of manifests/admission-policy.yaml, applied for real: the vscaler
# ServiceAccount (impersonated, with the RBAC of manifests/rbac.yaml) may patch the cpu/memory
# requests and limits of a Deployment's (a StatefulSet's, a DaemonSet's) containers and nothing
# else; other users are not bound.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
root=$(cd "$here/../.." && pwd)
SA=system:serviceaccount:vscaler-system:vscaler
cleanup() {
  k delete -f "$root/manifests/admission-policy.yaml" --ignore-not-found >/dev/null 2>&1 || true
  k delete -f "$root/manifests/rbac.yaml" --ignore-not-found >/dev/null 2>&1 || true
}
trap cleanup EXIT

k get namespace vscaler-system >/dev/null 2>&1 || k apply -f "$root/manifests/namespace.yaml" >/dev/null
k apply -f "$root/manifests/rbac.yaml" >/dev/null
k apply -f "$root/manifests/admission-policy.yaml" >/dev/null
ns=$(unique_namespace manifests-policy)
k -n "$ns" apply -f - >/dev/null <<'EOF2'
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
  annotations: {team: shop}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      initContainers:
      - name: init
        image: registry.k8s.io/pause:3.10
        resources: {requests: {cpu: 10m}}
      containers:
      - name: app
        image: registry.k8s.io/pause:3.10
        env: [{name: MODE, value: prod}]
        resources:
          requests: {cpu: 100m, memory: 64Mi, ephemeral-storage: 1Gi}
          limits: {cpu: 200m, memory: 128Mi}
      - name: sidecar
        image: registry.k8s.io/pause:3.10
EOF2

# as_sa WHAT PATCH [TYPE] [DRY_RUN]: a patch by the vscaler ServiceAccount; prints admitted,
# denied (by the policy), or the error.
as_sa() {
  local out
  if out=$(k -n "$ns" patch deployment web --as="$SA" --type="${3:-strategic}" -p "$2" ${4:+--dry-run=server} 2>&1); then
    echo admitted
  elif grep -q "ValidatingAdmissionPolicy 'vscaler-deployment-resources-only'" <<<"$out"; then
    echo denied
  else
    echo "error: $out"
  fi
}
admitted() { expect_eq "vscaler SA: $1" "$(as_sa "$1" "$2" "${3:-}")" admitted; }
denied() { expect_eq "vscaler SA: $1" "$(as_sa "$1" "$2" "${3:-}")" denied; }

# The API server loads policies asynchronously: wait until an image change is denied.
image='{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"registry.k8s.io/pause:3.9"}]}}}}'
policy_active() { [ "$(as_sa image "$image" strategic dry-run)" = denied ]; }
eventually 30 policy_active

echo "--- admitted: the containers' cpu/memory requests and limits"
admitted "raise app's cpu request" '{"spec":{"template":{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"150m"}}}]}}}}'
admitted "set app's cpu and memory limits" '{"spec":{"template":{"spec":{"containers":[{"name":"app","resources":{"limits":{"cpu":"1","memory":"512Mi"}}}]}}}}'
admitted "give sidecar resources it had none of" '{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","resources":{"requests":{"memory":"16Mi"},"limits":{"memory":"32Mi"}}}]}}}}'
admitted "both containers at once" '{"spec":{"template":{"spec":{"containers":[{"name":"app","resources":{"requests":{"memory":"100Mi"}}},{"name":"sidecar","resources":{"requests":{"cpu":"5m"}}}]}}}}'
admitted "a no-op patch" '{"spec":{"template":{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"150m"}}}]}}}}'
admitted "raise the pod-level cpu request with app's (they must hold the containers')" '{"spec":{"template":{"spec":{"resources":{"requests":{"cpu":"1"}},"containers":[{"name":"app","resources":{"requests":{"cpu":"150m"}}}]}}}}'
expect_eq "stored pod-level cpu request" "$(k -n "$ns" get deploy web -o jsonpath='{.spec.template.spec.resources.requests.cpu}')" "1"
expect_eq "stored cpu request" "$(k -n "$ns" get deploy web -o jsonpath='{.spec.template.spec.containers[0].resources.requests.cpu}')" "150m"
expect_eq "stored sidecar memory limit" "$(k -n "$ns" get deploy web -o jsonpath='{.spec.template.spec.containers[1].resources.limits.memory}')" "32Mi"

echo "--- denied: everything else"
denied "change app's image" "$image"
denied "add an env var" '{"spec":{"template":{"spec":{"containers":[{"name":"app","env":[{"name":"DEBUG","value":"1"}]}]}}}}'
denied "set a container command" '{"spec":{"template":{"spec":{"containers":[{"name":"sidecar","command":["/pause"]}]}}}}'
denied "change the replicas" '{"spec":{"replicas":5}}'
denied "pause the rollout" '{"spec":{"paused":true}}'
denied "add a Deployment label" '{"metadata":{"labels":{"x":"y"}}}'
denied "change a Deployment annotation" '{"metadata":{"annotations":{"team":"other"}}}'
denied "add a pod template annotation" '{"spec":{"template":{"metadata":{"annotations":{"restarted":"now"}}}}}'
denied "set the service account" '{"spec":{"template":{"spec":{"serviceAccountName":"other"}}}}'
denied "change an init container's resources" '{"spec":{"template":{"spec":{"initContainers":[{"name":"init","resources":{"requests":{"cpu":"20m"}}}]}}}}'
denied "change an ephemeral-storage request" '{"spec":{"template":{"spec":{"containers":[{"name":"app","resources":{"requests":{"ephemeral-storage":"2Gi"}}}]}}}}'
denied "add a GPU limit" '{"spec":{"template":{"spec":{"containers":[{"name":"app","resources":{"limits":{"nvidia.com/gpu":"1"}}}]}}}}'
denied "remove the ephemeral-storage request" '[{"op":"remove","path":"/spec/template/spec/containers/0/resources/requests/ephemeral-storage"}]' json
denied "add a container" '{"spec":{"template":{"spec":{"containers":[{"name":"extra","image":"registry.k8s.io/pause:3.10"}]}}}}'
denied "reorder the containers" '[{"op":"move","from":"/spec/template/spec/containers/1","path":"/spec/template/spec/containers/0"}]' json
denied "remove a container" '[{"op":"remove","path":"/spec/template/spec/containers/1"}]' json
denied "pod-level resources plus a service account in one patch" '{"spec":{"template":{"spec":{"resources":{"requests":{"cpu":"2"}},"serviceAccountName":"other"}}}}'
denied "resources plus an image in one patch" '{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"registry.k8s.io/pause:3.9","resources":{"requests":{"cpu":"300m"}}}]}}}}'
expect_eq "stored image" "$(k -n "$ns" get deploy web -o jsonpath='{.spec.template.spec.containers[0].image}')" "registry.k8s.io/pause:3.10"
expect_eq "stored replicas" "$(k -n "$ns" get deploy web -o jsonpath='{.spec.replicas}')" "2"

echo "--- a StatefulSet and a DaemonSet: the same rule (resources admitted, anything else denied)"
for Kind in StatefulSet DaemonSet; do
  kind=$(tr '[:upper:]' '[:lower:]' <<<"$Kind")
  extra=""
  [ "$kind" = statefulset ] && extra='"serviceName": "w", "replicas": 1,'
  k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion": "apps/v1", "kind": "$Kind", "metadata": {"name": "w"},
 "spec": {$extra "selector": {"matchLabels": {"app": "w"}},
  "template": {"metadata": {"labels": {"app": "w"}},
   "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}}}}
JSON
  kind_patch() {
    local out
    if out=$(k -n "$ns" patch "$kind" w --as="$SA" --type=strategic -p "$1" 2>&1); then echo admitted
    elif grep -q "ValidatingAdmissionPolicy 'vscaler-deployment-resources-only'" <<<"$out"; then echo denied
    else echo "error: $out"; fi
  }
  expect_eq "vscaler SA: $kind cpu request" "$(kind_patch '{"spec":{"template":{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"50m"}}}]}}}}')" admitted
  expect_eq "vscaler SA: $kind image" "$(kind_patch "$image")" denied
  expect_eq "vscaler SA: $kind minReadySeconds" "$(kind_patch '{"spec":{"minReadySeconds":5}}')" denied
  expect_eq "vscaler SA: $kind annotation" "$(kind_patch '{"metadata":{"annotations":{"x":"y"}}}')" denied
  expect_eq "vscaler SA: $kind memory limit" "$(kind_patch '{"spec":{"template":{"spec":{"containers":[{"name":"app","resources":{"limits":{"memory":"64Mi"}}}]}}}}')" admitted
done

echo "--- other users are not bound by the policy"
k -n "$ns" set image deployment/web app=registry.k8s.io/pause:3.9 >/dev/null || fail "the admin could not change the image"
expect_eq "image changed by the admin" "$(k -n "$ns" get deploy web -o jsonpath='{.spec.template.spec.containers[0].image}')" "registry.k8s.io/pause:3.9"
echo "ok: policy"
