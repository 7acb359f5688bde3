#!/usr/bin/env bash
# Installs the webhook certificate and registers the CA with the API server. See --help.
set -euo pipefail
PROG=install.sh
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  cat <<EOF
Usage:
  certs/install.sh [--cert-dir DIR] [--no-generate] [--no-wait]          in-cluster
  certs/install.sh --local [--port PORT] [--host HOST] [--cert-dir DIR] [--no-wait]
  certs/install.sh --uninstall [--local]

In-cluster (after \`kubectl apply -k manifests/\`; \`make deploy\` runs both):
  1. certs/generate.sh --cert-dir DIR (keeps a valid CA and certificate; --no-generate skips it);
  2. applies the kubernetes.io/tls Secret $SECRET in $NAMESPACE (tls.crt, tls.key, ca.crt;
     never ca.key), which the operator's Deployment mounts at its --cert-dir;
  3. sets DIR/ca.crt as the caBundle of every webhook of the MutatingWebhookConfiguration and
     the ValidatingWebhookConfiguration named $CONFIG_NAME (a missing one is reported);
  4. waits until the API server has loaded the change (a probe webhook; --no-wait skips it).

--local, for a vscaler process running on this machine (tests, make demo):
  1. certs/generate.sh --cert-dir DIR (SANs include 127.0.0.1 and localhost);
  2. renders manifests/local/ (the same two webhook configurations with
     clientConfig.url https://HOST:PORT/mutate-deployments, .../mutate-workloads,
     .../mutate-pods and .../validate-verticalscalers)
     with DIR/ca.crt as caBundle and applies it (server-side apply, idempotent);
  3. waits until the API server has loaded it, as above.
  Then run: vscaler --webhook-port PORT --cert-dir DIR ...
  The CRD is not installed here: kubectl apply -f manifests/crd/verticalscalers.yaml.

--uninstall deletes the two webhook configurations (and, in-cluster, the Secret); the files in
DIR are kept.

Options:
  --cert-dir DIR     certificate directory (default: $DEFAULT_CERT_DIR, or \$VSCALER_CERT_DIR)
  --local            register url-based webhooks for a vscaler on this machine
  --port PORT        --local: the webhook port of the local vscaler (default 9443)
  --host HOST        --local: the address the API server calls (default 127.0.0.1; it must be
                     a SAN of the certificate: add --san to certs/generate.sh for another)
  --no-generate      use DIR as it is (fail if it holds no certificate)
  --no-wait          do not wait for the API server to load the configuration
  --wait-timeout S   how long to wait (default 60)
  --kubeconfig FILE  the cluster (default: \$KUBECONFIG, else kubectl's default)
  -h, --help         this text
Environment: KUBECTL (default kubectl).
EOF
}

cert_dir=$DEFAULT_CERT_DIR
local_mode=0
port=9443
host=127.0.0.1
generate=1
wait=1
wait_timeout=60
uninstall=0
while [ $# -gt 0 ]; do
  case "$1" in
    --cert-dir) cert_dir=${2:?--cert-dir needs a directory}; shift 2 ;;
    --local) local_mode=1; shift ;;
    --port) port=${2:?--port needs a number}; shift 2 ;;
    --host) host=${2:?--host needs an address}; shift 2 ;;
    --no-generate) generate=0; shift ;;
    --no-wait) wait=0; shift ;;
    --wait-timeout) wait_timeout=${2:?--wait-timeout needs seconds}; shift 2 ;;
    --kubeconfig) export KUBECONFIG=${2:?--kubeconfig needs a file}; shift 2 ;;
    --uninstall) uninstall=1; shift ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done
if ! [[ "$port" =~ ^[0-9]+$ ]] || [ "$port" -lt 1 ] || [ "$port" -gt 65535 ]; then
  die "--port must be 1-65535, not '$port'"
fi
[[ "$wait_timeout" =~ ^[1-9][0-9]*$ ]] || die "--wait-timeout must be a positive number of seconds"
need openssl
need_kubectl
trap probe_cleanup EXIT

if [ "$uninstall" = 1 ]; then
  for kind in "${WEBHOOK_KINDS[@]}"; do
    kube delete "$kind" "$CONFIG_NAME" --ignore-not-found >/dev/null || die "could not delete $kind/$CONFIG_NAME"
  done
  delete_stale_probes
  if [ "$local_mode" = 0 ]; then
    kube -n "$NAMESPACE" delete secret "$SECRET" --ignore-not-found >/dev/null ||
      die "could not delete the Secret $NAMESPACE/$SECRET"
  fi
  what="the webhook configurations $CONFIG_NAME"
  [ "$local_mode" = 1 ] || what+=" and the Secret $NAMESPACE/$SECRET"
  log "removed $what"
  exit 0
fi

kube version >/dev/null 2>&1 || die "cannot reach the API server with kubectl (KUBECONFIG=${KUBECONFIG:-unset})"

if [ "$generate" = 1 ]; then
  "$CERTS_DIR/generate.sh" --cert-dir "$cert_dir"
fi
for file in ca.crt tls.crt tls.key; do
  [ -s "$cert_dir/$file" ] || die "$cert_dir/$file is missing (run certs/generate.sh --cert-dir $cert_dir)"
done
key_matches "$cert_dir/tls.crt" "$cert_dir/tls.key" || die "$cert_dir/tls.key does not belong to tls.crt"
signed_by "$cert_dir/tls.crt" "$cert_dir/ca.crt" || die "$cert_dir/tls.crt is not signed by $cert_dir/ca.crt"

if [ "$local_mode" = 1 ]; then
  san="DNS:$host"
  [[ "$host" =~ ^[0-9.]+$|: ]] && san="IP:${host#[}" && san=${san%]}
  cert_has_sans "$cert_dir/tls.crt" "$san" ||
    die "$cert_dir/tls.crt has no SAN $san: the API server would reject it (certs/generate.sh --renew --san $san)"
  rendered=$(kube kustomize "$REPO_ROOT/manifests/local") || die "kubectl kustomize manifests/local failed"
  bundle=$(b64 "$cert_dir/ca.crt")
  grep -q '127.0.0.1:9443' <<<"$rendered" || die "manifests/local no longer renders the url 127.0.0.1:9443 this script replaces"
  grep -q 'VlNDQUxFUl9DQV9CVU5ETEU=' <<<"$rendered" || die "manifests/local no longer renders the caBundle placeholder this script replaces"
  rendered=${rendered//127.0.0.1:9443/$host:$port}
  rendered=${rendered//VlNDQUxFUl9DQV9CVU5ETEU=/$bundle}
  kube apply --server-side --force-conflicts --field-manager="$FIELD_MANAGER" -f - <<<"$rendered" >/dev/null ||
    die "could not apply the url-based webhook configurations (manifests/local)"
  log "registered the webhook configurations $CONFIG_NAME for https://$host:$port (caBundle $cert_dir/ca.crt)"
else
  kube get namespace "$NAMESPACE" >/dev/null 2>&1 ||
    die "the namespace $NAMESPACE does not exist: kubectl apply -k manifests/ first (make deploy does both)"
  kube -n "$NAMESPACE" create secret generic "$SECRET" --type=kubernetes.io/tls \
    --from-file=tls.crt="$cert_dir/tls.crt" --from-file=tls.key="$cert_dir/tls.key" \
    --from-file=ca.crt="$cert_dir/ca.crt" --dry-run=client -o yaml |
    kube apply --server-side --force-conflicts --field-manager="$FIELD_MANAGER" -f - >/dev/null ||
    die "could not apply the Secret $NAMESPACE/$SECRET"
  log "applied the Secret $NAMESPACE/$SECRET"
  found=0
  for kind in "${WEBHOOK_KINDS[@]}"; do
    if config_exists "$kind" "$CONFIG_NAME"; then
      set_ca_bundle "$kind" "$CONFIG_NAME" "$cert_dir/ca.crt"
      found=$((found + 1))
    else
      log "warning: $kind/$CONFIG_NAME does not exist (kubectl apply -k manifests/), its caBundle is not set"
    fi
  done
  [ "$found" -gt 0 ] || { wait=0; log "warning: no webhook configuration to register the CA with"; }
  [ "$found" -eq 0 ] || log "set the caBundle of the webhook configurations $CONFIG_NAME to $cert_dir/ca.crt"
fi

if [ "$wait" = 1 ]; then
  probe loaded "$wait_timeout"
  log "the API server has loaded the webhook configurations"
fi
