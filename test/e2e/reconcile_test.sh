#!/usr/bin/env bash
# Issue 5 end-to-end: vscaler runs as a process with the webhook NOT registered and
# --resync-period 2s, so everything here is the informer, the reconciler and the resync.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

install_crd
start_operator --resync-period 2s --workers 4
ns=$(unique_namespace reconcile)
res() { jp "$ns" "deploy/$1" "{.spec.template.spec.containers[${2:-0}].resources}"; }
gen() { jp "$ns" "deploy/$1" '{.metadata.generation}'; }
rv() { jp "$ns" "$1" '{.metadata.resourceVersion}'; }
APP_SPEC='[{"name":"app","requests":{"cpu":"250m","memory":"128Mi"},"limits":{"cpu":"500m"}}]'
WANT='{"limits":{"cpu":"500m"},"requests":{"cpu":"250m","memory":"128Mi"}}'
has_resources() { [ "$(res "$1" "${3:-0}")" = "$2" ]; }
cond_is() { [ "$(condition "$ns" "$1" "$2")" = "$3" ]; }

echo "--- 1. a scaler for an existing Deployment: applied, Ready, exactly one generation increment"
make_deployment "$ns" one
expect_eq "generation before" "$(gen one)" "1"
make_scaler "$ns" one one Reconcile "$APP_SPEC"
eventually 30 has_resources one "$WANT"
eventually 30 cond_is one Ready UpToDate
expect_eq "Ready status" "$(condition "$ns" one Ready status)" "True"
expect_eq "Scaled reason" "$(condition "$ns" one Scaled)" "Applied"
expect_eq "generation after" "$(gen one)" "2"
expect_eq "observedGeneration" "$(jp "$ns" vsc/one '{.status.observedGeneration}')" "1"
expect_eq "status.deployment.found" "$(jp "$ns" vsc/one '{.status.deployment.found}')" "true"

echo "--- 2. a scaler created before its Deployment: applied once the Deployment exists"
make_scaler "$ns" two two Reconcile "$APP_SPEC"
eventually 30 cond_is two DeploymentFound NotFound
make_deployment "$ns" two
eventually 30 has_resources two "$WANT"
eventually 30 cond_is two Ready UpToDate

echo "--- 3. the Deployment deleted: DeploymentFound=False within one resync, scaler kept; re-created: applied"
k -n "$ns" delete deployment two >/dev/null
eventually 10 cond_is two DeploymentFound NotFound
expect_eq "scaler kept" "$(k -n "$ns" get vsc two -o name)" "verticalscaler.scaling.vscaler.dev/two"
make_deployment "$ns" two
eventually 30 has_resources two "$WANT"

echo "--- 4. resources changed by a user: restored; other changes and scale: nothing written"
k -n "$ns" set resources deployment one -c app --requests=cpu=400m >/dev/null
eventually 30 has_resources one "$WANT"
corrections=$(metric vscaler_resync_corrections_total)
k -n "$ns" set env deployment one FOO=bar >/dev/null
k -n "$ns" scale deployment one --replicas=3 >/dev/null
before=$(rv deploy/one)
sleep 5  # two resync periods
expect_eq "resourceVersion after env+scale and two resyncs" "$(rv deploy/one)" "$before"
expect_eq "vscaler_resync_corrections_total" "$(metric vscaler_resync_corrections_total)" "$corrections"

echo "--- 5. updateMode Off: never written; status shows what would be applied"
make_deployment "$ns" off
make_scaler "$ns" off off Off "$APP_SPEC"
eventually 30 cond_is off Scaled UpdateModeOff
expect_eq "Off: resources untouched" "$(res off)" "{}"
expect_eq "Off: generation" "$(gen off)" "1"
expect_eq "Off: status shows the would-be cpu request" \
  "$(jp "$ns" vsc/off '{.status.containers[0].requests.cpu}')" "250m"

echo "--- 6. one container by name, one through *, a named one missing: ContainerNotFound, others applied"
make_deployment "$ns" multi '[{"name":"app","image":"pause"},{"name":"sidecar","image":"pause"}]'
make_scaler "$ns" multi multi Reconcile \
  '[{"name":"app","requests":{"cpu":"300m"}},{"name":"*","requests":{"cpu":"50m"}},{"name":"ghost","requests":{"cpu":"1"}}]'
