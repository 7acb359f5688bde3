# Functions shared by certs/generate.sh, certs/install.sh and certs/rotate.sh (sourced, never run).
# Needs: openssl (3.x), kubectl for the cluster parts ($KUBECTL, else kubectl on PATH).
# shellcheck shell=bash disable=SC2034  # the names below are used by the scripts that source this

CERTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_ROOT=$(cd "$CERTS_DIR/.." && pwd)
PROG=${PROG:-$(basename "$0")}

# The names DESIGN.md fixes.
NAMESPACE=vscaler-system
SERVICE=vscaler-webhook
SECRET=vscaler-webhook-tls
CONFIG_NAME=vscaler
FIELD_MANAGER=vscaler-certs
DEFAULT_CERT_DIR=${VSCALER_CERT_DIR:-$REPO_ROOT/certs/out}
# A certificate closer to its end than this is renewed (days).
RENEW_BEFORE_DAYS=${VSCALER_CERT_RENEW_BEFORE_DAYS:-30}

log() { echo "$PROG: $*" >&2; }
die() {
  echo "$PROG: error: $*" >&2
  exit 1
}
need() {
  local cmd
  for cmd in "$@"; do
    command -v "$cmd" >/dev/null 2>&1 || die "'$cmd' is not installed (needed by $PROG)"
  done
}

# kube ARGS...: kubectl against $KUBECONFIG (or kubectl's default).
kube() { "${KUBECTL:-kubectl}" "$@"; }
need_kubectl() {
  command -v "${KUBECTL:-kubectl}" >/dev/null 2>&1 ||
    die "kubectl not found (set KUBECTL=/path/to/kubectl or put kubectl on PATH)"
}

# ---------------------------------------------------------------------------------------------
# Certificates

# service_sans: the DNS names of the Service, then the local names.
service_sans() {
  printf '%s\n' "DNS:$SERVICE" "DNS:$SERVICE.$NAMESPACE" "DNS:$SERVICE.$NAMESPACE.svc" \
    "DNS:$SERVICE.$NAMESPACE.svc.cluster.local" "DNS:localhost" "IP:127.0.0.1"
}

# cert_sans FILE: the certificate's SANs, one a line, as "DNS:name" / "IP:addr".
cert_sans() {
  openssl x509 -in "$1" -noout -ext subjectAltName 2>/dev/null | tail -n +2 | tr ',' '\n' |
    sed -e 's/^[[:space:]]*//' -e 's/^IP Address:/IP:/' -e '/^$/d'
}

# cert_has_sans FILE SAN...: true when every SAN is in the certificate.
cert_has_sans() {
  local file=$1 have san
  shift
  have=$(cert_sans "$file")
  for san in "$@"; do
    grep -qxF -- "$san" <<<"$have" || return 1
  done
}

# cert_fresh FILE: parses, and is valid for more than RENEW_BEFORE_DAYS.
cert_fresh() {
  [ -s "$1" ] && openssl x509 -in "$1" -noout -checkend $((RENEW_BEFORE_DAYS * 86400)) >/dev/null 2>&1
}

# cert_is_ca FILE
cert_is_ca() { openssl x509 -in "$1" -noout -ext basicConstraints 2>/dev/null | grep -q 'CA:TRUE'; }

# key_matches CERT KEY: the private key belongs to the certificate.
key_matches() {
  local a b
  a=$(openssl x509 -in "$1" -noout -pubkey 2>/dev/null | openssl sha256 2>/dev/null) || return 1
  b=$(openssl pkey -in "$2" -pubout 2>/dev/null | openssl sha256 2>/dev/null) || return 1
  [ -n "$a" ] && [ "$a" = "$b" ]
}

# signed_by CERT CA_CERT: CERT verifies against CA_CERT alone (as a TLS server certificate).
signed_by() {
  openssl verify -purpose sslserver -CAfile "$2" "$1" >/dev/null 2>&1
}

# fingerprint FILE: SHA-256 fingerprint of a PEM certificate.
fingerprint() { openssl x509 -in "$1" -noout -fingerprint -sha256 2>/dev/null | cut -d= -f2; }

# not_after_epoch FILE: the certificate's end of validity, in seconds since the epoch.
not_after_epoch() {
  local end
  end=$(openssl x509 -in "$1" -noout -enddate | cut -d= -f2)
  date -d "$end" +%s
}

# ca_usable CRT KEY: a CA certificate with its key, valid for more than RENEW_BEFORE_DAYS.
ca_usable() {
  [ -s "$1" ] && [ -s "$2" ] && cert_fresh "$1" && cert_is_ca "$1" && key_matches "$1" "$2"
}

