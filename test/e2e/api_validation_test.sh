#!/usr/bin/env bash
# The VerticalScaler API as a user meets it through kubectl, with the real operator's webhooks
# registered: the seed's two-line scaler is accepted; an unquoted `updateMode: Off` (YAML's
# boolean false) is denied by the mutating entry with the hint to quote it, for the scaler's mode
# and a container's, through client-side and server-side apply (where the schema's typed patch
# refuses a container's, naming it); StatefulSet and DaemonSet targets are accepted, other kinds
# refused naming the field (spec.targetRef.kind); the TARGET column shows Kind/name.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
export KUBECTL
install_crd
start_operator --resync-period 1h
"$ROOT/certs/install.sh" --local --port "$WEBHOOK_PORT" --cert-dir "$CERT_DIR" >/dev/null 2>&1 ||
  fail "certs/install.sh --local failed"
cleanup_webhooks() { "$ROOT/certs/install.sh" --uninstall --local >/dev/null 2>&1 || true; stop_operator; }
trap cleanup_webhooks EXIT
ns=$(unique_namespace api-validation)

# apply_yaml SPEC_YAML [NAME [KUBECTL_APPLY_FLAG...]]: kubectl apply of a scaler named NAME (s)
# with this spec (YAML, as a user writes it); prints kubectl's output and returns its status.
apply_yaml() {
  printf 'apiVersion: scaling.vscaler.dev/v1beta1\nkind: VerticalScaler\nmetadata: {name: %s}\nspec:\n%s\n' \
    "${2:-s}" "$1" | k -n "$ns" apply "${@:3}" -f - 2>&1
}

echo "--- the webhook configuration is in force (the API server applies it asynchronously)"
eventually 30 bash -c "printf 'apiVersion: scaling.vscaler.dev/v1beta1\nkind: VerticalScaler\nmetadata: {name: probe}\nspec:\n  deploymentName: web\n  updateMode: Off\n' |
  $KUBECTL -n $ns apply --dry-run=server -f - 2>&1 | grep -q 'quoted'"

echo "--- an unquoted Off is denied with the hint to quote it"
out=$(apply_yaml '  deploymentName: web
  updateMode: Off') && fail "updateMode: Off (unquoted) was accepted"
case "$out" in *'write updateMode: "Off" (quoted)'*) echo "ok: $out" ;; *) fail "no quoting hint: $out" ;; esac
out=$(apply_yaml '  deploymentName: web
  containers:
  - name: istio-proxy
    mode: Off') && fail "mode: Off (unquoted) was accepted"
case "$out" in *'spec.containers[0].mode'*'write mode: "Off" (quoted)'*) echo "ok: $out" ;;
  *) fail "no quoting hint for the container mode: $out" ;; esac
echo "--- the same through server-side apply (Helm 4, Flux): its typed patch lets the boolean reach the hook"
out=$(apply_yaml '  deploymentName: web
  updateMode: Off' s --server-side) && fail "updateMode: Off (unquoted) was accepted by server-side apply"
case "$out" in *'write updateMode: "Off" (quoted)'*) echo "ok: $out" ;; *) fail "no quoting hint under server-side apply: $out" ;; esac
# A container's mode stays typed (its CEL rule must see it): the typed patch refuses it, naming it.
out=$(apply_yaml '  deploymentName: web
  containers:
  - name: istio-proxy
    mode: Off' s --server-side) && fail "mode: Off (unquoted) was accepted by server-side apply"
case "$out" in *'.mode: expected string'*) echo "ok: $out" ;;
  *) fail "the container mode under server-side apply: not refused naming the field: $out" ;; esac
out=$(apply_yaml '  deploymentName: web
  updateMode: "Off"' s --server-side) || fail "updateMode: \"Off\" (quoted) was refused by server-side apply: $out"
k -n "$ns" delete vsc s >/dev/null
out=$(apply_yaml '  deploymentName: web
  updateMode: "Off"') || fail "updateMode: \"Off\" (quoted) was refused: $out"
k -n "$ns" delete vsc s >/dev/null

echo "--- the seed's scaler is accepted as it is"
out=$(apply_yaml '  deploymentName: web' seed) || fail "the seed's scaler was refused: $out"
expect_eq "defaulted updateMode" "$(jp "$ns" vsc/seed '{.spec.updateMode}')" "Auto"
k -n "$ns" delete vsc seed >/dev/null  # one scaler per workload: the one below must be active

echo "--- StatefulSet and DaemonSet targets are accepted; any other kind is refused, naming the field"
for kind in StatefulSet DaemonSet; do
  out=$(apply_yaml "  targetRef: {apiVersion: apps/v1, kind: $kind, name: db}" "kind-$(tr '[:upper:]' '[:lower:]' <<<"$kind")") ||
    fail "a $kind target was refused: $out"
  echo "ok: a $kind target is accepted"
done
k -n "$ns" delete vsc kind-statefulset kind-daemonset >/dev/null
out=$(apply_yaml '  targetRef: {apiVersion: apps/v1, kind: CronJob, name: nightly}') &&
  fail "a CronJob target was accepted"
case "$out" in *spec.targetRef.kind*) echo "ok: $out" ;; *) fail "not naming spec.targetRef.kind: $out" ;; esac

echo "--- TARGET shows Kind/name, for deploymentName and targetRef alike"
make_deployment "$ns" web
out=$(apply_yaml '  targetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  updateMode: Reconcile
  containers:
  - name: app
    requests: {cpu: 250m}' byref) || fail "a Deployment targetRef was refused: $out"
eventually 30 bash -c "[ \"\$($KUBECTL -n $ns get vsc byref -o jsonpath='{.status.target.ref}')\" = Deployment/web ]"
expect_eq "TARGET column" "$(k -n "$ns" get vsc byref --no-headers | awk '{print $2}')" "Deployment/web"
expect_eq "CPU column" "$(k -n "$ns" get vsc byref --no-headers | awk '{print $4}')" "250m"
expect_eq "TargetFound" "$(condition "$ns" byref TargetFound)" "Found"
expect_eq "DeploymentFound kept" "$(condition "$ns" byref DeploymentFound)" "Found"
echo "PASS"
