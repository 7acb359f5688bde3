#!/usr/bin/env bash
# Issue 32, `vscaler report` and `kubectl vscaler report` against a known cluster state: two
# scalers whose status (what vscaler writes: the template's requests, the recommendation) is set
# here through the status subresource, so the expected lines are known to the millicore. The
# report reads scalers, and the template of a scaler in Off (whose status shows what would be
# applied), through the kubeconfig given. Checked: the table's lines and totals,
# JSON, YAML and CSV, the kubectl plugin link, a kubeconfig authenticating through a credential
# plugin (users[].exec) as a service account with read access only, and clear errors for an
# unknown format, a kubeconfig that does not work, a refused token, and a namespace with no scaler.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

install_crd
ns=$(unique_namespace report)
work=$(mktemp -d /tmp/vscaler-report-e2e.XXXXXX)
trap 'rm -rf "$work"' EXIT

scaler() { # NAME SPEC STATUS
  k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"$1"},"spec":$2}
JSON
  k -n "$ns" patch vsc "$1" --subresource=status --type merge -p "{\"status\":$3}" >/dev/null
}
scaler web '{"deploymentName":"web"}' '{"target":{"ref":"Deployment/web"},
  "containers":[{"name":"app","requests":{"cpu":"500m","memory":"512Mi"}}],
  "recommendation":{"containerRecommendations":[{"containerName":"app",
    "target":{"cpu":"352m","memory":"489Mi"},"lowerBound":{"cpu":"300m","memory":"400Mi"},
    "upperBound":{"cpu":"1","memory":"1Gi"}}]}}'