# new_key FILE: an ECDSA P-256 private key, mode 0600.
new_key() {
  (umask 077 && openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null) ||
    die "openssl could not create a private key in $1"
  chmod 600 "$1"
}

# make_ca CRT KEY DAYS: a new self-signed CA (unique subject, so that an old and a new CA in one
# caBundle are never confused).
make_ca() {
  local crt=$1 key=$2 days=$3 cnf
  cnf=$(mktemp)
  cat >"$cnf" <<EOF
[req]
distinguished_name = dn
prompt = no
x509_extensions = v3_ca
[dn]
CN = vscaler-webhook-ca-$(date -u +%Y%m%d%H%M%S)-$(openssl rand -hex 3)
[v3_ca]
basicConstraints = critical, CA:TRUE, pathlen:0
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
EOF
  new_key "$key"
  if ! openssl req -x509 -new -key "$key" -config "$cnf" -days "$days" -sha256 \
    -set_serial "0x$(openssl rand -hex 16)" -out "$crt" 2>/dev/null; then
    rm -f "$cnf"
    die "openssl could not create the CA certificate $crt"
  fi
  rm -f "$cnf"
  chmod 644 "$crt"
}

# make_serving CRT KEY CA_CRT CA_KEY DAYS SAN...: a TLS server certificate signed by the CA.
make_serving() {
  local crt=$1 key=$2 ca_crt=$3 ca_key=$4 days=$5 cnf csr
  shift 5
  local sans
  sans=$(IFS=,; echo "$*")
  cnf=$(mktemp)
  csr=$(mktemp)
  cat >"$cnf" <<EOF
[req]
distinguished_name = dn
prompt = no
[dn]
CN = $SERVICE.$NAMESPACE.svc
[v3]
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
subjectAltName = $sans
EOF
  new_key "$key"
  if ! openssl req -new -key "$key" -config "$cnf" -out "$csr" 2>/dev/null ||
    ! openssl x509 -req -in "$csr" -CA "$ca_crt" -CAkey "$ca_key" -days "$days" -sha256 \
      -set_serial "0x$(openssl rand -hex 16)" -extfile "$cnf" -extensions v3 -out "$crt" 2>/dev/null; then
    rm -f "$cnf" "$csr"
    die "openssl could not sign the serving certificate $crt with $ca_crt"
  fi
  rm -f "$cnf" "$csr"
  chmod 644 "$crt"
}

# install_pair DIR CRT KEY: moves a new serving pair into DIR as tls.crt/tls.key, each by an
# atomic rename (the key first, then the certificate: a reader that loads both and checks that
# they match never sees a torn file, and at worst one mismatched pair for a moment).
install_pair() {
  local dir=$1 crt=$2 key=$3
  chmod 600 "$key"
  chmod 644 "$crt"
  mv -f "$key" "$dir/tls.key" || die "could not write $dir/tls.key"
  mv -f "$crt" "$dir/tls.crt" || die "could not write $dir/tls.crt"
}

# b64 FILE: base64 on one line.
b64() { base64 -w0 <"$1"; }

# ---------------------------------------------------------------------------------------------
# Webhook configurations and their caBundle

WEBHOOK_KINDS=(mutatingwebhookconfiguration validatingwebhookconfiguration)

# config_exists KIND NAME
config_exists() { kube get "$1" "$2" -o name >/dev/null 2>&1; }

# set_ca_bundle KIND NAME BUNDLE_FILE: the caBundle of every webhook of one configuration.
set_ca_bundle() {
  local kind=$1 name=$2 bundle count i patch="" data
  bundle=$(b64 "$3")
  count=$(kube get "$kind" "$name" -o jsonpath='{range .webhooks[*]}x{end}' 2>/dev/null | wc -c) ||
    die "could not read $kind/$name"
  [ "$count" -gt 0 ] || die "$kind/$name has no webhooks"
  for ((i = 0; i < count; i++)); do
    patch+="${patch:+,}{\"op\":\"add\",\"path\":\"/webhooks/$i/clientConfig/caBundle\",\"value\":\"$bundle\"}"
  done
  data=$(mktemp)
  echo "[$patch]" >"$data"
  if ! kube patch "$kind" "$name" --type=json --field-manager="$FIELD_MANAGER" --patch-file="$data" >/dev/null; then
    rm -f "$data"
    die "could not set the caBundle of $kind/$name"
  fi
  rm -f "$data"
}

# get_ca_bundles KIND NAME: the distinct caBundles (base64) of one configuration, one a line.
get_ca_bundles() {
  kube get "$1" "$2" -o jsonpath='{range .webhooks[*]}{.clientConfig.caBundle}{"\n"}{end}' | sort -u
}

