#!/usr/bin/env bash
# The Helm chart charts/vscaler against manifests/, with real helm (test/cluster/build.sh helm)
# and kubectl, no cluster:
#   1. charts/generate.sh --check: the chart's copies of manifests/ (crds/, files/) are current;
#   2. helm lint and helm lint --strict pass;
#   3. `helm template` with default values equals `kubectl kustomize manifests/` object by object
#      (test/scripts/helm_chart_compare.py: Helm's labels, the generated Secret and caBundle
#      aside, which are checked: every caBundle is the Secret's ca.crt); the Namespace is rendered
#      only with namespace.create=true, then equal to manifests/namespace.yaml;
#   4. certManager.enabled=true equals manifests/ with the cert-manager Component (Issuers,
#      Certificates, inject-ca-from on both webhook configurations, no generated Secret), and
#      watchNamespace=apps equals manifests/ with the namespaced Component;
#   5. values that break values.schema.json fail, naming the field; values reach the flags; the
#      ServiceMonitor (serviceMonitor.enabled) scrapes the metrics port as metricsSecure serves it;
#   6. a rule added to manifests/rbac.yaml and a policy file added to manifests/kustomization.yaml
#      (in a copy of the repository) make steps 1 and 3 fail until charts/generate.sh runs.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../cluster/versions.sh
. "$root/test/cluster/versions.sh"
fail() { echo "FAIL: helm_chart_test: $*" >&2; exit 1; }
begin=$SECONDS

