#!/usr/bin/env bash
# Issue 29, item 4: with --webhook-client-ca-file the webhook serves only the API server. The
# local cluster's API server presents a client certificate to webhooks (AdmissionConfiguration
# kubeConfigFile, test/cluster/up.sh) from a CA of its own: a Deployment write through it is
# admitted and patched as usual, while a direct client fails the TLS handshake, with no
# certificate or with one the cluster's CA signed for its admin; the API server's certificate
# gets an answer.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
pki=${VSCALER_CLUSTER_DIR:?needs the local cluster}/pki

ns=$(unique_namespace client-ca)
make_deployment "$ns" web \
  '[{"name":"app","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"50m"}}}]'
start_operator_with_webhooks --resync-period 1h --webhook-client-ca-file "$pki/webhook-client-ca.crt"
trap 'unregister_webhooks; stop_operator; k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true' EXIT
make_scaler "$ns" web web Auto '[{"name":"app","requests":{"cpu":"250m"}}]'
cpu() { jp "$ns" deploy/web '{.spec.template.spec.containers[0].resources.requests.cpu}'; }
applied() { [ "$(cpu)" = 250m ]; }
eventually 30 applied
# A Helm-style reset through the API server: the mutating hook (called with the API server's
# client certificate) puts the value back in the write itself.
k -n "$ns" set resources deploy web -c app --requests=cpu=100m >/dev/null
expect_eq "requests.cpu after a write through the API server (patched at admission)" "$(cpu)" 250m
calls=$(curl -fsS "$METRICS_URL" | awk -F' ' '/^controller_runtime_webhook_requests_total\{webhook="\/mutate-deployments",code="200"\}/ {print $2}')
[ "${calls:-0}" -gt 0 ] || fail "the API server's calls did not reach the hook"
echo "ok: the API server's calls are served ($calls)"

url=https://127.0.0.1:$WEBHOOK_PORT/mutate-deployments
review='{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","kind":{"group":"apps","version":"v1","kind":"Deployment"},"resource":{"group":"apps","version":"v1","resource":"deployments"},"namespace":"x","operation":"CREATE","userInfo":{"username":"someone"},"object":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"x"},"spec":{"template":{"spec":{"containers":[{"name":"app"}]}}}}}}'
post() { curl -ksS --max-time 5 -o /dev/null -w '%{http_code}' -H 'Content-Type: application/json' --data "$review" "$@" "$url" 2>/dev/null; }
if post >/dev/null; then fail "a client without a certificate was served"; fi
echo "ok: without a client certificate the handshake fails"
if post --cert "$pki/admin.crt" --key "$pki/admin.key" >/dev/null; then
  fail "a client certificate of another CA (the cluster admin's) was accepted"
fi
echo "ok: a certificate of another CA (the cluster admin's) fails the handshake"
expect_eq "status with the API server's client certificate" \
  "$(post --cert "$pki/webhook-client.crt" --key "$pki/webhook-client.key")" 200
echo "PASS"