# ---------------------------------------------------------------------------------------------
# Probing the API server's view of the webhook configurations
#
# The API server reads webhook configurations from an informer and applies changes
# asynchronously. A probe creates, AFTER the change to observe, a webhook configuration of the
# same kind that matches only a server-side dry-run Namespace CREATE carrying a unique label.
# Watch events of one resource arrive in order, so once the API server calls the probe webhook it
# has also seen the earlier change (on this API server instance: with several instances behind a
# load balancer, PROBE_SUCCESSES consecutive successes make it likely every one has).
#   loaded: the probe webhook points at a Service that does not exist, failurePolicy Fail; the
#           dry-run fails naming the probe webhook once the API server has loaded it. Works
#           everywhere, needs nothing running.
#   served: the probe webhook points at certs/probe-server.py, run here on 127.0.0.1 with a
#           certificate from the new CA, with the caBundle being published; success is the
#           dry-run answered by the probe (its warning carries the nonce): the API server trusts
#           the new chain through that exact caBundle. Needs an API server that reaches this
#           machine's 127.0.0.1 (a local control plane).

PROBE_SUCCESSES=${VSCALER_PROBE_SUCCESSES:-3}
PROBE_NAME_PREFIX=vscaler-probe
_probe_pids=()
_probe_objects=()
_probe_tmp=()

probe_cleanup() {
  local pid obj
  for pid in "${_probe_pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for obj in "${_probe_objects[@]}"; do kube delete "$obj" --ignore-not-found --wait=false >/dev/null 2>&1 || true; done
  for obj in "${_probe_tmp[@]}"; do rm -rf "$obj"; done
  _probe_pids=()
  _probe_objects=()
  _probe_tmp=()
}

# delete_stale_probes: probe configurations an interrupted run left behind.
delete_stale_probes() {
  local kind
  for kind in "${WEBHOOK_KINDS[@]}"; do
    kube delete "$kind" -l app.kubernetes.io/name="$PROBE_NAME_PREFIX" --ignore-not-found >/dev/null 2>&1 || true
  done
}

# _probe_config KIND NAME WEBHOOK LABEL CLIENTCONFIG_JSON
_probe_config() {
  local kind=Mutating
  [ "$1" = validatingwebhookconfiguration ] && kind=Validating
  cat <<EOF
{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "${kind}WebhookConfiguration",
 "metadata": {"name": "$2", "labels": {"app.kubernetes.io/name": "$PROBE_NAME_PREFIX"}},
 "webhooks": [{"name": "$3", "admissionReviewVersions": ["v1"], "sideEffects": "None",
   "failurePolicy": "Fail", "timeoutSeconds": 5, "clientConfig": $5,
   "objectSelector": {"matchLabels": {"vscaler.dev/probe": "$4"}},
   "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": ["namespaces"],
              "operations": ["CREATE"], "scope": "Cluster"}]}]}
EOF
}

# _probe_try LABEL: one server-side dry-run Namespace CREATE matched by the probe; prints what
# kubectl said (stdout and stderr), true when kubectl succeeded.
_probe_try() {
  kube create --dry-run=server -o name -f - 2>&1 <<EOF
{"apiVersion": "v1", "kind": "Namespace",
 "metadata": {"name": "vscaler-probe-$(openssl rand -hex 4)", "labels": {"vscaler.dev/probe": "$1"}}}
EOF
}

