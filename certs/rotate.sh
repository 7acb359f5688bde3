#!/usr/bin/env bash
# Rotates the webhook's serving certificate, or its CA, without a failed admission request.
# See --help.
set -euo pipefail
PROG=rotate.sh
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  cat <<EOF
Usage:
  certs/rotate.sh serving [--cert-dir DIR] [--local [--port PORT] [--host HOST]] [options]
  certs/rotate.sh ca      [--cert-dir DIR] [--local [--port PORT] [--host HOST]] [options]

Targets: with --local, DIR is the directory a vscaler on this machine serves from
(vscaler --cert-dir DIR; it reloads tls.crt/tls.key when they change); without it, the Secret
$SECRET in $NAMESPACE is written from DIR (the kubelet updates the pods' mounted files).
DIR (default: $DEFAULT_CERT_DIR) holds ca.crt, ca.key, tls.crt, tls.key as written by
certs/generate.sh / certs/install.sh.

serving: a new serving certificate from the same CA. Nothing changes in the caBundle.
  1. issue tls.crt/tls.key (new key) signed by DIR/ca.crt;
  2. serve it: replace the files in DIR (atomic renames), or apply the Secret;
  3. wait until it is served (see "Served" below).

ca: a new CA, with every request trusted at every moment:
  1. create the next CA (DIR/ca-next.crt, ca-next.key; kept, so an interrupted run resumes);
  2. publish caBundle = old CA + next CA (concatenated PEM) in every webhook of the
     MutatingWebhookConfiguration and ValidatingWebhookConfiguration $CONFIG_NAME;
  3. probe until the API server trusts the next CA through that caBundle (see "Probe");
  4. only then issue a serving certificate from the next CA and serve it (as for "serving"),
     and wait until it is served;
  5. publish caBundle = next CA alone, and wait until the API server has loaded it;
  6. promote: ca-next.* become ca.crt/ca.key (the old CA certificate is kept as ca-old.crt,
     its key deleted).
  Re-running after an interruption continues where it stopped.

Probe (--probe): "served" (default with --local) runs certs/probe-server.py on 127.0.0.1 with
a certificate from the next CA and a probe webhook configuration carrying the published
caBundle, and waits until a server-side dry-run request is answered by it: the API server
reached a server presenting the new chain through that caBundle. It needs an API server that
can reach this machine's 127.0.0.1. "loaded" (default in-cluster) waits until the API server
calls a probe webhook configuration created after the caBundle change (watch events arrive in
order, so the change is loaded too) and relies on openssl having checked the bundle.

Served: with --local, or --serve-addr HOST:PORT, a TLS handshake there must present the new
certificate. In-cluster without --serve-addr, every running vscaler pod's
vscaler_serving_cert_expiry_timestamp_seconds metric (read through the API server's pod proxy)
must equal the new certificate's expiry; the kubelet can take a minute or two to update the
mounted Secret.

Options:
  --cert-dir DIR        certificate directory (see above)
  --local               the target is DIR, served by a vscaler on this machine
  --port PORT           --local: its webhook port (default 9443)
  --host HOST           --local: its address (default 127.0.0.1)
  --serve-addr H:P      check the served certificate by a TLS handshake at H:P
  --serve-timeout S     how long to wait for the new certificate to be served
                        (default 60 with --local or --serve-addr, else 300)
  --probe MODE          served or loaded (see above)
  --probe-timeout S     how long to wait for the API server (default 120)
  --days N, --ca-days N validity of the new serving certificate / CA (365 / 3650)
  --kubeconfig FILE     the cluster (default: \$KUBECONFIG, else kubectl's default)
  -h, --help            this text
Environment: KUBECTL (default kubectl), VSCALER_PROBE_SUCCESSES (consecutive probe
successes required, default 3).
EOF
}

what=""
cert_dir=$DEFAULT_CERT_DIR
local_mode=0
port=9443
host=127.0.0.1
serve_addr=""
serve_timeout=""
probe_mode=""
probe_timeout=120
days=365
ca_days=3650
while [ $# -gt 0 ]; do
  case "$1" in
    serving | ca) [ -z "$what" ] || die "give one of serving or ca"; what=$1; shift ;;
    --cert-dir) cert_dir=${2:?--cert-dir needs a directory}; shift 2 ;;
    --local) local_mode=1; shift ;;
    --port) port=${2:?--port needs a number}; shift 2 ;;
    --host) host=${2:?--host needs an address}; shift 2 ;;
    --serve-addr) serve_addr=${2:?--serve-addr needs HOST:PORT}; shift 2 ;;
    --serve-timeout) serve_timeout=${2:?--serve-timeout needs seconds}; shift 2 ;;
    --probe) probe_mode=${2:?--probe needs served or loaded}; shift 2 ;;
    --probe-timeout) probe_timeout=${2:?--probe-timeout needs seconds}; shift 2 ;;
    --days) days=${2:?--days needs a number}; shift 2 ;;
    --ca-days) ca_days=${2:?--ca-days needs a number}; shift 2 ;;
    --kubeconfig) export KUBECONFIG=${2:?--kubeconfig needs a file}; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done
