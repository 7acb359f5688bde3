#!/usr/bin/env bash
# certs/rotate.sh, serving certificate then CA, for both targets, while requests flow through the
# API server to a webhook: 0 failed requests, and every request reached the webhook.
# The webhook is test/e2e/certs_fake_webhook.py (reloads tls.crt/tls.key on change like vscaler),
# registered with certs/install.sh --local. Load, all through the API server, all the time:
#   - server-side dry-run Deployment CREATEs  (mutating webhook, failurePolicy Ignore: a failed
#     call would pass silently, so each answer must carry the webhook's warning);
#   - real Deployment PATCHes changing the pod template (kubectl edits, same check);
#   - server-side dry-run VerticalScaler CREATEs (validating webhook, failurePolicy Fail).
# and, for target 1, AdmissionReviews sent straight to the webhook by test/e2e/certs_loadgen.py
# (it reconnects often and trusts the CAs in the directory): none may fail either.
# Target 1: the cert dir the local webhook serves from (--local). Target 2: the Secret
# vscaler-webhook-tls, copied into the webhook's directory by a loop standing in for the kubelet.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/rotation_lib.sh"
root=$(cd "$here/../.." && pwd)
export KUBECTL
work=$(mktemp -d /tmp/vscaler-rotate-test.XXXXXX)
pids=()
cleanup() {
  touch "$work/stop"
  local pid
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rotation_delete_webhooks
  k -n vscaler-system delete secret vscaler-webhook-tls --ignore-not-found >/dev/null 2>&1 || true
  if [ -n "${KEEP_LOGS:-}" ]; then echo "logs kept in $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

k apply -f "$root/manifests/crd/verticalscalers.yaml" >/dev/null
k wait --for condition=established --timeout=60s crd/verticalscalers.scaling.vscaler.dev >/dev/null
ns=$(unique_namespace certs-rotate)
k -n "$ns" create deployment edited --image=registry.k8s.io/pause:3.10 >/dev/null

rotation_credentials
cat >"$work/deployment.json" <<'EOF'
{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "load"},
 "spec": {"selector": {"matchLabels": {"app": "load"}},
  "template": {"metadata": {"labels": {"app": "load"}},
   "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}}}}
EOF
cat >"$work/scaler.json" <<'EOF'
{"apiVersion": "scaling.vscaler.dev/v1beta1", "kind": "VerticalScaler", "metadata": {"name": "load"},
 "spec": {"deploymentName": "load", "containers": [{"name": "app", "requests": {"cpu": "100m"}}]}}
EOF

# rotation_client NAME ITERATION: one request of a load client (see rotation_start_load).
rotation_client() {
  case "$1" in
    create)
      rotation_request create POST "/apis/apps/v1/namespaces/$ns/deployments?dryRun=All" \
        "$work/deployment.json" application/json 201 "fake-vscaler reached /mutate-deployments CREATE"
      ;;
    edit)
      printf '{"spec":{"template":{"metadata":{"annotations":{"edit":"%s"}}}}}' "$2" >"$work/edit.json"
      rotation_request edit PATCH "/apis/apps/v1/namespaces/$ns/deployments/edited" "$work/edit.json" \
        application/strategic-merge-patch+json 200 "fake-vscaler reached /mutate-deployments UPDATE"
      ;;
    scaler)
      rotation_request scaler POST "/apis/scaling.vscaler.dev/v1beta1/namespaces/$ns/verticalscalers?dryRun=All" \
        "$work/scaler.json" application/json 201 "fake-vscaler reached /validate-verticalscalers CREATE"
      ;;
  esac
}

# start_fake DIR: the stand-in webhook serving DIR; sets FAKE_PORT.
start_fake() {
  rm -f "$work/fake.port"
  python3 "$here/certs_fake_webhook.py" --cert-dir "$1" --port-file "$work/fake.port" \
    --log "$work/fake.log" >>"$work/fake.out" 2>&1 &
  FAKE_PID=$!
  pids+=("$FAKE_PID")
  eventually 10 test -s "$work/fake.port"
  FAKE_PORT=$(cat "$work/fake.port")
}

echo "=== target 1: the directory a webhook on this machine serves from (--local)"
dir=$work/local
"$root/certs/generate.sh" --cert-dir "$dir" 2>/dev/null
start_fake "$dir"
"$root/certs/install.sh" --local --port "$FAKE_PORT" --cert-dir "$dir" 2>/dev/null
rotation_start_load create edit scaler
python3 "$here/certs_loadgen.py" --port "$FAKE_PORT" --ca-dir "$dir" --rate 100 --clients 4 \
  --reconnect-every 10 >"$work/loadgen.json" 2>"$work/loadgen.err" &
