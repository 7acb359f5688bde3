#!/usr/bin/env bash
# plane: full
# The Helm chart charts/vscaler with real helm (v4, test/cluster/build.sh helm) on the full local
# cluster, whose kwok nodes run the operator's pods (the image is never pulled; kwok reports them
# Running and Ready):
#   1. `helm install vscaler charts/vscaler -n vscaler-system --create-namespace`: the CRDs,
#      RBAC, Deployment (2 replicas on kwok nodes), Service, PDB, NetworkPolicy, both
#      ValidatingAdmissionPolicies and both webhook configurations exist; every caBundle is the
#      Secret's ca.crt, and the serving certificate verifies against it for
#      vscaler-webhook.vscaler-system.svc (openssl verify);
#   2. `helm upgrade --reuse-values --set recommenderInterval=30s` changes the Deployment's args
#      and rolls it (revision 2, a new ReplicaSet), and keeps the CA (Secret and caBundle);
#   3. `helm uninstall` leaves no webhook configuration vscaler and no Deployment.
# Safe on the shared plane: the webhooks point at pods that cannot serve (the validating one fails
# closed), so no VerticalScaler or workload is written while they are registered, and the EXIT
# trap uninstalls (and deletes the namespace if it made it) whatever happened. A webhook
# configuration vscaler, or any other object of the chart, left by another test stops this one at
# once, named (Helm would refuse to adopt it, or adopt it silently).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
# shellcheck source=../cluster/versions.sh
. "$ROOT/test/cluster/versions.sh"
helm=$HELM_BIN_DIR/helm
[ -x "$helm" ] || fail "no helm at $helm: run make helm-build (test/cluster/build.sh helm)"
ns=vscaler-system
work=$(mktemp -d /tmp/vscaler-helm-e2e.XXXXXX)
# helm keeps its own state (repositories, cache) under these: not in the user's home.
export HELM_CONFIG_HOME=$work/config HELM_CACHE_HOME=$work/cache HELM_DATA_HOME=$work/data
h() { "$helm" "$@"; }
installed=0 made_ns=1
cleanup() {
  if [ "$installed" = 1 ]; then
    h uninstall vscaler -n $ns >/dev/null 2>&1 || true
    k delete mutatingwebhookconfiguration vscaler --ignore-not-found >/dev/null 2>&1 || true
    k delete validatingwebhookconfiguration vscaler --ignore-not-found >/dev/null 2>&1 || true
    [ "$made_ns" = 0 ] || k delete namespace $ns --ignore-not-found --timeout=60s >/dev/null 2>&1 || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
begin=$SECONDS

# Leftovers of another test would be taken over (or make the install fail obscurely): refuse.
for kind in mutatingwebhookconfiguration validatingwebhookconfiguration; do
  if k get $kind vscaler >/dev/null 2>&1; then
    fail "a $kind vscaler is already registered (left by another test: certs/install.sh --uninstall --local removes it)"
  fi
done
# The namespace may exist (tests on this plane create it and leave it); it is deleted at the end
# only when this test made it. Any object the chart would create that already exists is named.
made_ns=1
k get namespace $ns >/dev/null 2>&1 && made_ns=0
# The tests that run vscaler as its ServiceAccount apply manifests/rbac.yaml and leave it
# (test/cluster/operator-kubeconfig.sh applies it again each time): those objects are the
# chart's too, so they are removed here, and the next such test applies them again.
k delete -f "$ROOT/manifests/rbac.yaml" --ignore-not-found >/dev/null 2>&1 || true
h template vscaler "$ROOT/charts/vscaler" -n $ns >"$work/rendered.yaml" 2>"$work/template.log" ||
  fail "helm template failed: $(cat "$work/template.log")"
existing=$(k get -f "$work/rendered.yaml" --ignore-not-found -o name 2>&1) || fail "kubectl get of the chart's objects failed: $existing"
[ -z "$existing" ] || fail "objects of the chart already exist (left by another test), remove them first: $(tr '\n' ' ' <<<"$existing")"

# 1. Install.
installed=1
start=$SECONDS
h install vscaler "$ROOT/charts/vscaler" -n $ns --create-namespace >"$work/install.log" 2>&1 ||
  fail "helm install failed: $(cat "$work/install.log")"
echo "ok: helm install in $((SECONDS - start))s"
for crd in verticalscalers.scaling.vscaler.dev verticalscalercheckpoints.scaling.vscaler.dev; do
  k get crd $crd >/dev/null || fail "CRD $crd is missing"
done
for obj in clusterrole/vscaler clusterrole/vscaler-metrics-reader clusterrolebinding/vscaler \
  validatingadmissionpolicy/vscaler-deployment-resources-only validatingadmissionpolicy/vscaler-pod-resize-resources-only \
  validatingadmissionpolicybinding/vscaler-deployment-resources-only mutatingwebhookconfiguration/vscaler \
  validatingwebhookconfiguration/vscaler; do
  k get "$obj" >/dev/null || fail "$obj is missing after helm install"
done
for obj in serviceaccount/vscaler role/vscaler-leader-election rolebinding/vscaler-leader-election deployment/vscaler \
  service/vscaler-webhook poddisruptionbudget/vscaler networkpolicy/vscaler secret/vscaler-webhook-tls; do
  k -n $ns get "$obj" >/dev/null || fail "$ns/$obj is missing after helm install"
done
# Every object the chart renders (whatever manifests/ adds later) exists.
got=$(k get -f "$work/rendered.yaml" -o name 2>&1) || fail "objects of the chart are missing after helm install: $got"
expect_eq "objects of the chart found" "$(grep -c . <<<"$got")" "$(grep -c '^kind:' "$work/rendered.yaml")"
expect_eq "managed-by label of deployment/vscaler" "$(jp $ns deployment/vscaler '{.metadata.labels.app\.kubernetes\.io/managed-by}')" Helm
echo "ok: CRDs, RBAC, policies, webhook configurations, Deployment, Service, PDB, NetworkPolicy, Secret exist"

k -n $ns rollout status deployment/vscaler --timeout=40s >/dev/null || fail "the operator did not roll out on the kwok nodes"
nodes=$(k -n $ns get pods -l app.kubernetes.io/name=vscaler --field-selector=status.phase=Running \
  -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort)
expect_eq "Running replicas" "$(grep -c . <<<"$nodes")" 2
while read -r node; do
  [[ "$node" == kwok-node-* ]] || fail "a replica runs on '$node', not on a kwok node"
done <<<"$nodes"
echo "ok: 2 replicas Running and Ready on $(tr '\n' ' ' <<<"$nodes")"

# The certificate: caBundle = the Secret's ca.crt, the serving cert verifies for the Service name.
ca=$(jp $ns secret/vscaler-webhook-tls '{.data.ca\.crt}')
[ -n "$ca" ] || fail "the Secret vscaler-webhook-tls has no ca.crt"
check_bundles() { # WANT_CA
  local kind bundles b
  for kind in mutatingwebhookconfiguration validatingwebhookconfiguration; do
    bundles=$(k get $kind vscaler -o jsonpath='{range .webhooks[*]}{.clientConfig.caBundle}{"\n"}{end}')
    [ -n "$bundles" ] || fail "$kind vscaler has no webhooks"
    while read -r b; do
      [ "$b" = "$1" ] || fail "$kind vscaler: a caBundle is not the Secret's ca.crt"
    done <<<"$bundles"
  done
}
check_bundles "$ca"
base64 -d <<<"$ca" >"$work/ca.crt"
jp $ns secret/vscaler-webhook-tls '{.data.tls\.crt}' | base64 -d >"$work/tls.crt"
out=$(openssl verify -CAfile "$work/ca.crt" -verify_hostname vscaler-webhook.vscaler-system.svc "$work/tls.crt" 2>&1) ||
  fail "the serving certificate does not verify against the CA for vscaler-webhook.vscaler-system.svc: $out"
echo "ok: both webhook configurations carry the Secret's CA; the serving cert verifies for vscaler-webhook.vscaler-system.svc"

# 2. Upgrade with a changed value: a rollout, the same CA.
rs_before=$(k -n $ns get replicasets -l app.kubernetes.io/name=vscaler -o name | sort)
start=$SECONDS
h upgrade vscaler "$ROOT/charts/vscaler" -n $ns --reuse-values --set recommenderInterval=30s >"$work/upgrade.log" 2>&1 ||
  fail "helm upgrade failed: $(cat "$work/upgrade.log")"
echo "ok: helm upgrade in $((SECONDS - start))s"
grep -qx -- --recommender-interval=30s <<<"$(jp $ns deployment/vscaler '{range .spec.template.spec.containers[0].args[*]}{@}{"\n"}{end}')" ||
  fail "the Deployment's args lack --recommender-interval=30s after the upgrade"
expect_eq "Deployment revision after the upgrade" "$(jp $ns deployment/vscaler '{.metadata.annotations.deployment\.kubernetes\.io/revision}')" 2
k -n $ns rollout status deployment/vscaler --timeout=40s >/dev/null || fail "the upgraded operator did not roll out"
rs_after=$(k -n $ns get replicasets -l app.kubernetes.io/name=vscaler -o name | sort)
new_rs=$(comm -13 <(echo "$rs_before") <(echo "$rs_after"))
[ -n "$new_rs" ] || fail "no new ReplicaSet after the upgrade (before: $rs_before; after: $rs_after)"
[ "$(jp $ns secret/vscaler-webhook-tls '{.data.ca\.crt}')" = "$ca" ] || fail "the upgrade replaced the CA in the Secret vscaler-webhook-tls"
check_bundles "$ca"
echo "ok: the upgrade rolled the operator (${new_rs#*/}) with --recommender-interval=30s and kept the CA"

# 3. Uninstall: nothing of the webhooks or the operator is left.
start=$SECONDS
h uninstall vscaler -n $ns >"$work/uninstall.log" 2>&1 || fail "helm uninstall failed: $(cat "$work/uninstall.log")"
for kind in mutatingwebhookconfiguration validatingwebhookconfiguration; do
  k get $kind vscaler >/dev/null 2>&1 && fail "helm uninstall left the $kind vscaler"
done
k -n $ns get deployment vscaler >/dev/null 2>&1 && fail "helm uninstall left the Deployment vscaler"
k -n $ns get secret vscaler-webhook-tls >/dev/null 2>&1 && fail "helm uninstall left the Secret vscaler-webhook-tls"
k get clusterrole vscaler >/dev/null 2>&1 && fail "helm uninstall left the ClusterRole vscaler"
echo "ok: helm uninstall in $((SECONDS - start))s left no webhook configuration, Deployment, Secret or ClusterRole"
if [ "$made_ns" = 1 ]; then
  k delete namespace $ns --timeout=40s >/dev/null || fail "namespace $ns (made by --create-namespace) was not deleted within 40s"
fi
installed=0
echo "PASS ($((SECONDS - begin))s)"
