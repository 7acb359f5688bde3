#!/usr/bin/env bash
# Stops exactly the processes up.sh started (by recorded pid, whichever plane it was) and removes
# the state directory.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

if [ ! -d "$CLUSTER_DIR" ]; then
  echo "down.sh: no local cluster in $CLUSTER_DIR; nothing to stop"
  exit 0
fi
# The cluster's Prometheus first, when prometheus.sh started one (it scrapes kwok).
prometheus=""
if stop_process prometheus 5; then prometheus="prometheus "; fi
names=$prometheus$(stop_all)
rm -rf "$CLUSTER_DIR"
if [ -z "$names" ]; then
  echo "down.sh: nothing was running in $CLUSTER_DIR; removed its state"
else
  echo "down.sh: stopped $names; removed $CLUSTER_DIR"
fi
