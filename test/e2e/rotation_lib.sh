# shellcheck shell=bash
# shellcheck disable=SC2154 # work, ns and pids belong to the sourcing test
# Helpers shared by the certificate-rotation tests (sourced after lib.sh): certs_rotate_test.sh
# (a stand-in webhook) and rotation_test.sh (the real operator). They work in $work, a scratch
# directory the test owns, and append the processes they start to the test's `pids` array, which
# the test's cleanup kills.

# rotation_credentials: the admin credentials of the kubeconfig, for curl: sets $server and
# writes $work/api-ca.crt, $work/admin.crt, $work/admin.key.
rotation_credentials() {
  server=$(k config view --raw --minify -o jsonpath='{.clusters[0].cluster.server}')
  k config view --raw --minify -o jsonpath='{.clusters[0].cluster.certificate-authority-data}' |
    base64 -d >"$work/api-ca.crt"
  k config view --raw --minify -o jsonpath='{.users[0].user.client-certificate-data}' |
    base64 -d >"$work/admin.crt"
  k config view --raw --minify -o jsonpath='{.users[0].user.client-key-data}' |
    base64 -d >"$work/admin.key"
}

# rotation_request NAME METHOD PATH BODY_FILE CONTENT_TYPE EXPECTED_CODE WARNING: one request
# through the API server; appends "ok" or a description of the failure to $work/NAME.results.
# The response must carry WARNING in its headers: the webhook's admission warning is the proof
# that the API server reached it (with failurePolicy Ignore a failed call passes silently).
rotation_request() {
  local name=$1 code
  code=$(curl -sS -o "$work/$name.body" -D "$work/$name.headers" -w '%{http_code}' --max-time 10 \
    --cacert "$work/api-ca.crt" --cert "$work/admin.crt" --key "$work/admin.key" \
    -X "$2" -H "Content-Type: $5" --data-binary "@$4" "$server$3" 2>"$work/$name.err") ||
    code="curl-error"
  if [ "$code" = "$6" ] && grep -qF "$7" "$work/$name.headers"; then
    echo ok >>"$work/$name.results"
  else
    echo "FAILED $(date +%T.%N) code=$code $(head -c 300 "$work/$name.body" "$work/$name.err" |
      tr '\n' ' ')" >>"$work/$name.results"
  fi
}

# rotation_start_load NAME...: one client per NAME, each calling the test's function
# `rotation_client NAME ITERATION` (which makes one rotation_request NAME ...) in a loop, until
# rotation_stop_load.
rotation_start_load() {
  rm -f "$work/stop" "$work"/*.results
  rotation_clients=("$@")
  rotation_client_pids=()
  local name
  for name in "$@"; do
    (
      i=0
      while [ ! -e "$work/stop" ]; do
        i=$((i + 1))
        rotation_client "$name" "$i"
      done
    ) &
    rotation_client_pids+=($!)
    pids+=($!)
  done
}

# rotation_stop_load PHASE: stops the clients, waits for their last requests, and fails unless
# every request succeeded and each client made at least 10.
rotation_stop_load() {
  touch "$work/stop"
  local pid name total failed
  for pid in "${rotation_client_pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  for name in "${rotation_clients[@]}"; do
    total=$(wc -l <"$work/$name.results")
    failed=$(grep -c -v '^ok$' "$work/$name.results" || true)
    [ "$failed" = 0 ] ||
      fail "$1: $failed of $total $name requests failed: $(grep -v '^ok$' "$work/$name.results" | head -n 3)"
    [ "$total" -ge 10 ] || fail "$1: only $total $name requests were made"
    echo "ok: $1: $total $name requests through the API server, every one reached the webhook"
  done
}

# rotation_issuer CERT_FILE / rotation_served_issuer PORT: the issuer of a certificate, of the one
# served on 127.0.0.1:PORT.
rotation_issuer() { openssl x509 -in "$1" -noout -issuer; }
rotation_served_issuer() {
  openssl s_client -connect "127.0.0.1:$1" </dev/null 2>/dev/null | openssl x509 -noout -issuer
}

# rotation_bundle_is CA_FILE: fails unless both vscaler webhook configurations' caBundle is it.
rotation_bundle_is() {
  local kind b
  for kind in mutatingwebhookconfiguration validatingwebhookconfiguration; do
    b=$(k get "$kind" vscaler -o jsonpath='{.webhooks[0].clientConfig.caBundle}')
    [ "$b" = "$(base64 -w0 <"$1")" ] || fail "the caBundle of $kind/vscaler is not $1"
  done
  echo "ok: both caBundles are $(basename "$1") ($(openssl x509 -in "$1" -noout -subject))"
}

# rotation_delete_webhooks: the vscaler webhook configurations and any probe left behind.
rotation_delete_webhooks() {
  local kind
  for kind in mutatingwebhookconfiguration validatingwebhookconfiguration; do
    k delete "$kind" vscaler --ignore-not-found >/dev/null 2>&1 || true
    k delete "$kind" -l app.kubernetes.io/name=vscaler-probe --ignore-not-found >/dev/null 2>&1 ||
      true
  done
}
