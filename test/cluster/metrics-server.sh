#!/usr/bin/env bash
# Stops or starts the full plane's metrics-server alone, on the port and with the flags it was
# started with, for tests of what vscaler does while the metrics API is unavailable (the
# APIService v1beta1.metrics.k8s.io stays registered and answers 503). `start` waits until the
# APIService is Available again. Restart it before deleting namespaces: an unavailable aggregated
# API blocks namespace deletion.
#   test/cluster/metrics-server.sh stop|start
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.sh
. "$here/versions.sh"
# shellcheck source=lib.sh
. "$here/lib.sh"
kubectl=$CLUSTER_DIR/bin/kubectl
case ${1:-} in
  stop)
    stop_process metrics-server 5 || true
    echo "metrics-server.sh: metrics-server stopped"
    ;;
  start)
    pid_alive metrics-server || start_from_args metrics-server "$METRICS_SERVER_BIN_DIR/metrics-server"
    KUBECONFIG=$CLUSTER_DIR/kubeconfig "$kubectl" wait --for condition=Available --timeout=120s \
      apiservice/v1beta1.metrics.k8s.io >/dev/null
    echo "metrics-server.sh: metrics-server serving again"
    ;;
  *)
    echo "usage: $0 stop|start" >&2
    exit 2
    ;;
esac