eventually 30 cond_is multi Scaled ContainerNotFound
expect_eq "named container" "$(res multi 0)" '{"requests":{"cpu":"300m"}}'
expect_eq "wildcard container" "$(res multi 1)" '{"requests":{"cpu":"50m"}}'
case "$(condition "$ns" multi Scaled message)" in *ghost*) echo "ok: message names ghost" ;; *) fail "message does not name ghost" ;; esac

echo "--- 7. a key dropped from the scaler stays; the scaler deleted: the Deployment unchanged"
gen_before=$(jp "$ns" vsc/one '{.metadata.generation}')
make_scaler "$ns" one one Reconcile '[{"name":"app","requests":{"cpu":"250m"}}]'
# The new spec was reconciled (its generation observed), not merely left unseen.
observed_new() { [ "$(jp "$ns" vsc/one '{.status.observedGeneration}')" -gt "$gen_before" ]; }
eventually 30 observed_new
expect_eq "dropped keys stay" "$(res one)" "$WANT"
before=$(rv deploy/one)
k -n "$ns" delete vsc one >/dev/null
sleep 5
expect_eq "Deployment unchanged after scaler deletion" "$(rv deploy/one)" "$before"
expect_eq "Deployment still there" "$(k -n "$ns" get deploy one -o name)" "deployment.apps/one"

echo "--- 8. every invalid sample is rejected with a message naming the field"
for sample in "$ROOT"/test/data/scalers/invalid/*.yaml; do
  field=$(sed -n 's/^# field: //p' "$sample")
  if out=$(k -n "$ns" apply -f "$sample" 2>&1); then fail "$(basename "$sample") was accepted"; fi
  case "$out" in *"$field"*) echo "ok: $(basename "$sample" .yaml) rejected naming $field" ;;
    *) fail "$(basename "$sample"): message does not name $field: $out" ;; esac
done

echo "--- 9. two scalers on one Deployment: the older applies, the younger shows Conflict and never writes"
make_deployment "$ns" shared
make_scaler "$ns" shared-a shared Reconcile '[{"name":"app","requests":{"cpu":"100m"}}]'
eventually 30 has_resources shared '{"requests":{"cpu":"100m"}}'
sleep 1.1  # creationTimestamp has second precision
make_scaler "$ns" shared-b shared Reconcile '[{"name":"app","requests":{"cpu":"900m"}}]'
eventually 30 cond_is shared-b Ready Conflict
sleep 3
expect_eq "the younger never wrote" "$(res shared)" '{"requests":{"cpu":"100m"}}'

echo "--- 10. requests above the Deployment's own limit: InvalidResources, no write"
make_deployment "$ns" limited '[{"name":"app","image":"pause","resources":{"limits":{"cpu":"200m"}}}]'
make_scaler "$ns" limited limited Reconcile '[{"name":"app","requests":{"cpu":"300m"}}]'
eventually 30 cond_is limited Scaled InvalidResources
expect_eq "InvalidResources: generation" "$(gen limited)" "1"

echo "--- 11. 200 scalers over 200 Deployments converge; the next three resyncs write nothing"
bulk=$(unique_namespace bulk)
{
  for i in $(seq 1 200); do
    cat <<YAML
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: d$i, namespace: $bulk}
spec:
  selector: {matchLabels: {app: d$i}}
  template:
    metadata: {labels: {app: d$i}}
    spec: {containers: [{name: app, image: pause}]}
---
apiVersion: scaling.vscaler.dev/v1beta1
kind: VerticalScaler
metadata: {name: s$i, namespace: $bulk}
spec: {deploymentName: d$i, updateMode: Reconcile, containers: [{name: app, requests: {cpu: 10m}}]}
YAML
  done
} | k apply -f - >/dev/null
converged() {
  [ "$(k -n "$bulk" get vsc -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].reason}{"\n"}{end}' | grep -c '^UpToDate$')" = 200 ]
}
start=$SECONDS
eventually 120 converged
echo "ok: 200 scalers converged in $((SECONDS - start))s"
versions() { k -n "$bulk" get deploy,vsc -o jsonpath='{range .items[*]}{.metadata.resourceVersion}{"\n"}{end}' | sort | md5sum; }
before=$(versions)
sleep 7  # three resync periods of 2s, jittered
expect_eq "resourceVersions of 200 Deployments and scalers after three resyncs" "$(versions)" "$before"
echo "PASS reconcile_test"
