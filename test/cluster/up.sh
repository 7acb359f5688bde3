#!/usr/bin/env bash
# Starts the local cluster on 127.0.0.1, on free ports, with freshly generated CAs and
# certificates. Writes the admin kubeconfig to $VSCALER_CLUSTER_DIR/kubeconfig and kubectl to
# $VSCALER_CLUSTER_DIR/bin.
#   VSCALER_CLUSTER=full (default): etcd, kube-apiserver with the aggregation layer,
#     kube-controller-manager, kube-scheduler, kwok managing VSCALER_NODES (default 3) fake nodes
#     (32 CPU, 128Gi, VSCALER_NODE_PODS=500 pods each) and metrics-server as v1beta1.metrics.k8s.io
#     (see full.sh for how they are wired).
#   VSCALER_CLUSTER=minimal: etcd + kube-apiserver alone (RBAC, service-account signing key).
# Extra flags: VSCALER_APISERVER_ARGS for kube-apiserver (e.g. --watch-cache=false), and
# VSCALER_KUBE_CONTROLLER_MANAGER_ARGS, _KUBE_SCHEDULER_ARGS, _KWOK_ARGS, _METRICS_SERVER_ARGS.
# VSCALER_PROMETHEUS=1 (full only): also the cluster's Prometheus, scraping kwok (prometheus.sh up).
# When a component fails to start, one line names it (then its log's tail) and nothing started
# is left running.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.sh
. "$here/versions.sh"
# shellcheck source=lib.sh
. "$here/lib.sh"
# shellcheck source=full.sh
. "$here/full.sh"

mode=${VSCALER_CLUSTER:-full}
case "$mode" in
  full | minimal) ;;
  *) echo "up.sh: VSCALER_CLUSTER must be full or minimal, not '$mode'" >&2; exit 2 ;;
esac
VSCALER_NODES=${VSCALER_NODES:-3}
if ! [[ "$VSCALER_NODES" =~ ^[1-9][0-9]*$ ]] || [ "$VSCALER_NODES" -gt 4096 ]; then
  echo "up.sh: VSCALER_NODES must be a whole number from 1 to 4096, not '$VSCALER_NODES'" >&2
  exit 2
fi
if ! [[ "$NODE_PODS" =~ ^[1-9][0-9]*$ ]] || [ "$NODE_PODS" -gt 1000 ]; then
  echo "up.sh: VSCALER_NODE_PODS must be a whole number from 1 to 1000 (a node's pod range holds 1,022), not '$NODE_PODS'" >&2
  exit 2
fi

if cluster_running; then
  running=$(cat "$CLUSTER_DIR/mode" 2>/dev/null || echo minimal)
  echo "up.sh: a local cluster ($running) is already running in $CLUSTER_DIR (make cluster-down stops it)"
  [ "$running" = "$mode" ] || echo "up.sh: VSCALER_CLUSTER=$mode was asked for; it is left as it is"
  if [ "${VSCALER_PROMETHEUS:-0}" = 1 ] && [ "$running" = full ]; then "$here/prometheus.sh" up; fi
  print_paths
  exit 0
fi
# Leftovers of a cluster that died: clear them so we start clean (a Prometheus left running too).
stop_process prometheus 3 || true
rm -rf "$CLUSTER_DIR"
mkdir -p "$CLUSTER_DIR"/{pki,bin,etcd-data,apiserver}
chmod 700 "$CLUSTER_DIR/pki"

"$here/build.sh" >/dev/null
command -v openssl >/dev/null || { echo "up.sh: openssl is missing (make deps installs it)" >&2; exit 1; }
ln -sf "$KUBE_BIN_DIR/kubectl" "$CLUSTER_DIR/bin/kubectl"
kubectl=$CLUSTER_DIR/bin/kubectl

# From here on a failure stops whatever was started.
started_ok=0
trap '[ "$started_ok" = 1 ] || stop_all >/dev/null' EXIT
start=$SECONDS
pki=$CLUSTER_DIR/pki
gen_pki "$pki"
[ "$mode" = minimal ] || gen_full_pki "$pki"

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

  # The API server presents webhook-client.crt to every webhook (AdmissionConfiguration
  # kubeConfigFile, user "*"), so that vscaler --webhook-client-ca-file can tell it from anyone
  # else who reaches the webhook port.
  cat > "$CLUSTER_DIR/webhook-client.kubeconfig" <<KC
apiVersion: v1
kind: Config
users:
- name: "*"
  user:
    client-certificate: $pki/webhook-client.crt
    client-key: $pki/webhook-client.key
KC
  cat > "$CLUSTER_DIR/admission.yaml" <<ADMISSION
apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: $CLUSTER_DIR/webhook-client.kubeconfig
- name: MutatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: $CLUSTER_DIR/webhook-client.kubeconfig
ADMISSION
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
--admission-control-config-file=$CLUSTER_DIR/admission.yaml
--v=0
ARGS
  # The aggregation layer: the API server proxies aggregated APIs (metrics.k8s.io) with the
  # front-proxy client certificate, which the aggregated servers trust through the
  # --requestheader-* settings it publishes in kube-system/extension-apiserver-authentication.
  [ "$mode" = minimal ] || cat >> "$CLUSTER_DIR/apiserver.args" <<ARGS
--requestheader-client-ca-file=$pki/front-proxy-ca.crt
--requestheader-allowed-names=front-proxy-client
--requestheader-username-headers=X-Remote-User
--requestheader-group-headers=X-Remote-Group
--requestheader-extra-headers-prefix=X-Remote-Extra-
--proxy-client-cert-file=$pki/front-proxy-client.crt
--proxy-client-key-file=$pki/front-proxy-client.key
ARGS
  for arg in ${VSCALER_APISERVER_ARGS:-}; do echo "$arg" >> "$CLUSTER_DIR/apiserver.args"; done
  start_apiserver
  # On 2 cores the first start (RBAC bootstrap, CRD controllers) takes 20-60 s.
  wait_for "kube-apiserver" 180 apiserver_ready || return 1
}

for attempt in 1 2 3; do
  # What failed is told only when no retry follows.
  if start_plane 2>"$CLUSTER_DIR/plane.wait"; then break; fi
  stop_process kube-apiserver 3 || true
  stop_process etcd 3 || true
  # Only a port lost between picking and binding is worth another try.
  { [ "$attempt" -lt 3 ] && { port_clash etcd || port_clash kube-apiserver; }; } || {
    cat "$CLUSTER_DIR/plane.wait" >&2
    exit 1
  }
  echo "up.sh: a port was taken (attempt $attempt); retrying on other ports" >&2
  rm -rf "$CLUSTER_DIR/etcd-data" && mkdir -p "$CLUSTER_DIR/etcd-data"
done

write_kubeconfig "$CLUSTER_DIR/kubeconfig" "https://127.0.0.1:$apiserver_port" "$pki"
export KUBECONFIG=$CLUSTER_DIR/kubeconfig
if [ "$mode" = full ]; then
  start_full || exit 1
  if [ "${VSCALER_PROMETHEUS:-0}" = 1 ]; then "$here/prometheus.sh" up || exit 1; fi
  what="etcd $ETCD_VERSION, kube-apiserver/controller-manager/scheduler $KUBE_VERSION, kwok $KWOK_VERSION ($VSCALER_NODES nodes), metrics-server $METRICS_SERVER_VERSION"
else
  what="etcd $ETCD_VERSION, kube-apiserver $KUBE_VERSION"
fi
echo "$mode" > "$CLUSTER_DIR/mode"
started_ok=1
echo "up.sh: local cluster ($mode) ready in $((SECONDS - start))s: $what"
print_paths