"$root/test/cluster/build.sh" helm >/dev/null || fail "could not build helm (test/cluster/build.sh helm)"
helm=$HELM_BIN_DIR/helm
kubectl=${KUBECTL:-$KUBE_BIN_DIR/kubectl}
[ -x "$kubectl" ] || fail "no kubectl at $kubectl: run make cluster-build (or set KUBECTL)"
python3 -c 'import yaml' 2>/dev/null || fail "python3 lacks PyYAML (apt-get install python3-yaml)"
compare=$root/test/scripts/helm_chart_compare.py
work=$(mktemp -d /tmp/vscaler-helm-chart-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
chart=$root/charts/vscaler

# render CHART OUT [HELM ARGS...]: helm template of the release "vscaler" in vscaler-system.
render() {
  local c=$1 out=$2
  shift 2
  "$helm" template vscaler "$c" -n vscaler-system --include-crds "$@" >"$out" 2>"$out.err" ||
    fail "helm template $* failed: $(cat "$out.err")"
}

# 1. The copies are current.
"$root/charts/generate.sh" --check || fail "charts/vscaler is stale: run charts/generate.sh"
echo "ok: charts/vscaler/crds and files/ are current copies of manifests/"

# 2. Lint.
"$helm" lint "$chart" >"$work/lint" 2>&1 || fail "helm lint: $(cat "$work/lint")"
"$helm" lint --strict "$chart" >"$work/lint" 2>&1 || fail "helm lint --strict: $(cat "$work/lint")"
echo "ok: helm lint and helm lint --strict pass"

# 3. Default values = kubectl kustomize manifests/.
"$kubectl" kustomize "$root/manifests" >"$work/kustomize.yaml" || fail "kubectl kustomize manifests/ failed"
render "$chart" "$work/default.yaml"
grep -q '^kind: Namespace' "$work/default.yaml" && fail "default values render a Namespace (namespace.create defaults to false)"
out=$(python3 "$compare" "$work/kustomize.yaml" "$work/default.yaml" --skip-kind Namespace --certs-from-chart) ||
  fail "helm template (default values) differs from kubectl kustomize manifests/:
$out"
echo "ok: helm template (default values) = kubectl kustomize manifests/ but the Namespace: $out"
render "$chart" "$work/ns.yaml" --set namespace.create=true
out=$(python3 "$compare" "$work/kustomize.yaml" "$work/ns.yaml" --certs-from-chart) ||
  fail "helm template --set namespace.create=true differs from kubectl kustomize manifests/:
$out"
echo "ok: with namespace.create=true, the Namespace too: $out"

# 4. cert-manager = manifests/ with the cert-manager Component.
mkdir -p "$work/cm"
ln -s "$root/manifests" "$work/cm/m"
printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [m]\ncomponents: [m/cert-manager]\n' \
  >"$work/cm/kustomization.yaml"
"$kubectl" kustomize "$work/cm" >"$work/kustomize-cm.yaml" || fail "kubectl kustomize with the cert-manager Component failed"
render "$chart" "$work/cm.yaml" --set certManager.enabled=true
out=$(python3 "$compare" "$work/kustomize-cm.yaml" "$work/cm.yaml" --skip-kind Namespace) ||
  fail "helm template --set certManager.enabled=true differs from manifests/ + cert-manager/:
$out"
[ "$(grep -c '^kind: Certificate$' "$work/cm.yaml")" = 2 ] || fail "certManager.enabled=true: not 2 Certificates"
[ "$(grep -c 'cert-manager.io/inject-ca-from: vscaler-system/vscaler-webhook$' "$work/cm.yaml")" = 2 ] ||
  fail "certManager.enabled=true: inject-ca-from is not on both webhook configurations"
grep -q '^kind: Secret$' "$work/cm.yaml" && fail "certManager.enabled=true still renders a Secret"
grep -q 'caBundle' "$work/cm.yaml" && fail "certManager.enabled=true still renders a caBundle"
echo "ok: certManager.enabled=true = manifests/ + cert-manager/ (2 Certificates, inject-ca-from, no Secret, no caBundle): $out"

# 4b. watchNamespace = manifests/ with the namespaced Component (its namespace "apps" as shipped):
# a Role and RoleBinding there in place of the ClusterRole vscaler, the ClusterRole vscaler-cluster,
# --namespace=apps, and every webhook's namespaceSelector admitting apps alone.
mkdir -p "$work/nsd"
ln -s "$root/manifests" "$work/nsd/m"
printf 'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [m]\ncomponents: [m/namespaced]\n' \
  >"$work/nsd/kustomization.yaml"
"$kubectl" kustomize "$work/nsd" >"$work/kustomize-nsd.yaml" || fail "kubectl kustomize with the namespaced Component failed"
render "$chart" "$work/nsd.yaml" --set watchNamespace=apps
out=$(python3 "$compare" "$work/kustomize-nsd.yaml" "$work/nsd.yaml" --skip-kind Namespace --certs-from-chart) ||
  fail "helm template --set watchNamespace=apps differs from manifests/ + namespaced/:
$out"
grep -q '^  name: vscaler$' <(awk '/^kind: ClusterRole$/ { c = 1; next } /^kind:/ { c = 0 } c' "$work/nsd.yaml") &&
  fail "watchNamespace=apps still renders the ClusterRole vscaler"
[ "$(grep -c 'operator: In' "$work/nsd.yaml")" = 5 ] || fail "watchNamespace=apps: not 5 webhooks selecting apps"
echo "ok: watchNamespace=apps = manifests/ + namespaced/ (Role and RoleBinding in apps, no ClusterRole vscaler, --namespace=apps, 5 webhooks selecting apps): $out"

# 5. The schema names the field of a bad value; good values reach the flags.
schema_rejects() { # FIELD_IN_MESSAGE HELM_ARGS...
  local field=$1 err
  shift
  if err=$("$helm" template vscaler "$chart" -n vscaler-system "$@" 2>&1 >/dev/null); then
    fail "helm template $* was accepted"
  fi
  grep -q "at '$field'" <<<"$err" || fail "helm template $*: the error does not name $field: $err"
}
schema_rejects /replicas --set replicas=-1
schema_rejects /replicas --set replicas=two
schema_rejects /recommenderInterval --set recommenderInterval=soon
schema_rejects /recommenderInterval --set recommenderInterval=60 # an integer but 0 has no unit
schema_rejects /prometheusAddress --set prometheusAddress=prom:9090
schema_rejects /image/pullPolicy --set image.pullPolicy=Sometimes
schema_rejects /leaderElect --set leaderElect=maybe
schema_rejects /watchNamespace --set watchNamespace=Team_A
schema_rejects /extraVolumeMounts/0 --set-json 'extraVolumeMounts=[{"name":"x"}]'
schema_rejects '' --set replica=2
echo "ok: values.schema.json rejects replicas -1 and two, a bad interval, address, pullPolicy, leaderElect, namespace, a mount without a path, an unknown key, naming the field"
# Several replicas without leader election would each lead: refused, naming the fix.
if err=$("$helm" template vscaler "$chart" -n vscaler-system --set replicas=2,leaderElect=false 2>&1 >/dev/null); then
  fail "replicas=2 with leaderElect=false was accepted"
fi
grep -q "need leaderElect=true" <<<"$err" || fail "replicas=2 leaderElect=false: $err"
# recommenderInterval=0 (an integer with --set) turns recommendations off; one replica, no PDB.
render "$chart" "$work/off.yaml" --set recommenderInterval=0,replicas=1,leaderElect=false
grep -q -- "--recommender-interval=0" "$work/off.yaml" || fail "recommenderInterval=0 did not reach the flag"
grep -q "^kind: PodDisruptionBudget" "$work/off.yaml" && fail "one replica still renders a PDB (it would block drains)"
render "$chart" "$work/values.yaml" --set replicas=3,leaderElect=true,metricsSecure=false,recommenderInterval=30s \
  --set prometheusAddress=http://prometheus.monitoring:9090,dashboardAddress=,logLevel=debug \
  --set image.repository=registry.example.com/vscaler,image.tag=0.2.0,networkPolicy.enabled=false,pdb.enabled=false \
  --set 'extraArgs[0]=--prometheus-timeout=10s' --set-json 'tolerations=[{"key":"t","operator":"Exists"}]' \
  --set-json 'extraVolumes=[{"name":"prometheus-ca","configMap":{"name":"prometheus-ca"}}]' \
  --set-json 'extraVolumeMounts=[{"name":"prometheus-ca","mountPath":"/etc/prometheus-ca","readOnly":true}]'
python3 - "$work/values.yaml" <<'PY' || fail "values did not reach the Deployment as expected"
import sys, yaml
docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d]
kinds = {d["kind"] for d in docs}
assert "NetworkPolicy" not in kinds and "PodDisruptionBudget" not in kinds, kinds
dep = next(d for d in docs if d["kind"] == "Deployment")
c = dep["spec"]["template"]["spec"]["containers"][0]
want = ["--webhook-port=9443", "--cert-dir=/tmp/k8s-webhook-server/serving-certs", "--metrics-addr=:8080",
        "--health-addr=:8081", "--log-level=debug", "--leader-elect", "--recommender-interval=30s",
        "--prometheus-address=http://prometheus.monitoring:9090", "--dashboard-addr=", "--prometheus-timeout=10s"]
