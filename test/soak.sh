#!/usr/bin/env bash
# `make soak`: the long forms of the reliability end-to-end tests (test/e2e/reliability_*_test.sh;
# `make test` runs their short forms) and any soak-only tests (test/e2e/soak_*.sh: loads this
# machine cannot pass reliably yet; none today) against a private local control plane, always
# torn down.
# Ends with one line "soak: N passed, N failed". Any RELIABILITY_* variable set by the caller wins.
# Usage: test/soak.sh [TEST...]   (e.g. kill apiserver_restart; default: every reliability test)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1

export RELIABILITY_RESTARTS=${RELIABILITY_RESTARTS:-10}      # API server restarts (make test: 2)
export RELIABILITY_SCALERS=${RELIABILITY_SCALERS:-100}       # scalers edited across them
export RELIABILITY_KILLS=${RELIABILITY_KILLS:-20}            # operator SIGKILLs (make test: 5)
export RELIABILITY_KILL_SCALERS=${RELIABILITY_KILL_SCALERS:-60}
export RELIABILITY_COMPACTION_SCALERS=${RELIABILITY_COMPACTION_SCALERS:-25} # per kind of change
export RELIABILITY_WEBHOOK_WRITES=${RELIABILITY_WEBHOOK_WRITES:-8} # per unreachable phase
export RELIABILITY_CONFLICT_SECONDS=${RELIABILITY_CONFLICT_SECONDS:-180}
export RELIABILITY_THROTTLE_SECONDS=${RELIABILITY_THROTTLE_SECONDS:-60}

export VSCALER_CLUSTER_DIR=/tmp/vscaler-soak-cluster-$$
trap 'test/cluster/down.sh >/dev/null 2>&1' EXIT
VSCALER_CLUSTER=minimal test/cluster/up.sh >/dev/null || { echo "soak: the local control plane did not start"; exit 1; }
export KUBECONFIG=$VSCALER_CLUSTER_DIR/kubeconfig
export KUBECTL=$VSCALER_CLUSTER_DIR/bin/kubectl
export VSCALER_BIN=${VSCALER_BIN:-$root/build/vscaler}

tests=()
for name in "$@"; do tests+=("test/e2e/reliability_${name}_test.sh"); done
if [ ${#tests[@]} -eq 0 ]; then
  shopt -s nullglob
  tests=(test/e2e/reliability_*_test.sh test/e2e/soak_*.sh)
  shopt -u nullglob
fi
passed=0
failed=()
for script in "${tests[@]}"; do
  name=$(basename "$script" .sh)
  echo "=== soak $name"
  start=$SECONDS
  if bash "$script"; then
    passed=$((passed + 1))
    echo "--- PASS $name ($((SECONDS - start))s)"
  else
    failed+=("$name")
    echo "--- FAIL $name ($((SECONDS - start))s)"
  fi
done
[ ${#failed[@]} -gt 0 ] && echo "failed: ${failed[*]}"
echo "soak: $passed passed, ${#failed[@]} failed"
[ ${#failed[@]} -eq 0 ]
