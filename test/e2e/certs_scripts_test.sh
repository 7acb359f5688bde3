#!/usr/bin/env bash
# certs/generate.sh and certs/install.sh: files, modes, SANs and chain checked with openssl;
# both idempotent; the url-based local registration and the in-cluster Secret + caBundle
# injection; --uninstall; the probe really fails when the API server cannot trust a CA.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
root=$(cd "$here/../.." && pwd)
export KUBECTL
work=$(mktemp -d /tmp/vscaler-certs-test.XXXXXX)
cleanup() {
  for kind in mutatingwebhookconfiguration validatingwebhookconfiguration; do
    k delete "$kind" vscaler --ignore-not-found >/dev/null 2>&1 || true
    k delete "$kind" -l app.kubernetes.io/name=vscaler-probe --ignore-not-found >/dev/null 2>&1 || true
  done
  k -n vscaler-system delete secret vscaler-webhook-tls --ignore-not-found >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

mode() { stat -c %a "$1"; }
fp() { openssl x509 -in "$1" -noout -fingerprint -sha256 | cut -d= -f2; }
sans() {
  openssl x509 -in "$1" -noout -ext subjectAltName | tail -n +2 | tr ',' '\n' | sed 's/^ *//' | sort | tr '\n' ' '
}
bundle_of() { k get "$1" vscaler -o jsonpath='{.webhooks[0].clientConfig.caBundle}'; }
# is_b64_of WHAT VALUE FILE: VALUE is FILE in base64 (without printing either).
is_b64_of() {
  [ "$2" = "$(base64 -w0 <"$3")" ] || fail "$1: is not the base64 of $3"
  echo "ok: $1 = base64 of $(basename "$3")"
}

echo "--- generate: a CA and a serving certificate, keys 0600, SANs, chain"
dir=$work/certs
"$root/certs/generate.sh" --cert-dir "$dir" 2>"$work/gen.log" || fail "generate.sh failed: $(cat "$work/gen.log")"
for f in ca.crt ca.key tls.crt tls.key; do [ -s "$dir/$f" ] || fail "$dir/$f missing"; done
expect_eq "ca.key mode" "$(mode "$dir/ca.key")" "600"
expect_eq "tls.key mode" "$(mode "$dir/tls.key")" "600"
expect_eq "cert dir mode" "$(mode "$dir")" "700"
expect_eq "serving SANs" "$(sans "$dir/tls.crt")" \
  "DNS:localhost DNS:vscaler-webhook DNS:vscaler-webhook.vscaler-system DNS:vscaler-webhook.vscaler-system.svc DNS:vscaler-webhook.vscaler-system.svc.cluster.local IP Address:127.0.0.1 "
expect_eq "chain" "$(openssl verify -purpose sslserver -CAfile "$dir/ca.crt" "$dir/tls.crt")" "$dir/tls.crt: OK"
openssl x509 -in "$dir/ca.crt" -noout -ext basicConstraints | grep -q 'CA:TRUE' || fail "ca.crt is not a CA"
openssl x509 -in "$dir/tls.crt" -noout -ext extendedKeyUsage | grep -q 'TLS Web Server Authentication' ||
  fail "tls.crt lacks the serverAuth usage"
ca_fp=$(fp "$dir/ca.crt")
tls_fp=$(fp "$dir/tls.crt")

echo "--- generate again: nothing changes"
"$root/certs/generate.sh" --cert-dir "$dir" 2>/dev/null
expect_eq "CA after a second run" "$(fp "$dir/ca.crt")" "$ca_fp"
expect_eq "serving cert after a second run" "$(fp "$dir/tls.crt")" "$tls_fp"

echo "--- generate --renew: a new serving certificate, same CA; --san is added and kept"
"$root/certs/generate.sh" --cert-dir "$dir" --renew --san DNS:webhook.example.com 2>/dev/null
expect_eq "CA after --renew" "$(fp "$dir/ca.crt")" "$ca_fp"
[ "$(fp "$dir/tls.crt")" != "$tls_fp" ] || fail "--renew kept the serving certificate"
sans "$dir/tls.crt" | grep -q 'DNS:webhook.example.com' || fail "--san not in the certificate"
expect_eq "tls.key mode after --renew" "$(mode "$dir/tls.key")" "600"
renewed_fp=$(fp "$dir/tls.crt")
"$root/certs/generate.sh" --cert-dir "$dir" 2>/dev/null
expect_eq "serving cert with an extra SAN, regenerated without --san" "$(fp "$dir/tls.crt")" "$renewed_fp"

echo "--- generate: a serving certificate from another CA, or with a mismatched key, is replaced"
cp "$dir/tls.key" "$work/old.key"
"$root/certs/generate.sh" --cert-dir "$work/other" 2>/dev/null
cp "$work/other/tls.crt" "$dir/tls.crt"
"$root/certs/generate.sh" --cert-dir "$dir" 2>"$work/gen.log"
grep -q 'issued a new serving certificate' "$work/gen.log" || fail "a foreign tls.crt was kept: $(cat "$work/gen.log")"
expect_eq "chain after replacing a foreign cert" \
  "$(openssl verify -CAfile "$dir/ca.crt" "$dir/tls.crt")" "$dir/tls.crt: OK"
cp "$work/old.key" "$dir/tls.key"
"$root/certs/generate.sh" --cert-dir "$dir" 2>"$work/gen.log"
grep -q 'tls.key does not match' "$work/gen.log" || fail "a mismatched key was kept: $(cat "$work/gen.log")"

echo "--- generate: an expiring CA is not replaced silently"
"$root/certs/generate.sh" --cert-dir "$work/short" --ca-days 1 2>/dev/null || true
if "$root/certs/generate.sh" --cert-dir "$work/short" 2>"$work/gen.log"; then fail "an expiring CA was accepted"; fi
grep -q 'rotate.sh ca' "$work/gen.log" || fail "no pointer to rotate.sh ca: $(cat "$work/gen.log")"
rm -f "$work/short/ca.key"
if "$root/certs/generate.sh" --cert-dir "$work/short" 2>"$work/gen.log"; then fail "a CA without its key was accepted"; fi
grep -q 'without ca.key' "$work/gen.log" || fail "unclear message: $(cat "$work/gen.log")"
"$root/certs/generate.sh" --help | grep -q 'Usage: certs/generate.sh' || fail "generate.sh --help"

echo "--- install --local: url-based webhooks with the CA, loaded by the API server"
port=$(free_port)
"$root/certs/install.sh" --local --port "$port" --cert-dir "$dir" 2>"$work/install.log" ||
  fail "install.sh --local failed: $(cat "$work/install.log")"
grep -q 'the API server has loaded' "$work/install.log" || fail "install.sh did not wait: $(cat "$work/install.log")"
expect_eq "mutating url" "$(k get mutatingwebhookconfiguration vscaler -o jsonpath='{.webhooks[0].clientConfig.url}')" \
  "https://127.0.0.1:$port/mutate-deployments"
expect_eq "validating url" "$(k get validatingwebhookconfiguration vscaler -o jsonpath='{.webhooks[0].clientConfig.url}')" \
  "https://127.0.0.1:$port/validate-verticalscalers"
is_b64_of "mutating caBundle" "$(bundle_of mutatingwebhookconfiguration)" "$dir/ca.crt"
is_b64_of "validating caBundle" "$(bundle_of validatingwebhookconfiguration)" "$dir/ca.crt"
rv_m=$(k get mutatingwebhookconfiguration vscaler -o jsonpath='{.metadata.resourceVersion}')
rv_v=$(k get validatingwebhookconfiguration vscaler -o jsonpath='{.metadata.resourceVersion}')
"$root/certs/install.sh" --local --port "$port" --cert-dir "$dir" --no-wait 2>/dev/null
expect_eq "mutating resourceVersion after a second install" \
  "$(k get mutatingwebhookconfiguration vscaler -o jsonpath='{.metadata.resourceVersion}')" "$rv_m"
expect_eq "validating resourceVersion after a second install" \
  "$(k get validatingwebhookconfiguration vscaler -o jsonpath='{.metadata.resourceVersion}')" "$rv_v"
expect_eq "no probe configuration left" \
  "$(k get mutatingwebhookconfiguration,validatingwebhookconfiguration -l app.kubernetes.io/name=vscaler-probe -o name)" ""
if "$root/certs/install.sh" --local --host 10.1.2.3 --cert-dir "$dir" 2>"$work/install.log"; then
  fail "install.sh accepted a host the certificate has no SAN for"
fi
grep -q 'has no SAN IP:10.1.2.3' "$work/install.log" || fail "unclear message: $(cat "$work/install.log")"

echo "--- install (in-cluster): the Secret and the caBundle of existing configurations"
# url-based and Service-based configurations cannot be merged into each other by kubectl apply
# (the url stays and the API server rejects both): remove the local ones first.
"$root/certs/install.sh" --uninstall --local 2>/dev/null
k get namespace vscaler-system >/dev/null 2>&1 || k create namespace vscaler-system >/dev/null
k apply -k "$root/manifests/webhook" >/dev/null
"$root/certs/install.sh" --cert-dir "$dir" 2>"$work/install.log" || fail "install.sh failed: $(cat "$work/install.log")"
expect_eq "Secret type" "$(k -n vscaler-system get secret vscaler-webhook-tls -o jsonpath='{.type}')" "kubernetes.io/tls"
is_b64_of "Secret tls.crt" "$(k -n vscaler-system get secret vscaler-webhook-tls -o jsonpath='{.data.tls\.crt}')" "$dir/tls.crt"
is_b64_of "Secret ca.crt" "$(k -n vscaler-system get secret vscaler-webhook-tls -o jsonpath='{.data.ca\.crt}')" "$dir/ca.crt"
expect_eq "Secret has no CA key" "$(k -n vscaler-system get secret vscaler-webhook-tls -o jsonpath='{.data.ca\.key}')" ""
is_b64_of "service-based mutating caBundle" "$(bundle_of mutatingwebhookconfiguration)" "$dir/ca.crt"
is_b64_of "service-based validating caBundle" "$(bundle_of validatingwebhookconfiguration)" "$dir/ca.crt"
expect_eq "clientConfig still the Service" \
  "$(k get mutatingwebhookconfiguration vscaler -o jsonpath='{.webhooks[0].clientConfig.service.name}')" "vscaler-webhook"
rv_s=$(k -n vscaler-system get secret vscaler-webhook-tls -o jsonpath='{.metadata.resourceVersion}')
rv_m=$(k get mutatingwebhookconfiguration vscaler -o jsonpath='{.metadata.resourceVersion}')
"$root/certs/install.sh" --cert-dir "$dir" --no-wait 2>/dev/null
expect_eq "Secret resourceVersion after a second install" \
  "$(k -n vscaler-system get secret vscaler-webhook-tls -o jsonpath='{.metadata.resourceVersion}')" "$rv_s"
expect_eq "mutating resourceVersion after a second install" \
  "$(k get mutatingwebhookconfiguration vscaler -o jsonpath='{.metadata.resourceVersion}')" "$rv_m"
k apply -k "$root/manifests/webhook" >/dev/null
is_b64_of "caBundle kept by a later kubectl apply -k" "$(bundle_of validatingwebhookconfiguration)" "$dir/ca.crt"

echo "--- the probe fails when the API server cannot trust the CA the probe server presents"
(
  # shellcheck source=../../certs/lib.sh
  . "$root/certs/lib.sh"
  "$root/certs/generate.sh" --cert-dir "$work/untrusted" 2>/dev/null
  # caBundle: our CA; the probe server's certificate: from another CA.
  if (probe served 4 "$dir/ca.crt" "$work/untrusted/ca.crt" "$work/untrusted/ca.key") 2>"$work/probe.log"; then
    exit 1
  fi
  grep -q 'did not reach the probe webhook' "$work/probe.log"
) || fail "the probe passed with an untrusted CA: $(cat "$work/probe.log" 2>/dev/null)"
expect_eq "probe configurations removed after a failed probe" \
  "$(k get mutatingwebhookconfiguration,validatingwebhookconfiguration -l app.kubernetes.io/name=vscaler-probe -o name)" ""

echo "--- uninstall"
"$root/certs/install.sh" --uninstall 2>/dev/null
expect_eq "configurations after --uninstall" \
  "$(k get mutatingwebhookconfiguration,validatingwebhookconfiguration vscaler --ignore-not-found -o name)" ""
expect_eq "Secret after --uninstall" \
  "$(k -n vscaler-system get secret vscaler-webhook-tls --ignore-not-found -o name)" ""
"$root/certs/install.sh" --uninstall 2>/dev/null || fail "a second --uninstall failed"
for script in install rotate; do
  "$root/certs/$script.sh" --help | grep -q "certs/$script.sh" || fail "$script.sh --help"
done
echo "ok: certs scripts"