loadgen_pid=$!
pids+=("$loadgen_pid")
sleep 2
old_fp=$(openssl x509 -in "$dir/tls.crt" -noout -fingerprint)
old_ca=$(openssl x509 -in "$dir/ca.crt" -noout -subject)
"$root/certs/rotate.sh" serving --local --port "$FAKE_PORT" --cert-dir "$dir" || fail "rotate.sh serving failed"
[ "$(openssl x509 -in "$dir/tls.crt" -noout -fingerprint)" != "$old_fp" ] || fail "the serving certificate did not change"
expect_eq "CA after a serving rotation" "$(openssl x509 -in "$dir/ca.crt" -noout -subject)" "$old_ca"
sleep 1
"$root/certs/rotate.sh" ca --local --port "$FAKE_PORT" --cert-dir "$dir" || fail "rotate.sh ca failed"
sleep 2
rotation_stop_load "target 1"
kill -TERM "$loadgen_pid"
wait "$loadgen_pid" || true
python3 - "$work/loadgen.json" <<'PY' || fail "direct load: $(cat "$work/loadgen.json" "$work/loadgen.err")"
import json, sys
s = json.load(open(sys.argv[1]))
assert s["failed"] == 0 and s["sent"] >= 100, s
print(f"ok: target 1: {s['sent']} reviews sent straight to the webhook ({s['rate']}/s, {s['handshakes']} handshakes), 0 failed")
PY
[ "$(openssl x509 -in "$dir/ca.crt" -noout -subject)" != "$old_ca" ] || fail "the CA did not change"
expect_eq "old CA kept as ca-old.crt" "$(openssl x509 -in "$dir/ca-old.crt" -noout -subject)" "$old_ca"
expect_eq "no next CA left" "$(ls "$dir"/ca-next.* 2>/dev/null)" ""
expect_eq "ca.key mode" "$(stat -c %a "$dir/ca.key")" "600"
expect_eq "tls.key mode" "$(stat -c %a "$dir/tls.key")" "600"
expect_eq "served certificate's issuer" "$(rotation_served_issuer "$FAKE_PORT")" "$(rotation_issuer "$dir/tls.crt")"
expect_eq "tls.crt from the new CA" "$(openssl verify -CAfile "$dir/ca.crt" "$dir/tls.crt")" "$dir/tls.crt: OK"
rotation_bundle_is "$dir/ca.crt"
grep -q 'fake-vscaler reached' "$work/fake.log" || fail "the webhook logged no request"
expect_eq "no probe configuration left" \
  "$(k get mutatingwebhookconfiguration,validatingwebhookconfiguration -l app.kubernetes.io/name=vscaler-probe -o name)" ""

echo "--- a serving rotation refuses to run in the middle of a CA rotation"
cp "$dir/ca.crt" "$dir/ca-next.crt"
if "$root/certs/rotate.sh" serving --local --port "$FAKE_PORT" --cert-dir "$dir" 2>"$work/rotate.err"; then
  fail "rotate.sh serving ran with a CA rotation unfinished"
fi
grep -q 'CA rotation is unfinished' "$work/rotate.err" || fail "unclear message: $(cat "$work/rotate.err")"
rm -f "$dir/ca-next.crt"
kill "$FAKE_PID" 2>/dev/null || true
"$root/certs/install.sh" --uninstall --local 2>/dev/null

echo "=== target 2: the Secret vscaler-webhook-tls (a loop copies it into the webhook's directory)"
k get namespace vscaler-system >/dev/null 2>&1 || k create namespace vscaler-system >/dev/null
admin=$work/admin
served=$work/served
mkdir -p "$served"
"$root/certs/generate.sh" --cert-dir "$admin" 2>/dev/null
# kubelet stand-in: the Secret's tls.key then tls.crt, each replaced by a rename when it changed.
sync_secret() {
  local key
  for key in tls.key tls.crt; do
    k -n vscaler-system get secret vscaler-webhook-tls -o jsonpath="{.data.${key/./\\.}}" 2>/dev/null |
      base64 -d >"$served/.$key.new" 2>/dev/null || continue
    [ -s "$served/.$key.new" ] || continue
    cmp -s "$served/.$key.new" "$served/$key" || mv -f "$served/.$key.new" "$served/$key"
  done
}
"$root/certs/install.sh" --cert-dir "$admin" --no-generate 2>/dev/null # the Secret (no configurations yet)
sync_secret
[ -s "$served/tls.crt" ] || fail "the Secret was not written"
start_fake "$served"
(while [ ! -e "$work/stop-sync" ]; do sync_secret; sleep 0.3; done) &
pids+=($!)
"$root/certs/install.sh" --local --port "$FAKE_PORT" --cert-dir "$admin" --no-generate 2>/dev/null
"$root/certs/install.sh" --cert-dir "$admin" --no-generate 2>/dev/null
rotation_start_load create edit scaler
sleep 2
old_ca=$(openssl x509 -in "$admin/ca.crt" -noout -subject)
"$root/certs/rotate.sh" serving --cert-dir "$admin" --serve-addr "127.0.0.1:$FAKE_PORT" || fail "rotate.sh serving (Secret) failed"
expect_eq "served after a serving rotation" "$(rotation_served_issuer "$FAKE_PORT")" "$(rotation_issuer "$admin/tls.crt")"
"$root/certs/rotate.sh" ca --cert-dir "$admin" --serve-addr "127.0.0.1:$FAKE_PORT" --probe served ||
  fail "rotate.sh ca (Secret) failed"
sleep 2
rotation_stop_load "target 2"
touch "$work/stop-sync"
[ "$(openssl x509 -in "$admin/ca.crt" -noout -subject)" != "$old_ca" ] || fail "the CA did not change"
expect_eq "Secret tls.crt" "$(k -n vscaler-system get secret vscaler-webhook-tls -o jsonpath='{.data.tls\.crt}' | base64 -d | openssl x509 -noout -fingerprint)" \
  "$(openssl x509 -in "$admin/tls.crt" -noout -fingerprint)"
expect_eq "Secret ca.crt" "$(k -n vscaler-system get secret vscaler-webhook-tls -o jsonpath='{.data.ca\.crt}' | base64 -d | openssl x509 -noout -subject)" \
  "$(openssl x509 -in "$admin/ca.crt" -noout -subject)"
expect_eq "served certificate's issuer" "$(rotation_served_issuer "$FAKE_PORT")" "$(rotation_issuer "$admin/tls.crt")"
rotation_bundle_is "$admin/ca.crt"
echo "ok: rotations"
