#!/usr/bin/env bash
# plane: full
# Issue 15 end-to-end: scalers of every workload kind (Deployment, StatefulSet, DaemonSet) with
# the url-based webhooks of manifests/local/ registered and the resync effectively off, so every
# reaction comes through the admission hint path. Per kind: a scaler created before its
# workload (applied on create), a user's edit restored (Reconcile), a Helm-style reset patched
# away at admission without a new generation (Auto), the workload deleted (TargetFound=False)
# and re-created (applied again), the scaler deleted (the workload untouched), and the pods
# rolled with the values. Then a StatefulSet with updateStrategy OnDelete (status says the
# running pods keep their old values until deleted), a Deployment and a StatefulSet named alike,
# each with its own scaler, a retarget across kinds (both workloads are reconciled), and, with
# the webhooks gone, the resync restoring a StatefulSet and a DaemonSet. kwok runs the pods
# (DaemonSets land on every node).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

start_operator_with_webhooks --resync-period 1h --workers 4
ns=$(unique_namespace kinds)

OLD='{"requests":{"cpu":"100m","memory":"32Mi"}}'
WANT='{"limits":{"cpu":"500m"},"requests":{"cpu":"250m","memory":"64Mi"}}'
SPEC='[{"name":"app","requests":{"cpu":"250m","memory":"64Mi"},"limits":{"cpu":"500m"}}]'

# make_workload KIND NAME [RESOURCES_JSON] [UPDATE_STRATEGY]: an apps/v1 workload of one container
# "app" (a StatefulSet and a Deployment of 1 replica; a DaemonSet on every node).
make_workload() {
  local kind=$1 name=$2 resources=${3:-$OLD} strategy=${4:-} extra=""
  case "$kind" in
    Deployment) extra='"replicas":1,' ;;
    StatefulSet) extra="\"replicas\":1,\"serviceName\":\"$name\"," ;;
  esac
  [ -z "$strategy" ] || extra+="\"updateStrategy\":{\"type\":\"$strategy\"},"
  k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"apps/v1","kind":"$kind","metadata":{"name":"$name"},
 "spec":{$extra"selector":{"matchLabels":{"app":"$name"}},
  "template":{"metadata":{"labels":{"app":"$name"}},
   "spec":{"terminationGracePeriodSeconds":0,
    "containers":[{"name":"app","image":"registry.k8s.io/pause:3.10","resources":$resources}]}}}}
JSON
}
# ref_scaler NAME KIND TARGET MODE CONTAINERS_JSON: a scaler with spec.targetRef.
ref_scaler() {
  k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"$1"},
 "spec":{"targetRef":{"apiVersion":"apps/v1","kind":"$2","name":"$3"},"updateMode":"$4","containers":$5}}
JSON
}
res() { jp "$ns" "$1/$2" '{.spec.template.spec.containers[0].resources}'; }
gen() { jp "$ns" "$1/$2" '{.metadata.generation}'; }
has_resources() { [ "$(res "$1" "$2")" = "$3" ]; }
cond_is() { [ "$(condition "$ns" "$1" "$2")" = "$3" ]; }
target_column() { k -n "$ns" get vsc "$1" --no-headers | awk '{print $2}'; }
# pods_carry APP RESOURCES COUNT: COUNT Running pods labelled app=APP, each with RESOURCES.
pods_carry() {
  local got
  got=$(k -n "$ns" get pods -l "app=$1" --field-selector=status.phase=Running \
    -o jsonpath='{range .items[*]}{.spec.containers[0].resources}{"\n"}{end}')
  [ "$(grep -c . <<<"$got")" = "$3" ] && ! grep -vqxF "$2" <<<"$got"
}
# A reset as a chart would render it: the template with the chart's own resources.
reset_patch() {
  echo "{\"spec\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"app\",\"image\":\"registry.k8s.io/pause:3.10\",\"resources\":$OLD}]}}}}"
}
nodes=$(k get nodes --no-headers | grep -c .)