[ -n "$what" ] || { usage >&2; die "say what to rotate: serving or ca"; }
[ "$local_mode" = 1 ] && [ -z "$serve_addr" ] && serve_addr=$host:$port
[ -n "$serve_timeout" ] || { [ -n "$serve_addr" ] && serve_timeout=60 || serve_timeout=300; }
[ -n "$probe_mode" ] || { [ "$local_mode" = 1 ] && probe_mode=served || probe_mode=loaded; }
case "$probe_mode" in served | loaded) ;; *) die "--probe must be served or loaded, not '$probe_mode'" ;; esac
for n in "$serve_timeout" "$probe_timeout" "$days" "$ca_days"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || die "'$n' is not a positive number"
done
need openssl
need_kubectl
trap probe_cleanup EXIT

[ -d "$cert_dir" ] || die "the certificate directory $cert_dir does not exist (certs/install.sh creates it)"
cert_dir=$(cd "$cert_dir" && pwd)
for file in ca.crt ca.key tls.crt tls.key; do
  [ -s "$cert_dir/$file" ] || die "$cert_dir/$file is missing (certs/install.sh creates it)"
done
key_matches "$cert_dir/ca.crt" "$cert_dir/ca.key" || die "$cert_dir/ca.key does not belong to ca.crt"
kube version >/dev/null 2>&1 || die "cannot reach the API server with kubectl (KUBECONFIG=${KUBECONFIG:-unset})"
if [ "$local_mode" = 0 ]; then
  kube -n "$NAMESPACE" get secret "$SECRET" >/dev/null 2>&1 ||
    die "the Secret $NAMESPACE/$SECRET does not exist (certs/install.sh creates it; for a vscaler on this machine use --local)"
fi
work=$(mktemp -d "$cert_dir/.rotate.XXXXXX")
trap 'probe_cleanup; rm -rf "$work"' EXIT
mapfile -t sans < <(service_sans)
# Keep SANs the current certificate has beyond the standard ones (certs/generate.sh --san).
while IFS= read -r san; do
  [[ " ${sans[*]} " == *" $san "* ]] || sans+=("$san")
done < <(cert_sans "$cert_dir/tls.crt")

# serve CA_CRT CA_KEY SECRET_CA: issues a serving certificate from CA_CRT/CA_KEY (unless the
# current one already comes from that CA and is not the one to replace) and makes it served;
# SECRET_CA is the ca.crt the Secret carries.
serve() {
  local ca_crt=$1 ca_key=$2 secret_ca=$3
  make_serving "$work/tls.crt" "$work/tls.key" "$ca_crt" "$ca_key" "$days" "${sans[@]}"
  # Two certificates issued within one second would have the same expiry, which the metric
  # check cannot tell apart.
  if [ "$(not_after_epoch "$work/tls.crt")" = "$(not_after_epoch "$cert_dir/tls.crt")" ]; then
    sleep 1
    make_serving "$work/tls.crt" "$work/tls.key" "$ca_crt" "$ca_key" "$days" "${sans[@]}"
  fi
  install_pair "$cert_dir" "$work/tls.crt" "$work/tls.key"
  log "issued a new serving certificate $cert_dir/tls.crt ($(openssl x509 -in "$cert_dir/tls.crt" -noout -issuer))"
  publish_serving "$secret_ca"
}