# In Off the status shows what vscaler would apply (here the target); the report reads what the
# template requests from the StatefulSet itself.
k -n "$ns" apply -f - >/dev/null <<'JSON'
{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"db"},
 "spec":{"replicas":0,"serviceName":"db","selector":{"matchLabels":{"app":"db"}},
  "template":{"metadata":{"labels":{"app":"db"}},"spec":{"containers":[{"name":"pg",
   "image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"1","memory":"1Gi"}}}]}}}}
JSON
scaler db '{"targetRef":{"apiVersion":"apps/v1","kind":"StatefulSet","name":"db"},"updateMode":"Off"}' \
  '{"target":{"ref":"StatefulSet/db"},"containers":[{"name":"pg","requests":{"cpu":"1500m","memory":"768Mi"}}],
  "recommendation":{"containerRecommendations":[{"containerName":"pg","target":{"cpu":"1500m","memory":"768Mi"},
    "lowerBound":{"cpu":"1","memory":"512Mi"},"upperBound":{"cpu":"2","memory":"1Gi"}}]}}'

report() { "$VSCALER_BIN" report --kubeconfig "$KUBECONFIG" "$@"; }
echo "--- the table"
report -n "$ns" | tee "$work/table.txt" | sed 's/^/   /'
fields() { awk -v row="$1" 'NR == row { $1 = $1; print }' "$work/table.txt"; }
expect_eq "db's line" "$(fields 2)" "$ns db StatefulSet/db Off pg 1 1.5 1..2 -500m 1Gi 768Mi 512Mi..1Gi +256Mi"
expect_eq "web's line" "$(fields 3)" "$ns web Deployment/web Auto app 500m 352m 300m..1 +148m 512Mi 489Mi 400Mi..1Gi +23Mi"
expect_eq "totals" "$(fields 4)" "TOTAL 2 containers 1.5 1.85 -352m 1.5Gi 1.23Gi +279Mi"

echo "--- json, yaml, csv"
report -n "$ns" -o json > "$work/report.json"
expect_eq "json: web's cpu difference" \
  "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["containers"][1]["difference"]["cpu"])' "$work/report.json")" "+148m"
report -n "$ns" -o yaml > "$work/report.yaml"
grep -q 'recommended:' "$work/report.yaml" || fail "yaml: no totals.recommended"
python3 - "$work/report.json" "$work/report.yaml" <<'PY' || fail "yaml and json disagree"
import json, sys
try:
    import yaml
except ImportError:
    sys.exit(0)  # PyYAML absent: the grep above stands
a = json.load(open(sys.argv[1]))
b = yaml.safe_load(open(sys.argv[2]))
sys.exit(0 if a == b else 1)
PY
report -n "$ns" -o csv > "$work/report.csv"
expect_eq "csv lines" "$(wc -l < "$work/report.csv")" 3
grep -qx "$ns,web,Deployment/web,Auto,app,500m,352m,300m,1,512Mi,489Mi,400Mi,1Gi,+148m,+23Mi" "$work/report.csv" ||
  fail "csv: web's line is not as set: $(cat "$work/report.csv")"

echo "--- kubectl vscaler report (the kubectl-vscaler link on PATH)"
mkdir -p "$work/bin"
ln -s "$VSCALER_BIN" "$work/bin/kubectl-vscaler"
PATH="$work/bin:$PATH" k vscaler report -n "$ns" -o csv > "$work/plugin.csv"
cmp -s "$work/plugin.csv" "$work/report.csv" || fail "kubectl vscaler report differs from vscaler report"
echo "ok: kubectl vscaler report gives the same lines"

echo "--- a kubeconfig whose user is a credential plugin (users[].exec, as EKS, GKE and AKS write)"
# A service account that may read what the report reads, and a plugin handing out its token the
# way `aws eks get-token` does: an ExecCredential on stdout, with an expiry.
k -n "$ns" create serviceaccount reporter >/dev/null
k -n "$ns" create role report-reader --verb=get,list \
  --resource=verticalscalers.scaling.vscaler.dev,deployments.apps,statefulsets.apps,daemonsets.apps >/dev/null
k -n "$ns" create rolebinding reporter --role=report-reader --serviceaccount="$ns:reporter" >/dev/null
token=$(k -n "$ns" create token reporter --duration 10m)
expires=$(date -u -d '+9 min' +%Y-%m-%dT%H:%M:%SZ)
mkdir -p "$work/plugin"
cat > "$work/plugin/get-token" <<SH
#!/bin/sh
echo "\$* \$REGION" >> "$work/plugin/calls"
echo '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"$token","expirationTimestamp":"$expires"}}'
SH
chmod 700 "$work/plugin/get-token"
server=$(k config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
ca=$(k config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}')
cat > "$work/plugin/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "$server", certificate-authority-data: "$ca"}
users:
- name: eks-user
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./get-token
      args: [eks, get-token, --cluster-name, c]
      env: [{name: REGION, value: eu-west-1}]
      interactiveMode: Never
contexts:
- name: c
  context: {cluster: c, user: eks-user, namespace: "$ns"}
current-context: c
KC
"$VSCALER_BIN" report --kubeconfig "$work/plugin/kubeconfig" -o csv > "$work/exec.csv" ||
  fail "the report failed through the credential plugin"
cmp -s "$work/exec.csv" "$work/report.csv" || fail "through the plugin: $(cat "$work/exec.csv")"
expect_eq "the plugin's runs (args and env as the kubeconfig says)" "$(cat "$work/plugin/calls")" \
  "eks get-token --cluster-name c eu-west-1"
sed -i 's/"token":"[^"]*"/"token":"revoked"/' "$work/plugin/get-token"
out=$("$VSCALER_BIN" report --kubeconfig "$work/plugin/kubeconfig" 2>&1) &&
  fail "a token the API server refuses was accepted"
echo "$out" | grep -qi "unauthorized\|401" || fail "unclear: $out"
echo "$out" | grep -q "revoked" && fail "the token reached the message: $out"
echo "ok: a refused token is reported without the token: $(echo "$out" | head -1)"

echo "--- errors"
out=$(report -n "$ns" -o xml 2>&1) && fail "an unknown format was accepted"
echo "$out" | grep -q -- '--output: "xml" is not one of table, json, yaml, csv' || fail "unclear: $out"
out=$("$VSCALER_BIN" report --kubeconfig "$work/none" 2>&1) && fail "a missing kubeconfig was accepted"
echo "$out" | grep -q "no usable kubeconfig" || fail "unclear: $out"
out=$(report -n "$ns-empty" 2>&1) || fail "no scalers is no error (as kubectl get), yet exit $?: $out"
echo "$out" | grep -q "no VerticalScalers found in namespace $ns-empty" || fail "unclear: $out"
echo "ok: $out (exit 0)"
# A program reading -o json gets an empty report, not nothing; kubectl's -ojson form works.
out=$(report -n "$ns-empty" -ojson 2>/dev/null) || fail "-ojson on an empty namespace failed"
echo "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d["containers"] == [] else 1)' ||
  fail "not an empty JSON report: $out"
echo "ok: -ojson on an empty namespace prints an empty report"
echo "PASS"