for kind in Deployment StatefulSet DaemonSet; do
  r=$(tr '[:upper:]' '[:lower:]' <<<"$kind")
  name=w-$r
  pods=1
  [ "$kind" = DaemonSet ] && pods=$nodes
  echo "--- $kind: a scaler created before its workload, applied when the workload is created"
  ref_scaler "$name" "$kind" "$name" Reconcile "$SPEC"
  eventually 30 cond_is "$name" TargetFound NotFound
  make_workload "$kind" "$name"
  eventually 30 has_resources "$r" "$name" "$WANT"
  eventually 30 cond_is "$name" Ready UpToDate
  expect_eq "$kind: TargetFound" "$(condition "$ns" "$name" TargetFound)" "Found"
  expect_eq "$kind: status.target.ref" "$(jp "$ns" "vsc/$name" '{.status.target.ref}')" "$kind/$name"
  expect_eq "$kind: TARGET column" "$(target_column "$name")" "$kind/$name"
  expect_eq "$kind: status.target.uid" "$(jp "$ns" "vsc/$name" '{.status.target.uid}')" \
    "$(jp "$ns" "$r/$name" '{.metadata.uid}')"
  if [ "$kind" = Deployment ]; then
    expect_eq "$kind: DeploymentFound kept" "$(condition "$ns" "$name" DeploymentFound)" "Found"
    expect_eq "$kind: status.deployment.name" "$(jp "$ns" "vsc/$name" '{.status.deployment.name}')" "$name"
  else
    expect_eq "$kind: no DeploymentFound" "$(condition "$ns" "$name" DeploymentFound)" ""
    expect_eq "$kind: no status.deployment" "$(jp "$ns" "vsc/$name" '{.status.deployment}')" ""
  fi

  echo "--- $kind: a user's edit is restored (Reconcile, hint path)"
  k -n "$ns" set resources "$r" "$name" -c app --requests=cpu=400m >/dev/null
  eventually 30 has_resources "$r" "$name" "$WANT"
  eventually 90 pods_carry "$name" "$WANT" "$pods"
  echo "ok: $kind: $pods Running pod(s) carry the values"

  echo "--- $kind: Auto, a Helm-style reset is patched away at admission (generation unchanged)"
  ref_scaler "$name" "$kind" "$name" Auto "$SPEC"
  eventually 30 bash -c "[ \"\$($KUBECTL -n $ns get vsc $name -o jsonpath='{.status.observedGeneration}')\" = 2 ]"
  before=$(gen "$r" "$name")
  k -n "$ns" patch "$r" "$name" --type merge -p "$(reset_patch)" >/dev/null
  expect_eq "$kind: resources after a reset" "$(res "$r" "$name")" "$WANT"
  expect_eq "$kind: generation after a reset" "$(gen "$r" "$name")" "$before"

  echo "--- $kind: deleted: TargetFound=False; re-created: applied again (in the create itself)"
  k -n "$ns" delete "$r" "$name" --wait=false >/dev/null
  eventually 30 cond_is "$name" TargetFound NotFound
  expect_eq "$kind: Ready after delete" "$(condition "$ns" "$name" Ready)" "Pending"
  gone() { ! k -n "$ns" get "$r" "$name" >/dev/null 2>&1; }
  eventually 60 gone
  make_workload "$kind" "$name"
  expect_eq "$kind: resources as created" "$(res "$r" "$name")" "$WANT"
  expect_eq "$kind: generation as created" "$(gen "$r" "$name")" "1"
  eventually 30 cond_is "$name" TargetFound Found

  echo "--- $kind: the scaler deleted: the workload is left exactly as it is"
  # (its controller keeps writing its status: the generation and template tell spec writes)
  k -n "$ns" delete vsc "$name" >/dev/null
  eventually 10 bash -c "! $KUBECTL -n $ns get vsc $name >/dev/null 2>&1"
  # A reset the deleted scaler must not see: it stays as written.
  k -n "$ns" patch "$r" "$name" --type merge -p "$(reset_patch)" >/dev/null
  after=$(gen "$r" "$name")
  expect_eq "$kind: the reset is stored as written" "$(res "$r" "$name")" "$OLD"
  sleep 2
  expect_eq "$kind: generation two seconds after the scaler's deletion" "$(gen "$r" "$name")" "$after"
  expect_eq "$kind: resources as the user left them" "$(res "$r" "$name")" "$OLD"
done

echo "--- a StatefulSet with updateStrategy OnDelete: the template carries the values, running pods keep theirs"
make_workload StatefulSet ondelete "$OLD" OnDelete
eventually 90 pods_carry ondelete "$OLD" 1
ref_scaler ondelete StatefulSet ondelete Reconcile "$SPEC"
eventually 30 has_resources statefulset ondelete "$WANT"
eventually 30 cond_is ondelete Scaled Applied
case "$(condition "$ns" ondelete Scaled message)" in
  *OnDelete*"pick them up when they are deleted"*) echo "ok: Scaled says pods pick the values up when deleted" ;;
  *) fail "Scaled message does not mention OnDelete: $(condition "$ns" ondelete Scaled message)" ;;
