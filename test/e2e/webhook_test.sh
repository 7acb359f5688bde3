#!/usr/bin/env bash
# Issue 6 end-to-end: vscaler with its url-based webhook configurations registered as in
# manifests/ (failurePolicy Ignore, matchConditions, reinvocationPolicy IfNeeded) and the resync
# effectively off, so every reaction here comes through the admission hint path.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

install_crd
WORK_DIR=$(mktemp -d /tmp/vscaler-e2e.XXXXXX)
CERT_DIR=$WORK_DIR/certs
WEBHOOK_PORT=$(free_port)
"$ROOT/certs/install.sh" --local --port "$WEBHOOK_PORT" --cert-dir "$CERT_DIR" >/dev/null
start_operator --resync-period 1h --workers 4
cleanup() {
  k delete validatingadmissionpolicybinding vscaler-e2e-deny --ignore-not-found >/dev/null 2>&1 || true
  k delete validatingadmissionpolicy vscaler-e2e-deny --ignore-not-found >/dev/null 2>&1 || true
  "$ROOT/certs/install.sh" --uninstall --local >/dev/null 2>&1 || true
  stop_operator
}
trap cleanup EXIT

ns=$(unique_namespace webhook)
res() { jp "$ns" "deploy/$1" "{.spec.template.spec.containers[0].resources}"; }
gen() { jp "$ns" "deploy/$1" '{.metadata.generation}'; }
rv() { jp "$ns" "deploy/$1" '{.metadata.resourceVersion}'; }

echo "--- the hint path: 100 edits in Reconcile mode, time from the write to the restored value"
make_deployment "$ns" fast
make_scaler "$ns" fast fast Reconcile '[{"name":"app","requests":{"cpu":"250m"}}]'
has_cpu() { [ "$(jp "$ns" deploy/fast '{.spec.template.spec.containers[0].resources.requests.cpu}')" = 250m ]; }
eventually 30 has_cpu
# With --resync-period 1h and no watch on Deployments, only the hook's hints can restore them.
enqueued=$(metric vscaler_webhook_enqueued_total)
python3 "$here/hint_latency.py" "$VSCALER_CLUSTER_DIR" "$ns" fast app 250m 100
after=$(metric vscaler_webhook_enqueued_total)
python3 -c "import sys; sys.exit(0 if $after >= $enqueued + 100 else 1)" ||
  fail "the hook enqueued $enqueued -> $after hints for 100 edits"
echo "ok: the hook enqueued $enqueued -> $after hints for 100 edits"

echo "--- matchConditions: the user's edit reaches the hook, vscaler's own restoring patch does not"
hooked() {  # admission requests vscaler's Deployment hook has served
  curl -fsS "$METRICS_URL" | awk '/^controller_runtime_webhook_requests_total\{/ && /mutate-deployments/ {n += $2}
    END {print n + 0}'
}
before=$(hooked)
gen_before=$(gen fast)
k -n "$ns" patch deploy fast --type strategic \
  -p '{"spec":{"template":{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"111m"}}}]}}}}' >/dev/null
eventually 30 has_cpu
expect_eq "generations: the edit and vscaler's restore" "$(gen fast)" "$((gen_before + 2))"
expect_eq "admission requests to the hook: the edit only" "$(hooked)" "$((before + 1))"

echo "--- Reconcile: an edit that leaves the declared values alone gets no restoring write"
reconciles() {
  curl -fsS "$METRICS_URL" | awk '/^controller_runtime_reconcile_total\{/ {n += $2} END {print n + 0}'
}
before=$(reconciles)
gen_before=$(gen fast)
k -n "$ns" set image deploy/fast app=registry.k8s.io/pause:3.9 >/dev/null
rv_edit=$(rv fast)
reconciled() { [ "$(reconciles)" -gt "$before" ]; }
eventually 30 reconciled
expect_eq "generations: the edit only" "$(gen fast)" "$((gen_before + 1))"
expect_eq "resourceVersion: nothing written after the edit" "$(rv fast)" "$rv_edit"
expect_eq "cpu after the edit" "$(jp "$ns" deploy/fast '{.spec.template.spec.containers[0].resources.requests.cpu}')" "250m"

