# Helpers for end-to-end tests (sourced). The runner exports KUBECONFIG, KUBECTL and VSCALER_BIN.
set -euo pipefail
: "${KUBECONFIG:?run through test/run.sh (KUBECONFIG unset)}"
: "${KUBECTL:?run through test/run.sh (KUBECTL unset)}"

k() { "$KUBECTL" "$@"; }

# fail MESSAGE: print and stop the test.
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# expect_eq WHAT ACTUAL EXPECTED
expect_eq() {
  [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
  echo "ok: $1 = '$3'"
}

# eventually SECONDS COMMAND...: retries COMMAND every 0.2 s until it succeeds.
eventually() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    [ $SECONDS -lt $deadline ] || fail "timed out waiting for: $*"
    sleep 0.2
  done
}

# unique_namespace PREFIX: creates and prints a fresh namespace.
unique_namespace() {
  local ns
  ns="$1-$(date +%s%N | tail -c 7)"
  k create namespace "$ns" >/dev/null
  echo "$ns"
}