esac
expect_eq "OnDelete: Ready" "$(condition "$ns" ondelete Ready status)" "True"
sleep 2
expect_eq "OnDelete: the running pod keeps its old values" "$(jp "$ns" pod/ondelete-0 '{.spec.containers[0].resources}')" "$OLD"
k -n "$ns" delete pod ondelete-0 --wait=false >/dev/null
eventually 90 pods_carry ondelete "$WANT" 1
echo "ok: OnDelete: the re-created pod carries the values"

echo "--- a Deployment and a StatefulSet named alike, each with its own scaler: each gets its own values"
make_deployment "$ns" same
make_workload StatefulSet same '{}'
make_scaler "$ns" same-deploy same Reconcile '[{"name":"app","requests":{"cpu":"110m"}}]'
ref_scaler same-sts StatefulSet same Reconcile '[{"name":"app","requests":{"cpu":"220m"}}]'
eventually 30 has_resources deployment same '{"requests":{"cpu":"110m"}}'
eventually 30 has_resources statefulset same '{"requests":{"cpu":"220m"}}'
eventually 30 cond_is same-deploy Ready UpToDate
eventually 30 cond_is same-sts Ready UpToDate
expect_eq "TARGET of the Deployment's scaler" "$(target_column same-deploy)" "Deployment/same"
expect_eq "TARGET of the StatefulSet's scaler" "$(target_column same-sts)" "StatefulSet/same"
k -n "$ns" set resources statefulset same -c app --requests=cpu=999m >/dev/null
eventually 30 has_resources statefulset same '{"requests":{"cpu":"220m"}}'
expect_eq "the Deployment untouched by the StatefulSet's restore" "$(res deployment same)" '{"requests":{"cpu":"110m"}}'

echo "--- a retarget across kinds affects both workloads: the conflict loser on the old one takes over"
make_scaler "$ns" same-old same Reconcile '[{"name":"app","requests":{"cpu":"330m"}}]'
eventually 30 cond_is same-old Ready Conflict  # same-deploy is older and keeps the Deployment
expect_eq "the loser wrote nothing" "$(res deployment same)" '{"requests":{"cpu":"110m"}}'
ref_scaler same-deploy DaemonSet same Reconcile '[{"name":"app","requests":{"cpu":"110m"}}]'
make_workload DaemonSet same '{}'
eventually 30 has_resources deployment same '{"requests":{"cpu":"330m"}}'
eventually 30 cond_is same-old Ready UpToDate
eventually 30 has_resources daemonset same '{"requests":{"cpu":"110m"}}'
expect_eq "TARGET after the retarget" "$(target_column same-deploy)" "DaemonSet/same"
expect_eq "no DeploymentFound after the retarget" "$(condition "$ns" same-deploy DeploymentFound)" ""
# The resync period is 1 h and nothing watches the workloads: each restore above came from a
# hint of the hook, which answered these reviews.
answered=$(metric 'controller_runtime_webhook_requests_total{webhook="/mutate-workloads",code="200"}')
[ "${answered%.*}" -gt 0 ] || fail "no review answered on /mutate-workloads"
echo "ok: /mutate-workloads answered $answered reviews (StatefulSets and DaemonSets)"

echo "--- without the webhooks, the resync restores each kind (one metadata read per namespace and kind)"
"$ROOT/certs/install.sh" --uninstall --local >/dev/null
stop_operator
WORK_DIR="" CERT_DIR="" WEBHOOK_PORT=""
start_operator --resync-period 2s --workers 4
trap 'unregister_webhooks; stop_operator' EXIT
for target in statefulset/same daemonset/same; do
  k -n "$ns" set resources "$target" -c app --requests=cpu=999m >/dev/null
done
eventually 30 has_resources statefulset same '{"requests":{"cpu":"220m"}}'
eventually 30 has_resources daemonset same '{"requests":{"cpu":"110m"}}'
corrections=$(metric vscaler_resync_corrections_total)
[ "${corrections%.*}" -ge 2 ] || fail "vscaler_resync_corrections_total = $corrections, want >= 2"
echo "ok: vscaler_resync_corrections_total = $corrections"
echo "PASS kinds_test"
