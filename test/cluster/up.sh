#!/usr/bin/env bash
# Starts a local control plane: etcd + kube-apiserver on 127.0.0.1, on free ports, with freshly
# generated CAs and certificates, RBAC authorization and a service-account signing key. Writes
# the admin kubeconfig to $VSCALER_CLUSTER_DIR/kubeconfig and kubectl to $VSCALER_CLUSTER_DIR/bin.
# Extra kube-apiserver flags: VSCALER_APISERVER_ARGS (e.g. --watch-cache=false).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.sh
. "$here/versions.sh"
# shellcheck source=lib.sh
. "$here/lib.sh"

if cluster_running; then
  echo "up.sh: a local control plane is already running in $CLUSTER_DIR (make cluster-down stops it)"
  print_paths
  exit 0
fi
# Leftovers of a control plane that died: clear them so we start clean.
rm -rf "$CLUSTER_DIR"
mkdir -p "$CLUSTER_DIR"/{pki,bin,etcd-data,apiserver}
chmod 700 "$CLUSTER_DIR/pki"

"$here/build.sh" >/dev/null
command -v openssl >/dev/null || { echo "up.sh: openssl is missing (make deps installs it)" >&2; exit 1; }
ln -sf "$KUBE_BIN_DIR/kubectl" "$CLUSTER_DIR/bin/kubectl"

pki=$CLUSTER_DIR/pki
gen_pki "$pki"

# start_plane: etcd then kube-apiserver on freshly picked free ports. The ports are free when
# picked but another process may take one before our servers bind it; start_plane fails then
# and is tried again with new ports.
start_plane() {
  read -r etcd_client_port etcd_peer_port apiserver_port < <(free_ports 3)
  echo "$apiserver_port" > "$CLUSTER_DIR/apiserver.port"
  echo "$etcd_client_port" > "$CLUSTER_DIR/etcd.port"

  etcd_url=http://127.0.0.1:$etcd_client_port
  start_process etcd "$ETCD_BIN_DIR/etcd" --name vscaler-test --data-dir "$CLUSTER_DIR/etcd-data" \
    --listen-client-urls "$etcd_url" --advertise-client-urls "$etcd_url" \
    --listen-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer_port" \
    --initial-cluster "vscaler-test=http://127.0.0.1:$etcd_peer_port" \
    --unsafe-no-fsync --quota-backend-bytes=8589934592 --log-level=warn
  wait_for "etcd" 60 curl -fsS "$etcd_url/health" || return 1

  # The apiserver command line is kept so that tests can restart the API server alone.
  cat > "$CLUSTER_DIR/apiserver.args" <<ARGS
--etcd-servers=$etcd_url
--cert-dir=$CLUSTER_DIR/apiserver
--tls-cert-file=$pki/apiserver.crt
--tls-private-key-file=$pki/apiserver.key
--client-ca-file=$pki/ca.crt
--secure-port=$apiserver_port
--bind-address=127.0.0.1
--advertise-address=127.0.0.1
--endpoint-reconciler-type=none
--service-cluster-ip-range=10.0.0.0/24
--authorization-mode=RBAC
--service-account-issuer=https://kubernetes.default.svc
--service-account-key-file=$pki/sa.pub
--service-account-signing-key-file=$pki/sa.key
--allow-privileged=false
--v=0
ARGS
  for arg in ${VSCALER_APISERVER_ARGS:-}; do echo "$arg" >> "$CLUSTER_DIR/apiserver.args"; done
  start_apiserver
  # On 2 cores the first start (RBAC bootstrap, CRD controllers) takes 20-60 s.
  wait_for "kube-apiserver" 180 apiserver_ready || return 1
}

for attempt in 1 2 3; do
  if start_plane; then break; fi
  stop_process kube-apiserver 3 || true
  stop_process etcd 3 || true
  [ "$attempt" -lt 3 ] || exit 1
  echo "up.sh: start attempt $attempt failed; retrying on other ports" >&2
  rm -rf "$CLUSTER_DIR/etcd-data" && mkdir -p "$CLUSTER_DIR/etcd-data"
done

write_kubeconfig "$CLUSTER_DIR/kubeconfig" "https://127.0.0.1:$apiserver_port" "$pki"
echo "up.sh: local control plane ready (kube-apiserver $KUBE_VERSION, etcd $ETCD_VERSION)"
print_paths
