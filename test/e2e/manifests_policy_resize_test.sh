#!/usr/bin/env bash
# plane: full
# The ValidatingAdmissionPolicy vscaler-pod-resize-resources-only (manifests/admission-policy.yaml),
# applied for real on a running pod (kwok's Stages play the kubelet's resize): the vscaler
# ServiceAccount (impersonated, with the RBAC of manifests/rbac.yaml) resizes the cpu/memory
# requests and limits of a pod's container through pods/resize under the policy (its expressions
# evaluate on a real resize and admit it); a probe copy of the policy with one validation that
# always fails denies the same resize, so the manifest's match (pods/resize UPDATEs by the
# ServiceAccount) is what the API server applies; another user's resize is not matched.
# (What else a resize could change, the API server refuses first in 1.36: "only cpu and memory
# resources are mutable"; the policy keeps that true if a later release allows more.)
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
root=$(cd "$here/../.." && pwd)
SA=system:serviceaccount:vscaler-system:vscaler
work=$(mktemp -d /tmp/vscaler-policy-resize.XXXXXX)
cleanup() {
  k delete -f "$work/probe.yaml" --ignore-not-found >/dev/null 2>&1 || true
  k delete -f "$root/manifests/admission-policy.yaml" --ignore-not-found >/dev/null 2>&1 || true
  k delete -f "$root/manifests/rbac.yaml" --ignore-not-found >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

k get namespace vscaler-system >/dev/null 2>&1 || k apply -f "$root/manifests/namespace.yaml" >/dev/null
k apply -f "$root/manifests/rbac.yaml" -f "$root/manifests/admission-policy.yaml" >/dev/null
ns=$(unique_namespace policy-resize)
# kubectl reads the subresource before it patches; vscaler only patches (its RBAC): a test-only
# Role lets the impersonated ServiceAccount read it.
k -n "$ns" create role resize-get --verb=get --resource=pods/resize >/dev/null
k -n "$ns" create rolebinding resize-get --role=resize-get --serviceaccount=vscaler-system:vscaler >/dev/null
make_deployment "$ns" web '[{"name":"app","image":"registry.k8s.io/pause:3.10",
  "resources":{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"cpu":"200m","memory":"128Mi"}}}]'
running() { [ -n "$(k -n "$ns" get pods -l app=web --field-selector=status.phase=Running -o name)" ]; }
eventually 60 running
pod=$(k -n "$ns" get pods -l app=web --field-selector=status.phase=Running -o jsonpath='{.items[0].metadata.name}')

# resize WHO CPU [DRY_RUN]: the pod's cpu request (and twice that as limit) through pods/resize by
# WHO (sa or admin); prints admitted, denied NAME (the policy that denied it), or the error.
resize() {
  local out as=()
  [ "$1" = sa ] && as=(--as="$SA")
  if out=$(k -n "$ns" patch pod "$pod" --subresource resize "${as[@]}" ${3:+--dry-run=server} -p \
    "{\"spec\":{\"containers\":[{\"name\":\"app\",\"resources\":{\"requests\":{\"cpu\":\"$2\"},\"limits\":{\"cpu\":\"$((2 * ${2%m}))m\"}}}]}}" 2>&1); then
    echo admitted
  elif [[ $out =~ ValidatingAdmissionPolicy\ \'([a-z-]+)\' ]]; then
    echo "denied ${BASH_REMATCH[1]}"
  else
    echo "error: $out"
  fi
}

echo "--- vscaler's resize under the policy: admitted, carried by the pod"
expect_eq "vscaler SA: cpu request 150m, limit 300m" "$(resize sa 150m)" admitted
carried() { [ "$(k -n "$ns" get pod "$pod" -o jsonpath='{.status.containerStatuses[0].resources.requests.cpu}')" = 150m ]; }
eventually 30 carried

echo "--- the manifest's match, probed: a copy with a validation that always fails denies it"
awk '/^---$/ {n++} n >= 2' "$root/manifests/admission-policy.yaml" |
  sed 's/vscaler-pod-resize-resources-only/vscaler-probe-resize/; s/^  validations:$/  validations:\n  - expression: "false"\n    message: probe/' >"$work/probe.yaml"
k apply -f "$work/probe.yaml" >/dev/null
probe_active() { [ "$(resize sa 160m dry-run)" = "denied vscaler-probe-resize" ]; }
eventually 30 probe_active
expect_eq "admin (not matched): cpu request 170m" "$(resize admin 170m dry-run)" admitted
echo "ok: resize policy"