# publish_serving SECRET_CA: makes DIR/tls.* served and waits until they are.
publish_serving() {
  if [ "$local_mode" = 0 ]; then
    kube -n "$NAMESPACE" create secret generic "$SECRET" --type=kubernetes.io/tls \
      --from-file=tls.crt="$cert_dir/tls.crt" --from-file=tls.key="$cert_dir/tls.key" \
      --from-file=ca.crt="$1" --dry-run=client -o yaml |
      kube apply --server-side --force-conflicts --field-manager="$FIELD_MANAGER" -f - >/dev/null ||
      die "could not update the Secret $NAMESPACE/$SECRET"
    log "updated the Secret $NAMESPACE/$SECRET"
  fi
  if [ -n "$serve_addr" ]; then
    log "waiting until $serve_addr serves the new certificate"
    wait_served_addr "$serve_addr" "$cert_dir/tls.crt" "$serve_timeout"
  else
    log "waiting until every vscaler pod serves the new certificate (the kubelet syncs the Secret)"
    wait_served_pods "$cert_dir/tls.crt" "$serve_timeout"
  fi
  log "the new serving certificate is being served"
}

# publish_bundle FILE: FILE as the caBundle of every webhook of both configurations.
publish_bundle() {
  local kind found=0
  for kind in "${WEBHOOK_KINDS[@]}"; do
    if config_exists "$kind" "$CONFIG_NAME"; then
      set_ca_bundle "$kind" "$CONFIG_NAME" "$1"
      found=1
    else
      log "warning: $kind/$CONFIG_NAME does not exist, skipped"
    fi
  done
  [ "$found" = 1 ] || die "neither webhook configuration $CONFIG_NAME exists (certs/install.sh registers them)"
}

if [ "$what" = serving ]; then
  signed_by "$cert_dir/tls.crt" "$cert_dir/ca.crt" ||
    die "$cert_dir/tls.crt is not signed by ca.crt: a CA rotation is unfinished (run certs/rotate.sh ca again)"
  [ ! -e "$cert_dir/ca-next.crt" ] || die "a CA rotation is unfinished ($cert_dir/ca-next.crt exists): run certs/rotate.sh ca again first"
  serve "$cert_dir/ca.crt" "$cert_dir/ca.key" "$cert_dir/ca.crt"
  exit 0
fi

# --- CA rotation ---
if ca_usable "$cert_dir/ca-next.crt" "$cert_dir/ca-next.key"; then
  log "resuming: reusing the next CA $cert_dir/ca-next.crt"
else
  rm -f "$cert_dir/ca-next.crt" "$cert_dir/ca-next.key"
  make_ca "$work/ca-next.crt" "$work/ca-next.key" "$ca_days"
  mv -f "$work/ca-next.key" "$cert_dir/ca-next.key"
  mv -f "$work/ca-next.crt" "$cert_dir/ca-next.crt"
  log "created the next CA $cert_dir/ca-next.crt ($(openssl x509 -in "$cert_dir/ca-next.crt" -noout -subject))"
fi

# 2. Old and next CA side by side.
cat "$cert_dir/ca.crt" "$cert_dir/ca-next.crt" >"$work/bundle.crt"
openssl verify -CAfile "$work/bundle.crt" "$cert_dir/tls.crt" >/dev/null 2>&1 ||
  die "the combined caBundle does not verify the current serving certificate"
publish_bundle "$work/bundle.crt"
log "published caBundle = old CA + next CA"

# 3. The API server trusts the next CA.
log "probing ($probe_mode) until the API server trusts the next CA"
probe "$probe_mode" "$probe_timeout" "$work/bundle.crt" "$cert_dir/ca-next.crt" "$cert_dir/ca-next.key"
log "the API server trusts the next CA"

# 4. Serve a certificate of the next CA (unless an interrupted run already does).
if signed_by "$cert_dir/tls.crt" "$cert_dir/ca-next.crt" && key_matches "$cert_dir/tls.crt" "$cert_dir/tls.key"; then
  log "resuming: $cert_dir/tls.crt already comes from the next CA"
  publish_serving "$cert_dir/ca-next.crt"
else
  serve "$cert_dir/ca-next.crt" "$cert_dir/ca-next.key" "$cert_dir/ca-next.crt"
fi

# 5. Drop the old CA from the caBundle.
publish_bundle "$cert_dir/ca-next.crt"
probe loaded "$probe_timeout"
log "published caBundle = next CA alone; the API server has loaded it"

# 6. Promote.
cp -f "$cert_dir/ca.crt" "$cert_dir/ca-old.crt"
mv -f "$cert_dir/ca-next.key" "$cert_dir/ca.key"
mv -f "$cert_dir/ca-next.crt" "$cert_dir/ca.crt"
chmod 600 "$cert_dir/ca.key"
log "done: $cert_dir/ca.crt is the new CA ($(openssl x509 -in "$cert_dir/ca.crt" -noout -subject)); the old one is ca-old.crt"