# probe MODE TIMEOUT BUNDLE_FILE [CA_CRT CA_KEY]: waits until the API server has loaded every
# webhook configuration change made before this call (MODE loaded), or until it calls a
# webhook through BUNDLE_FILE presenting a certificate of CA_CRT (MODE served). Dies on timeout.
probe() {
  local mode=$1 timeout=$2 bundle_file=${3:-} ca_crt=${4:-} ca_key=${5:-}
  local nonce tmp client kind name webhook label out deadline ok
  nonce=$(openssl rand -hex 6)
  tmp=$(mktemp -d)
  _probe_tmp+=("$tmp")
  delete_stale_probes
  case "$mode" in
    loaded)
      client="{\"service\": {\"namespace\": \"$NAMESPACE\", \"name\": \"$PROBE_NAME_PREFIX-absent-$nonce\", \"port\": 443}}"
      ;;
    served)
      need python3
      make_serving "$tmp/tls.crt" "$tmp/tls.key" "$ca_crt" "$ca_key" 1 "IP:127.0.0.1"
      python3 "$CERTS_DIR/probe-server.py" --cert "$tmp/tls.crt" --key "$tmp/tls.key" \
        --port-file "$tmp/port" --warning "vscaler-probe $nonce reached" >"$tmp/server.log" 2>&1 &
      _probe_pids+=($!)
      local i
      for i in $(seq 1 100); do
        [ -s "$tmp/port" ] && break
        sleep 0.1
      done
      [ -s "$tmp/port" ] || die "certs/probe-server.py did not start: $(cat "$tmp/server.log")"
      client="{\"url\": \"https://127.0.0.1:$(cat "$tmp/port")/probe\", \"caBundle\": \"$(b64 "$bundle_file")\"}"
      ;;
    *) die "unknown probe mode '$mode' (loaded or served)" ;;
  esac
  for kind in "${WEBHOOK_KINDS[@]}"; do
    name=$PROBE_NAME_PREFIX-${kind%%webhookconfiguration}-$nonce
    webhook=$nonce.${kind%%webhookconfiguration}.probe.vscaler.dev
    label=$nonce-${kind:0:1}
    _probe_config "$kind" "$name" "$webhook" "$label" "$client" >"$tmp/$kind.json"
    kube create -f "$tmp/$kind.json" >/dev/null || die "could not create the probe $kind/$name"
    _probe_objects+=("$kind/$name")
  done
  deadline=$((SECONDS + timeout))
  for kind in "${WEBHOOK_KINDS[@]}"; do
    webhook=$nonce.${kind%%webhookconfiguration}.probe.vscaler.dev
    label=$nonce-${kind:0:1}
    ok=0
    while [ "$ok" -lt "$PROBE_SUCCESSES" ]; do
      if out=$(_probe_try "$label"); then
        if [ "$mode" = served ] && grep -q "vscaler-probe $nonce reached" <<<"$out"; then ok=$((ok + 1)); else ok=0; fi
      else
        if [ "$mode" = loaded ] && grep -qF "$webhook" <<<"$out"; then ok=$((ok + 1)); else ok=0; fi
      fi
      [ "$ok" -ge "$PROBE_SUCCESSES" ] && break
      if [ $SECONDS -ge $deadline ]; then
        probe_cleanup
        die "probe ($mode): the API server did not reach the probe webhook of ${kind} within ${timeout}s; last answer: $(tail -n 3 <<<"$out")"
      fi
      sleep 0.2
    done
  done
  probe_cleanup
}

# ---------------------------------------------------------------------------------------------
# What the webhook server presents

# served_fingerprint HOST:PORT: SHA-256 fingerprint of the certificate served there (empty if
# nothing answers).
served_fingerprint() {
  timeout 5 openssl s_client -connect "$1" </dev/null 2>/dev/null |
    openssl x509 -noout -fingerprint -sha256 2>/dev/null | cut -d= -f2 || true
}

# wait_served_addr HOST:PORT CRT TIMEOUT: until HOST:PORT presents CRT.
wait_served_addr() {
  local addr=$1 crt=$2 timeout=$3 want got="" deadline
  want=$(fingerprint "$crt")
  deadline=$((SECONDS + timeout))
  while :; do
    got=$(served_fingerprint "$addr")
    [ "$got" = "$want" ] && return 0
    [ $SECONDS -lt $deadline ] || die "$addr does not serve the new certificate after ${timeout}s (serves ${got:-nothing}; want $want)"
    sleep 0.2
  done
}

# wait_served_pods CRT TIMEOUT: until every running vscaler pod reports CRT's expiry in its
# vscaler_serving_cert_expiry_timestamp_seconds metric (read through the API server's pod proxy).
wait_served_pods() {
  local crt=$1 timeout=$2 want deadline pods pod value pending
  want=$(not_after_epoch "$crt")
  deadline=$((SECONDS + timeout))
  while :; do
    pods=$(kube -n "$NAMESPACE" get pods -l app.kubernetes.io/name=vscaler \
      --field-selector=status.phase=Running -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' 2>/dev/null || true)
    [ -n "$pods" ] || die "no running vscaler pod in $NAMESPACE to check the served certificate (use --serve-addr HOST:PORT)"
    pending=""
    for pod in $pods; do
      value=$(kube get --raw "/api/v1/namespaces/$NAMESPACE/pods/http:$pod:8080/proxy/metrics" 2>/dev/null |
        awk '$1 == "vscaler_serving_cert_expiry_timestamp_seconds" { printf "%.0f", $2 }' || true)
      [ "$value" = "$want" ] || pending+=" $pod(${value:-?})"
    done
    [ -z "$pending" ] && return 0
    [ $SECONDS -lt $deadline ] || die "pods still serve an older certificate after ${timeout}s:$pending (want expiry $want)"
    sleep 2
  done
}
