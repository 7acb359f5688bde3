#!/usr/bin/env bash
# Issue 29, item 2: with --metrics-secure, /metrics is HTTPS (the --cert-dir certificate) and
# served only to callers RBAC lets `get /metrics`, asked of the real API server (TokenReview, then
# SubjectAccessReview) with the shipped RBAC: no token 401, a ServiceAccount token without the
# right 403, one bound to ClusterRole vscaler-metrics-reader 200; plain HTTP gets nothing. The
# health port stays plain HTTP for the kubelet.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

install_crd
ns=$(unique_namespace metrics-secure)
binding=vscaler-metrics-test-$ns
cleanup() {
  k delete clusterrolebinding "$binding" --ignore-not-found >/dev/null 2>&1 || true
  k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
  stop_operator
}
start_operator --resync-period 1h --metrics-secure --namespace "$ns"
trap cleanup EXIT
url=https://${METRICS_URL#http://}

k -n "$ns" create serviceaccount reader >/dev/null
k -n "$ns" create serviceaccount nobody >/dev/null
k create clusterrolebinding "$binding" --clusterrole vscaler-metrics-reader \
  --serviceaccount "$ns:reader" >/dev/null
reader=$(k -n "$ns" create token reader --duration 10m)
nobody=$(k -n "$ns" create token nobody --duration 10m)
status() { curl -ksS -o /dev/null -w '%{http_code}' --max-time 5 "$@" "$url"; }

expect_eq "/metrics without a token" "$(status)" 401
expect_eq "/metrics with a made-up token" "$(status -H 'Authorization: Bearer made-up')" 401
expect_eq "/metrics as a ServiceAccount without vscaler-metrics-reader" \
  "$(status -H "Authorization: Bearer $nobody")" 403
reads() { [ "$(status -H "Authorization: Bearer $reader")" = 200 ]; }
eventually 10 reads # the binding reaches the authorizer's cache shortly after the write
curl -ksS --max-time 5 -H "Authorization: Bearer $reader" "$url" | grep -q '^vscaler_' ||
  fail "the reader's /metrics holds no vscaler_ series"
echo "ok: /metrics as a ServiceAccount bound to vscaler-metrics-reader = 200, with vscaler's series"
if curl -fsS --max-time 5 -o /dev/null "$METRICS_URL" 2>/dev/null; then
  fail "/metrics answered plain HTTP under --metrics-secure"
fi
echo "ok: no plain HTTP on the metrics port"
expect_eq "the health port (plain, for the kubelet)" \
  "$(curl -sS -o /dev/null -w '%{http_code}' --max-time 5 "$HEALTH_URL/healthz")" 200
grep -q "$reader" "$OPERATOR_LOG" && fail "a token appears in the operator's log"
echo "ok: no token in the log"
echo "PASS"