assert c["args"] == want, c["args"]
assert c["image"] == "registry.example.com/vscaler:0.2.0", c["image"]
assert dep["spec"]["replicas"] == 3
assert dep["spec"]["template"]["spec"]["tolerations"] == [{"key": "t", "operator": "Exists"}]
volumes = dep["spec"]["template"]["spec"]["volumes"]
assert [v["name"] for v in volumes] == ["serving-certs", "prometheus-ca"], volumes
assert volumes[1]["configMap"] == {"name": "prometheus-ca"}, volumes
mounts = c["volumeMounts"]
assert [m["mountPath"] for m in mounts] == ["/tmp/k8s-webhook-server/serving-certs", "/etc/prometheus-ca"], mounts
PY
echo "ok: replicas, leaderElect, metricsSecure, recommenderInterval, prometheusAddress, dashboardAddress, image, extraArgs, tolerations, extraVolumes/extraVolumeMounts, networkPolicy/pdb toggles reach the objects"

# A ServiceMonitor on request: HTTPS with the webhook certificate's CA and the scraper's token
# (bound to vscaler-metrics-reader), plain HTTP without metricsSecure; none by default.
grep -q '^kind: ServiceMonitor' "$work/default.yaml" && fail "a ServiceMonitor is rendered by default"
render "$chart" "$work/sm.yaml" --set serviceMonitor.enabled=true,serviceMonitor.interval=15s \
  --set serviceMonitor.labels.release=kps,serviceMonitor.scraper.name=prometheus,serviceMonitor.scraper.namespace=monitoring \
  --set serviceMonitor.labels.app\\.kubernetes\\.io/name=vscaler
render "$chart" "$work/sm-http.yaml" --set serviceMonitor.enabled=true,metricsSecure=false,serviceMonitor.interval=
python3 - "$work/sm.yaml" "$work/sm-http.yaml" <<'PY' || fail "the ServiceMonitor is not as asked"
import sys, yaml
def objects(path):
    return [d for d in yaml.safe_load_all(open(path)) if d]
docs = objects(sys.argv[1])
sm = next(d for d in docs if d["kind"] == "ServiceMonitor")
svc = next(d for d in docs if d["kind"] == "Service")
assert sm["metadata"]["namespace"] == "vscaler-system" and sm["metadata"]["labels"]["release"] == "kps"
assert all(svc["metadata"]["labels"].get(k) == v for k, v in sm["spec"]["selector"]["matchLabels"].items())
port = sm["spec"]["endpoints"][0]
assert port["port"] in [p["name"] for p in svc["spec"]["ports"]], port
assert port["interval"] == "15s" and port["scheme"] == "https", port
assert port["tlsConfig"] == {"ca": {"secret": {"name": "vscaler-webhook-tls", "key": "ca.crt"}},
                             "serverName": "vscaler-webhook.vscaler-system.svc"}, port
