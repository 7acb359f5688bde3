#!/usr/bin/env bash
# Restarts the local kube-apiserver alone (etcd keeps its data), for tests of watch resumption
# and of the operator surviving API server restarts. Waits until it is ready again.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.sh
. "$here/versions.sh"
# shellcheck source=lib.sh
. "$here/lib.sh"
stop_process kube-apiserver 3 || true
start_apiserver
wait_for kube-apiserver 180 apiserver_ready
echo "restart-apiserver.sh: kube-apiserver restarted"
