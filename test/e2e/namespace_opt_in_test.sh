#!/usr/bin/env bash
# Namespaces that ask for recommendations (issue 32, DESIGN.md, Goldilocks-style), on the minimal
# plane (workload objects are enough: the leader reads their metadata): vscaler runs as its
# ServiceAccount with the shipped RBAC and the policy vscaler-made-scalers-only, resync 2 s.
# - a labelled namespace gets a "Off" scaler vsc-<kind>-<name> for each Deployment, StatefulSet
#   and DaemonSet no scaler targets, labelled app.kubernetes.io/managed-by=vscaler-namespace;
#   a workload a person's scaler targets gets none;
# - the made scaler goes when its workload is deleted, when a person's scaler comes to target the
#   same workload (the person's is the active one meanwhile), and when the label goes;
# - a person's scaler is never written but for its status (same generation, vscaler's
#   managedFields on the status subresource only), and the policy refuses
#   vscaler's user a delete of it, a create without the label, and a create in another mode.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

install_crd
ns=$(unique_namespace optin)
cleanup() {
  stop_operator
  k delete -f "$ROOT/manifests/admission-policy.yaml" --ignore-not-found >/dev/null 2>&1 || true
  k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
}
trap cleanup EXIT
k apply -f "$ROOT/manifests/admission-policy.yaml" >/dev/null

make_deployment "$ns" web
make_deployment "$ns" api
k -n "$ns" apply -f - >/dev/null <<'JSON'
{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"db"},
 "spec":{"replicas":1,"serviceName":"db","selector":{"matchLabels":{"app":"db"}},
  "template":{"metadata":{"labels":{"app":"db"}},"spec":{"containers":[{"name":"db","image":"registry.k8s.io/pause:3.10"}]}}}}
---
{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"agent"},
 "spec":{"selector":{"matchLabels":{"app":"agent"}},
  "template":{"metadata":{"labels":{"app":"agent"}},"spec":{"containers":[{"name":"agent","image":"registry.k8s.io/pause:3.10"}]}}}}
JSON
# person NAME KIND TARGET: a scaler a person writes.
person() {
  k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"$1"},
 "spec":{"targetRef":{"apiVersion":"apps/v1","kind":"$2","name":"$3"},"updateMode":"Off"}}
JSON
}
person mine-api Deployment api
person_generation=$(jp "$ns" vsc/mine-api '{.metadata.generation}')
k label namespace "$ns" vscaler.dev/recommend=true >/dev/null
start_operator --resync-period 2s --recommender-interval 1h

# made: the made scalers' names, sorted, on one line.
made() {
  k -n "$ns" get vsc -l app.kubernetes.io/managed-by=vscaler-namespace \
    -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort | tr '\n' ' ' | sed 's/ $//'
}
made_is() { [ "$(made)" = "$1" ]; }

echo "--- a labelled namespace: a scaler per workload no scaler targets"
begin=$SECONDS
eventually 20 made_is "vsc-daemonset-agent vsc-deployment-web vsc-statefulset-db" ||
  fail "made scalers: '$(made)', not the three expected"
echo "ok: $(made) made in $((SECONDS - begin))s (none for api: mine-api targets it)"
[ "$(jp "$ns" vsc/vsc-deployment-web '{.spec.updateMode} {.spec.targetRef.kind}/{.spec.targetRef.name}')" = "Off Deployment/web" ] ||
  fail "vsc-deployment-web is not an Off scaler of Deployment/web: $(k -n "$ns" get vsc vsc-deployment-web -o json)"
grep -q '"made a VerticalScaler for a workload of a namespace that asks"' "$OPERATOR_LOG" ||
  fail "no creation logged"

echo "--- the workload goes: its made scaler goes"
k -n "$ns" delete deployment web >/dev/null
eventually 20 made_is "vsc-daemonset-agent vsc-statefulset-db" || fail "made scalers after web went: '$(made)'"
echo "ok: vsc-deployment-web deleted with Deployment web"

echo "--- a person's scaler of db: it is active at once, the made one goes"
person mine-db StatefulSet db
# mine_db_settled: mine-db's Ready reason, read at each look, has been written and is not
# Conflict (fails the test at once if it ever is: the made, older scaler was preferred), and the
# made scaler is gone.
mine_db_settled() {
  local ready
  ready=$(condition "$ns" mine-db Ready)
  [ "$ready" != Conflict ] || fail "mine-db reports a Conflict: the made scaler was preferred"
  [ -n "$ready" ] && made_is "vsc-daemonset-agent"
}
eventually 20 mine_db_settled || fail "made scalers after mine-db: '$(made)'"
echo "ok: vsc-statefulset-db deleted; mine-db was never in Conflict ($(condition "$ns" mine-db Ready))"

echo "--- the label goes: every made scaler goes"
k label namespace "$ns" vscaler.dev/recommend- >/dev/null
eventually 20 made_is "" || fail "made scalers after the label went: '$(made)'"
echo "ok: no made scaler left"

echo "--- a person's scalers were never written, and the policy keeps vscaler's user to its own"
# The reconciler writes its status, as for every scaler; nothing else of it is vscaler's.
[ "$(jp "$ns" vsc/mine-api '{.metadata.generation}')" = "$person_generation" ] ||
  fail "mine-api's spec was written (generation $person_generation -> $(jp "$ns" vsc/mine-api '{.metadata.generation}'))"
writes=$(jp "$ns" vsc/mine-api '{range .metadata.managedFields[?(@.manager=="vscaler")]}{.subresource}{" "}{end}')
[ -z "$(echo "$writes" | tr -d ' ' | sed 's/status//g')" ] ||
  fail "vscaler wrote mine-api outside its status: managedFields subresources '$writes'"
as_vscaler=(--as "$VSCALER_USER")
denied() {
  local out
  if out=$("$@" 2>&1); then fail "allowed: $* ($out)"; fi
  echo "$out" | grep -q "$EXPECTED" || return 1
}
EXPECTED="only the VerticalScalers it makes" eventually 20 denied k "${as_vscaler[@]}" -n "$ns" delete vsc mine-api ||
  fail "vscaler's user was not refused the delete of a person's scaler by the policy"
EXPECTED="only the VerticalScalers it makes" denied k "${as_vscaler[@]}" -n "$ns" apply -f - <<'JSON' ||
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"sneaky"},
 "spec":{"deploymentName":"api","updateMode":"Off"}}
JSON
  fail "vscaler's user was not refused a create without the label"
EXPECTED='created in mode "Off"' denied k "${as_vscaler[@]}" -n "$ns" apply -f - <<'JSON' ||
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler",
 "metadata":{"name":"sneaky","labels":{"app.kubernetes.io/managed-by":"vscaler-namespace"}},
 "spec":{"deploymentName":"api","updateMode":"Auto"}}
JSON
  fail "vscaler's user was not refused a made scaler in mode Auto"
echo "ok: mine-api untouched but its status; the policy refused a delete of it, a create without the label, one in Auto"
echo "PASS"