binding = next(d for d in docs if d["kind"] == "ClusterRoleBinding" and d["metadata"]["name"] == "vscaler-metrics-reader")
assert binding["roleRef"]["name"] == "vscaler-metrics-reader"
assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}]
plain = next(d for d in objects(sys.argv[2]) if d["kind"] == "ServiceMonitor")["spec"]["endpoints"][0]
assert plain["scheme"] == "http" and "tlsConfig" not in plain and "bearerTokenFile" not in plain, plain
assert "interval" not in plain, plain  # "" leaves Prometheus' own
PY
if err=$("$helm" template vscaler "$chart" -n vscaler-system --set serviceMonitor.enabled=true,serviceMonitor.scraper.name=p 2>&1 >/dev/null); then
  fail "a scraper without a namespace was accepted"
fi
grep -q "serviceMonitor.scraper.namespace" <<<"$err" || fail "scraper without a namespace: $err"
schema_rejects /serviceMonitor/interval --set serviceMonitor.interval=often
echo "ok: serviceMonitor: none by default; HTTPS with the certificate's CA, the interval and labels asked, the scraper bound to vscaler-metrics-reader; HTTP without metricsSecure"

# 6. Single source of truth: a change to manifests/ reaches the chart through charts/generate.sh.
copy=$work/repo
mkdir -p "$copy"
cp -r "$root/manifests" "$root/charts" "$copy/"
mkdir -p "$copy/test/scripts" && cp "$compare" "$copy/test/scripts/"
python3 - "$copy/manifests" <<'PY'
import sys
m = sys.argv[1]
rbac = open(f"{m}/rbac.yaml").read()
anchor = "- apiGroups: [authorization.k8s.io]\n  resources: [subjectaccessreviews]\n  verbs: [create]\n"
assert rbac.count(anchor) == 1, "rbac.yaml: the anchor rule is not there once"
open(f"{m}/rbac.yaml", "w").write(rbac.replace(anchor, anchor + "- apiGroups: [\"\"]\n  resources: [helm-chart-test]\n  verbs: [list]\n"))
open(f"{m}/helm-chart-test-policy.yaml", "w").write("""apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata:
  name: helm-chart-test
  labels:
    app.kubernetes.io/name: vscaler
spec:
  policyName: helm-chart-test
  validationActions: [Deny]
""")
k = open(f"{m}/kustomization.yaml").read().replace("- admission-policy.yaml\n", "- admission-policy.yaml\n- helm-chart-test-policy.yaml\n")
open(f"{m}/kustomization.yaml", "w").write(k)
PY
"$copy/charts/generate.sh" --check >"$work/check" 2>&1 && fail "charts/generate.sh --check passed after manifests/rbac.yaml changed"
grep -q rbac.yaml "$work/check" || fail "charts/generate.sh --check does not name rbac.yaml: $(cat "$work/check")"
"$kubectl" kustomize "$copy/manifests" >"$work/kustomize-copy.yaml"
render "$copy/charts/vscaler" "$work/copy-stale.yaml"
out=$(python3 "$compare" "$work/kustomize-copy.yaml" "$work/copy-stale.yaml" --skip-kind Namespace --certs-from-chart) &&
  fail "the comparison passed with a rule and a policy the chart lacks"
grep -q 'differs: rbac.authorization.k8s.io/v1/ClusterRole/-/vscaler$' <<<"$out" || fail "the comparison did not report the ClusterRole: $out"
grep -q 'only in kubectl kustomize manifests/: .*ValidatingAdmissionPolicyBinding/-/helm-chart-test' <<<"$out" ||
  fail "the comparison did not report the new policy binding: $out"
"$copy/charts/generate.sh" >/dev/null
"$copy/charts/generate.sh" --check || fail "charts/generate.sh --check fails right after charts/generate.sh"
render "$copy/charts/vscaler" "$work/copy.yaml"
out=$(python3 "$compare" "$work/kustomize-copy.yaml" "$work/copy.yaml" --skip-kind Namespace --certs-from-chart) ||
  fail "after charts/generate.sh the chart still differs: $out"
echo "ok: a new rbac rule and a new policy file in manifests/ fail the check until charts/generate.sh copies them ($out)"
echo "PASS helm_chart_test ($((SECONDS - begin))s)"
