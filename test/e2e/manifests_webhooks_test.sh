#!/usr/bin/env bash
# The webhook configurations of manifests/webhook (registered url-based by certs/install.sh
# --local, which renders manifests/local from them) call the webhook exactly when DESIGN.md says:
# Deployment CREATE, UPDATE of the pod template, DELETE (also in a deletecollection), dry-runs;
# not UPDATEs leaving the template alone, not scale/status subresource writes, not vscaler-system;
# StatefulSets and DaemonSets alike, on /mutate-workloads; pods a workload's controller creates
# (a ReplicaSet, StatefulSet or DaemonSet owner), on /mutate-pods, CREATE only, not kube-system;
# VerticalScaler CREATE/UPDATE only. The webhook is test/e2e/certs_fake_webhook.py.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
root=$(cd "$here/../.." && pwd)
export KUBECTL
work=$(mktemp -d /tmp/vscaler-webhooks-test.XXXXXX)
fake_pid=""
cleanup() {
  [ -n "$fake_pid" ] && kill "$fake_pid" 2>/dev/null
  "$root/certs/install.sh" --uninstall --local >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

k apply -f "$root/manifests/crd/verticalscalers.yaml" >/dev/null
k wait --for condition=established --timeout=60s crd/verticalscalers.scaling.vscaler.dev >/dev/null
"$root/certs/generate.sh" --cert-dir "$work/certs" 2>/dev/null
python3 "$here/certs_fake_webhook.py" --cert-dir "$work/certs" --port-file "$work/port" --log "$work/calls.log" \
  >"$work/fake.out" 2>&1 &
fake_pid=$!
eventually 10 test -s "$work/port"
"$root/certs/install.sh" --local --port "$(cat "$work/port")" --cert-dir "$work/certs" 2>/dev/null ||
  fail "certs/install.sh --local failed"
ns=$(unique_namespace manifests-webhooks)

# calls COMMAND...: runs COMMAND; prints the webhook calls it caused ("PATH OPERATION NAME", one
# per line, sorted) or "none".
calls() {
  : >"$work/calls.log"
  "$@" >"$work/cmd.out" 2>&1 || fail "command failed: $* : $(cat "$work/cmd.out")"
  sleep 0.2
  local got
  got=$(sed -e 's/^fake-vscaler reached //' -e "s| $ns/| |" "$work/calls.log" | sort | tr '\n' ';')
  echo "${got:-none}"
}
deploy_json() {
  cat <<JSON
{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"$1","namespace":"$2"},
 "spec":{"replicas":1,"selector":{"matchLabels":{"app":"$1"}},
  "template":{"metadata":{"labels":{"app":"$1"}},"spec":{"containers":[{"name":"app","image":"registry.k8s.io/pause:3.10"}]}}}}
JSON
}
create() { deploy_json "$1" "$2" | k create -f - "${@:3}"; }

echo "--- Deployments"
expect_eq "CREATE" "$(calls create web "$ns")" "/mutate-deployments CREATE web;"
expect_eq "dry-run CREATE" "$(calls create dry "$ns" --dry-run=server)" "/mutate-deployments CREATE dry;"
expect_eq "UPDATE of the pod template" "$(calls k -n "$ns" set env deployment/web A=1)" "/mutate-deployments UPDATE web;"
expect_eq "UPDATE of the template's resources" \
  "$(calls k -n "$ns" set resources deployment/web --requests=cpu=100m)" "/mutate-deployments UPDATE web;"
expect_eq "UPDATE of labels only" "$(calls k -n "$ns" label deployment/web tier=front)" "none"
expect_eq "UPDATE of replicas in the main resource" \
  "$(calls k -n "$ns" patch deployment/web -p '{"spec":{"replicas":3}}')" "none"
expect_eq "scale subresource" "$(calls k -n "$ns" scale deployment/web --replicas=2)" "none"
expect_eq "status subresource" \
  "$(calls k -n "$ns" patch deployment/web --subresource=status --type=merge -p '{"status":{"observedGeneration":1}}')" "none"
expect_eq "no-op apply" "$(calls k -n "$ns" apply -f <(k -n "$ns" get deployment web -o json))" "none"
expect_eq "dry-run DELETE" "$(calls k -n "$ns" delete deployment/web --dry-run=server)" "/mutate-deployments DELETE web;"
expect_eq "DELETE" "$(calls k -n "$ns" delete deployment/web)" "/mutate-deployments DELETE web;"
create a "$ns" >/dev/null 2>&1
create b "$ns" >/dev/null 2>&1
expect_eq "deletecollection (each item has only oldObject's name)" \
  "$(calls k delete --raw "/apis/apps/v1/namespaces/$ns/deployments")" \
  "/mutate-deployments DELETE a;/mutate-deployments DELETE b;"

