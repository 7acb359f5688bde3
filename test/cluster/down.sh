#!/usr/bin/env bash
# Stops exactly the processes up.sh started (by recorded pid) and removes the state directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

if [ ! -d "$CLUSTER_DIR" ]; then
  echo "down.sh: no local control plane in $CLUSTER_DIR; nothing to stop"
  exit 0
fi
stopped=()
stop_process kube-apiserver 3 && stopped+=(kube-apiserver)
stop_process etcd && stopped+=(etcd)
rm -rf "$CLUSTER_DIR"
if [ ${#stopped[@]} -eq 0 ]; then
  echo "down.sh: nothing was running in $CLUSTER_DIR; removed its state"
else
  echo "down.sh: stopped ${stopped[*]}; removed $CLUSTER_DIR"
fi
