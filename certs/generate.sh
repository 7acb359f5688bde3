#!/usr/bin/env bash
# Creates (or keeps) the webhook's CA and serving certificate. See --help.
set -euo pipefail
PROG=generate.sh
# shellcheck source-path=SCRIPTDIR source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  cat <<EOF
Usage: certs/generate.sh [--cert-dir DIR] [--days N] [--ca-days N] [--renew] [--new-ca] [--san SAN]...

Writes into DIR (default: $DEFAULT_CERT_DIR, or \$VSCALER_CERT_DIR):
  ca.crt, ca.key    a private CA (ECDSA P-256), reused when DIR already holds a valid one
  tls.crt, tls.key  the webhook's serving certificate, signed by the CA, with the SANs
                    $(service_sans | tr '\n' ' ')
                    and any --san given
Private keys are mode 0600. Idempotent: an existing serving certificate is kept while it
verifies against ca.crt, matches tls.key, carries every SAN and has more than
$RENEW_BEFORE_DAYS days left (\$VSCALER_CERT_RENEW_BEFORE_DAYS); otherwise a new one is issued.
Files are replaced by atomic renames, so a server reading DIR (vscaler --cert-dir DIR) never
sees a partly written file.

A CA that is missing its key, expired or about to expire is not replaced silently (the
webhook configurations trust it): the script stops and names certs/rotate.sh ca, unless
--new-ca is given (for a first install only: it invalidates the published caBundle).

Options:
  --cert-dir DIR  output directory (created mode 0700 if missing)
  --days N        serving certificate validity in days (default 365)
  --ca-days N     CA validity in days (default 3650)
  --renew         issue a new serving certificate even if the current one is fine
  --new-ca        create a new CA even if one exists (implies --renew)
  --san SAN       an extra subjectAltName, e.g. DNS:webhook.example.com or IP:10.0.0.5
  -h, --help      this text
EOF
}

cert_dir=$DEFAULT_CERT_DIR
days=365
ca_days=3650
renew=0
new_ca=0
extra_sans=()
while [ $# -gt 0 ]; do
  case "$1" in
    --cert-dir | --out) cert_dir=${2:?$1 needs a directory}; shift 2 ;;
    --days) days=${2:?--days needs a number}; shift 2 ;;
    --ca-days) ca_days=${2:?--ca-days needs a number}; shift 2 ;;
    --renew) renew=1; shift ;;
    --new-ca) new_ca=1; renew=1; shift ;;
    --san) extra_sans+=("${2:?--san needs a value such as DNS:name or IP:addr}"); shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) usage >&2; die "unknown argument '$1'" ;;
  esac
done
[[ "$days" =~ ^[1-9][0-9]*$ ]] || die "--days must be a positive number, not '$days'"
[[ "$ca_days" =~ ^[1-9][0-9]*$ ]] || die "--ca-days must be a positive number, not '$ca_days'"
for san in "${extra_sans[@]}"; do
  [[ "$san" =~ ^(DNS|IP):[^,[:space:]]+$ ]] || die "--san '$san' must look like DNS:name or IP:address"
done
need openssl

if [ ! -d "$cert_dir" ]; then
  (umask 077 && mkdir -p "$cert_dir") || die "cannot create the directory $cert_dir"
fi
[ -w "$cert_dir" ] || die "the directory $cert_dir is not writable"
cert_dir=$(cd "$cert_dir" && pwd)
work=$(mktemp -d "$cert_dir/.generate.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The CA.
if [ "$new_ca" = 1 ] || { [ ! -e "$cert_dir/ca.crt" ] && [ ! -e "$cert_dir/ca.key" ]; }; then
  make_ca "$work/ca.crt" "$work/ca.key" "$ca_days"
  mv -f "$work/ca.key" "$cert_dir/ca.key"
  mv -f "$work/ca.crt" "$cert_dir/ca.crt"
  log "created a new CA in $cert_dir/ca.crt ($(openssl x509 -in "$cert_dir/ca.crt" -noout -subject))"
  renew=1
elif ! ca_usable "$cert_dir/ca.crt" "$cert_dir/ca.key"; then
  [ -s "$cert_dir/ca.key" ] || die "$cert_dir/ca.crt exists without ca.key: cannot sign (restore ca.key, or run certs/rotate.sh ca)"
  cert_is_ca "$cert_dir/ca.crt" || die "$cert_dir/ca.crt is not a CA certificate"
  key_matches "$cert_dir/ca.crt" "$cert_dir/ca.key" || die "$cert_dir/ca.key does not belong to ca.crt"
  die "the CA $cert_dir/ca.crt expires within $RENEW_BEFORE_DAYS days: replace it with certs/rotate.sh ca (or --new-ca on a first install)"
else
  chmod 600 "$cert_dir/ca.key"
fi

# The serving certificate.
mapfile -t sans < <(service_sans)
sans+=("${extra_sans[@]}")
reason=""
if [ "$renew" = 1 ]; then
  reason="requested"
elif [ ! -s "$cert_dir/tls.crt" ] || [ ! -s "$cert_dir/tls.key" ]; then
  reason="none yet"
elif ! key_matches "$cert_dir/tls.crt" "$cert_dir/tls.key"; then
  reason="tls.key does not match tls.crt"
elif ! signed_by "$cert_dir/tls.crt" "$cert_dir/ca.crt"; then
  reason="tls.crt is not signed by ca.crt"
elif ! cert_fresh "$cert_dir/tls.crt"; then
  reason="tls.crt expires within $RENEW_BEFORE_DAYS days"
elif ! cert_has_sans "$cert_dir/tls.crt" "${sans[@]}"; then
  reason="tls.crt lacks a SAN"
fi
if [ -n "$reason" ]; then
  make_serving "$work/tls.crt" "$work/tls.key" "$cert_dir/ca.crt" "$cert_dir/ca.key" "$days" "${sans[@]}"
  install_pair "$cert_dir" "$work/tls.crt" "$work/tls.key"
  log "issued a new serving certificate $cert_dir/tls.crt ($reason), valid until $(openssl x509 -in "$cert_dir/tls.crt" -noout -enddate | cut -d= -f2)"
else
  chmod 600 "$cert_dir/tls.key"
  log "kept the serving certificate $cert_dir/tls.crt (valid, signed by ca.crt, every SAN present)"
fi