echo "--- Auto: a Deployment created with other resources is stored with the declared ones"
make_scaler "$ns" auto auto Auto '[{"name":"app","requests":{"cpu":"300m","memory":"64Mi"}}]'
manifest() {  # the Deployment as a chart would render it: resources of its own
  cat <<JSON
{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"auto"},
 "spec":{"selector":{"matchLabels":{"app":"auto"}},"template":{"metadata":{"labels":{"app":"auto"}},
  "spec":{"containers":[{"name":"app","image":"$1","resources":{"requests":{"cpu":"100m","memory":"32Mi"}}}]}}}}
JSON
}
manifest registry.k8s.io/pause:3.10 | k -n "$ns" apply -f - >/dev/null
expect_eq "stored resources on create" "$(res auto)" '{"requests":{"cpu":"300m","memory":"64Mi"}}'
expect_eq "generation after create" "$(gen auto)" "1"

echo "--- Auto: a Helm-style reset of only the resources is a no-op write"
enqueued=$(metric vscaler_webhook_enqueued_total)
k -n "$ns" patch deploy auto --type merge \
  -p '{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"100m","memory":"32Mi"}}}]}}}}' >/dev/null
expect_eq "generation after a reset" "$(gen auto)" "1"
expect_eq "resources after a reset" "$(res auto)" '{"requests":{"cpu":"300m","memory":"64Mi"}}'

echo "--- Auto: a write that also changes the image raises the generation by exactly 1"
manifest registry.k8s.io/pause:3.9 | k -n "$ns" apply -f - >/dev/null
expect_eq "generation after image change" "$(gen auto)" "2"
expect_eq "resources after image change" "$(res auto)" '{"requests":{"cpu":"300m","memory":"64Mi"}}'
sleep 1
expect_eq "generation a second later (no second rollout)" "$(gen auto)" "2"

echo "--- dry-run=server: the patched resources are shown, nothing is enqueued"
enqueued=$(metric vscaler_webhook_enqueued_total)
shown=$(k -n "$ns" set resources deploy auto -c app --requests=cpu=777m --dry-run=server \
  -o jsonpath='{.spec.template.spec.containers[0].resources.requests.cpu}')
expect_eq "dry-run shows" "$shown" "300m"
expect_eq "vscaler_webhook_enqueued_total after dry-run" "$(metric vscaler_webhook_enqueued_total)" "$enqueued"

echo "--- matchConditions: an update that leaves the template unchanged never reaches vscaler"
k -n "$ns" label deploy auto touched=yes >/dev/null
expect_eq "vscaler_webhook_enqueued_total after a label change" "$(metric vscaler_webhook_enqueued_total)" "$enqueued"

echo "--- an update denied by a later validating step leads to no write"
make_deployment "$ns" denied
make_scaler "$ns" denied denied Reconcile '[{"name":"app","requests":{"cpu":"250m"}}]'
eventually 30 bash -c "[ \"\$($KUBECTL -n $ns get deploy denied -o jsonpath='{.spec.template.spec.containers[0].resources.requests.cpu}')\" = 250m ]"
k apply -f - >/dev/null <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: vscaler-e2e-deny}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules: [{apiGroups: [apps], apiVersions: [v1], operations: [UPDATE], resources: [deployments]}]
  validations:
  - expression: "object.metadata.name != 'denied'"
    message: denied by the e2e test
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: vscaler-e2e-deny}
spec:
  policyName: vscaler-e2e-deny
  validationActions: [Deny]
  matchResources:
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: $ns}}
YAML
policy_active() { ! k -n "$ns" label deploy denied probe=1 --dry-run=server >/dev/null 2>&1; }
eventually 30 policy_active
before=$(rv denied)
enqueued=$(metric vscaler_webhook_enqueued_total)
if k -n "$ns" set resources deploy denied -c app --requests=cpu=900m >/dev/null 2>&1; then
  fail "the denying policy let the update through"
fi
expect_eq "the denied update was hinted" "$(( $(metric vscaler_webhook_enqueued_total | cut -d. -f1) > ${enqueued%.*} ))" "1"
sleep 3
expect_eq "resourceVersion after the denied update" "$(rv denied)" "$before"
expect_eq "resources after the denied update" \
  "$(jp "$ns" deploy/denied '{.spec.template.spec.containers[0].resources.requests.cpu}')" "250m"
echo "PASS webhook_test"
