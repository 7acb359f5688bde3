#!/usr/bin/env bash
# `make demo`: shows vscaler's job on the local control plane. `scripts/demo.sh down` stops it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cluster_dir=${VSCALER_CLUSTER_DIR:-/tmp/vscaler-cluster}
kubectl=$cluster_dir/bin/kubectl
export KUBECONFIG=$cluster_dir/kubeconfig

if [ "${1:-}" = down ]; then
  "$root/test/cluster/down.sh"
  exit 0
fi

echo "== the local control plane"
"$kubectl" version
echo
"$kubectl" get namespaces
echo
echo "== done: a local etcd + kube-apiserver run on 127.0.0.1."
echo "   kubeconfig: $KUBECONFIG"
echo "   kubectl:    $kubectl"
echo "   stop it:    make demo-down"
