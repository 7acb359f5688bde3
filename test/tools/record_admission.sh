#!/usr/bin/env bash
# Records the AdmissionReview bodies the local API server sends for the Deployment and
# VerticalScaler operations the handlers' unit tests need, into test/data/admission/.
# Usage: VSCALER_CLUSTER_DIR=... test/tools/record_admission.sh   (a running local control plane)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cluster=${VSCALER_CLUSTER_DIR:-/tmp/vscaler-cluster}
export KUBECONFIG=$cluster/kubeconfig
k() { "$cluster/bin/kubectl" "$@"; }
out=$root/test/data/admission
work=$(mktemp -d)
trap 'kill $server 2>/dev/null; k delete mutatingwebhookconfiguration vscaler-record --ignore-not-found >/dev/null; rm -rf "$work"' EXIT
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=127.0.0.1" \
  -addext "subjectAltName=IP:127.0.0.1" -keyout "$work/tls.key" -out "$work/tls.crt" 2>/dev/null
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
rm -f "$out"/deployment-*.json "$out"/verticalscaler-*.json  # pod-create.json is shaped by hand (pod_handler_test.cpp)
python3 "$root/test/tools/record_admission.py" "$port" "$work" "$out" &
server=$!
k apply -f "$root/manifests/crd/verticalscalers.yaml" >/dev/null
ca=$(base64 -w0 < "$work/tls.crt")
k apply -f - >/dev/null <<YAML
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: vscaler-record}
webhooks:
- name: deployments.record.vscaler.dev
  admissionReviewVersions: [v1]
  sideEffects: NoneOnDryRun
  failurePolicy: Fail
  clientConfig: {url: "https://127.0.0.1:$port/mutate-deployments", caBundle: "$ca"}
  namespaceSelector: {matchLabels: {vscaler-record: "yes"}}
  rules:
  - {apiGroups: [apps], apiVersions: [v1], resources: [deployments], operations: [CREATE, UPDATE, DELETE]}
  - {apiGroups: [scaling.vscaler.dev], apiVersions: [v1beta1], resources: [verticalscalers], operations: [CREATE, UPDATE]}
YAML
ns=record
k create namespace $ns --dry-run=client -o yaml | k apply -f - >/dev/null
k label namespace $ns vscaler-record=yes --overwrite >/dev/null
sleep 2  # the API server picks webhook configurations up asynchronously
deploy() {
  k -n $ns apply -f - <<YAML
apiVersion: apps/v1
kind: Deployment
metadata: {name: $1, labels: {app: web}}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      initContainers: [{name: init, image: busybox}]
      containers:
      - name: app
        image: registry.k8s.io/pause:3.10
        env: [{name: PADDING, value: "$(head -c ${2:-100} /dev/zero | tr '\0' x)"}]
        resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 500m, memory: 128Mi}}
      - {name: sidecar, image: registry.k8s.io/pause:3.10}
YAML
}
deploy web                                        # CREATE
k -n $ns set resources deploy web -c app --requests=cpu=200m   # UPDATE of resources
k -n $ns set env deploy web FOO=bar --dry-run=server >/dev/null  # dry-run UPDATE
k -n $ns create -f - <<YAML                       # generateName CREATE
apiVersion: apps/v1
kind: Deployment
metadata: {generateName: gen-}
spec:
  selector: {matchLabels: {app: gen}}
  template:
    metadata: {labels: {app: gen}}
    spec: {containers: [{name: app, image: registry.k8s.io/pause:3.10}]}
YAML
deploy big 3500                                   # a ~20 KB UPDATE review next
k -n $ns set image deploy big app=registry.k8s.io/pause:3.9  # a ~20 KB UPDATE
k -n $ns delete deploy web                        # DELETE
k delete --raw "/apis/apps/v1/namespaces/$ns/deployments" >/dev/null  # deletecollection
k -n $ns apply -f - <<YAML                        # a VerticalScaler CREATE
apiVersion: scaling.vscaler.dev/v1beta1
kind: VerticalScaler
metadata: {name: web}
spec:
  deploymentName: web
  containers: [{name: app, requests: {cpu: 250m}}]
YAML
sleep 1
# Name the recordings by what they are.
cd "$out"
mv 001-create-deployments.json deployment-create.json
mv 002-update-deployments.json deployment-update-resources.json
mv 003-update-deployments.json deployment-update-dryrun.json
mv 004-create-deployments.json deployment-create-generatename.json
rm 005-create-deployments.json
mv 006-update-deployments.json deployment-update-20k.json
mv 007-delete-deployments.json deployment-delete.json
mv 008-delete-deployments.json deployment-deletecollection.json
rm -f 009-delete-deployments.json
mv 010-create-verticalscalers.json verticalscaler-create.json
ls -la "$out"