echo "--- StatefulSets and DaemonSets: the second entry, on /mutate-workloads"
workload_json() {  # KIND NAME
  local extra=""
  [ "$1" = StatefulSet ] && extra="\"serviceName\":\"$2\",\"replicas\":1,"
  cat <<JSON
{"apiVersion":"apps/v1","kind":"$1","metadata":{"name":"$2","namespace":"$ns"},
 "spec":{$extra"selector":{"matchLabels":{"app":"$2"}},
  "template":{"metadata":{"labels":{"app":"$2"}},"spec":{"containers":[{"name":"app","image":"registry.k8s.io/pause:3.10"}]}}}}
JSON
}
create_workload() { workload_json "$1" "$2" | k create -f -; }
for kind in StatefulSet DaemonSet; do
  r=$(tr '[:upper:]' '[:lower:]' <<<"$kind")
  expect_eq "$kind CREATE" "$(calls create_workload "$kind" w)" "/mutate-workloads CREATE w;"
  expect_eq "$kind UPDATE of the pod template" "$(calls k -n "$ns" set env "$r/w" A=1)" "/mutate-workloads UPDATE w;"
  expect_eq "$kind UPDATE of labels only" "$(calls k -n "$ns" label "$r/w" tier=front)" "none"
  expect_eq "$kind status subresource" \
    "$(calls k -n "$ns" patch "$r/w" --subresource=status --type=merge -p '{"status":{"observedGeneration":1}}')" "none"
  expect_eq "$kind DELETE" "$(calls k -n "$ns" delete "$r/w")" "/mutate-workloads DELETE w;"
done
create_workload StatefulSet s >/dev/null 2>&1
expect_eq "StatefulSet scale subresource" "$(calls k -n "$ns" scale statefulset/s --replicas=2)" "none"

k get namespace vscaler-system >/dev/null 2>&1 || k create namespace vscaler-system >/dev/null
expect_eq "a Deployment in vscaler-system" "$(calls create web vscaler-system --dry-run=server)" "none"
expect_eq "a ConfigMap" "$(calls k -n "$ns" create configmap c --from-literal=a=b)" "none"

echo "--- pods: the pod entry, on /mutate-pods (dry-run CREATEs: this plane runs no controllers)"
# pod_json NAME NAMESPACE OWNER_KIND [OWNER_API_VERSION]: a pod; OWNER_KIND "" for none.
pod_json() {
  local owner=""
  [ -n "$3" ] && owner=',"ownerReferences":[{"apiVersion":"'"${4:-apps/v1}"'","kind":"'"$3"'","name":"web-6b9f7c","uid":"00000000-0000-0000-0000-000000000001","controller":true}]'
  cat <<JSON
{"apiVersion":"v1","kind":"Pod","metadata":{"name":"$1","namespace":"$2",
 "labels":{"pod-template-hash":"6b9f7c"}$owner},
 "spec":{"containers":[{"name":"app","image":"registry.k8s.io/pause:3.10"}]}}
JSON
}
pod() { pod_json "$@" | k create -f - --dry-run=server; }
# No controller makes the namespaces' default ServiceAccount here; pod admission looks it up.
for sa_ns in "$ns" kube-system; do
  k -n "$sa_ns" get serviceaccount default >/dev/null 2>&1 ||
    k -n "$sa_ns" create serviceaccount default >/dev/null
done
for kind in ReplicaSet StatefulSet DaemonSet; do
  expect_eq "a pod owned by a $kind" "$(calls pod p "$ns" "$kind")" "/mutate-pods CREATE p;"
done
expect_eq "a pod with no owner" "$(calls pod p "$ns" "")" "none"
expect_eq "a Job's pod" "$(calls pod p "$ns" Job batch/v1)" "none"
expect_eq "a ReplicaSet of another API group" "$(calls pod p "$ns" ReplicaSet example.com/v1)" "none"
expect_eq "a ReplicaSet's pod in kube-system" "$(calls pod p kube-system ReplicaSet)" "none"

echo "--- VerticalScalers"
scaler() {
  k -n "$ns" apply -f - <<JSON
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"web"},
 "spec":{"deploymentName":"web","updateMode":"$1","containers":[{"name":"app","requests":{"cpu":"100m"}}]}}
JSON
}
expect_eq "scaler CREATE" "$(calls scaler Auto)" "/validate-verticalscalers CREATE web;"
expect_eq "scaler UPDATE" "$(calls scaler Off)" "/validate-verticalscalers UPDATE web;"
expect_eq "scaler status write" \
  "$(calls k -n "$ns" patch vsc/web --subresource=status --type=merge -p '{"status":{"observedGeneration":1}}')" "none"
expect_eq "scaler DELETE" "$(calls k -n "$ns" delete vsc/web)" "none"

echo "--- the webhook down: Deployment writes go through (Ignore), scaler writes are refused (Fail)"
kill "$fake_pid"
wait "$fake_pid" 2>/dev/null || true
fake_pid=""
create down "$ns" >/dev/null 2>"$work/err" || fail "a Deployment write failed with the webhook down: $(cat "$work/err")"
echo "ok: Deployment created with the webhook down"
if scaler Auto >/dev/null 2>"$work/err"; then fail "a scaler was admitted with its validating webhook down"; fi
grep -q 'failed calling webhook "validate-verticalscalers.vscaler.dev"' "$work/err" ||
  fail "unexpected error: $(cat "$work/err")"
echo "ok: scaler refused with the webhook down"
echo "ok: webhooks"
