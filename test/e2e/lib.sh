# Helpers for end-to-end tests (sourced). The runner exports KUBECONFIG, KUBECTL and VSCALER_BIN.
set -euo pipefail
: "${KUBECONFIG:?run through test/run.sh (KUBECONFIG unset)}"
: "${KUBECTL:?run through test/run.sh (KUBECTL unset)}"

k() { "$KUBECTL" "$@"; }
# shellcheck source=../../scripts/process.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/process.sh"

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

# ---- the operator as a process -------------------------------------------------------------

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

# install_crd: applies the VerticalScaler CRD and waits until it is served.
install_crd() {
  k apply -f "$ROOT/manifests/crd/verticalscalers.yaml" >/dev/null
  k wait --for condition=established --timeout=60s crd/verticalscalers.scaling.vscaler.dev >/dev/null
}

# free_port: one free TCP port on 127.0.0.1 (scripts/process.sh's free_ports).
free_port() { free_ports 1; }

# self_signed_certs DIR: a throwaway serving certificate for 127.0.0.1 in DIR/tls.{crt,key}.
self_signed_certs() {
  mkdir -p "$1"
  openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj "/CN=127.0.0.1" \
    -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
    -keyout "$1/tls.key" -out "$1/tls.crt" 2>/dev/null
}

# The user vscaler runs as in the tests and the demo, as in a cluster: its ServiceAccount's name.
# The webhook configurations' matchConditions exclude it, so vscaler's own patches are never
# hooked by its own webhook; the tests write as the admin user.
VSCALER_USER=system:serviceaccount:vscaler-system:vscaler

# operator_kubeconfig: prints a kubeconfig for $VSCALER_USER (test/cluster/operator-kubeconfig.sh:
# a client certificate of the local cluster's CA, the shipped RBAC bound to it). Without the
# cluster's CA (another cluster) it prints $KUBECONFIG: vscaler then runs as that user and relies
# on its webhook skipping writes of its own field manager.
operator_kubeconfig() {
  if [ -z "${VSCALER_CLUSTER_DIR:-}" ] || [ ! -f "$VSCALER_CLUSTER_DIR/pki/ca.key" ]; then
    echo "$KUBECONFIG"
    return
  fi
  "$ROOT/test/cluster/operator-kubeconfig.sh"
}

# start_operator [FLAGS...]: runs $VSCALER_BIN against the test cluster on free ports as
# $VSCALER_USER (see operator_kubeconfig), waits for /readyz and stops it when the test exits.
# Sets OPERATOR_PID, METRICS_URL, HEALTH_URL, DASHBOARD_URL, WEBHOOK_PORT, OPERATOR_LOG, CERT_DIR
# (uses $CERT_DIR when set and holding tls.crt).
start_operator() {
  : "${VSCALER_BIN:?run through test/run.sh (VSCALER_BIN unset)}"
  WORK_DIR=${WORK_DIR:-$(mktemp -d /tmp/vscaler-e2e.XXXXXX)}
  CERT_DIR=${CERT_DIR:-$WORK_DIR/certs}
  [ -f "$CERT_DIR/tls.crt" ] || self_signed_certs "$CERT_DIR"
  WEBHOOK_PORT=${WEBHOOK_PORT:-$(free_port)}
  local metrics_port health_port dashboard_port
  read -r metrics_port health_port dashboard_port < <(free_ports 3 "$WEBHOOK_PORT")
  METRICS_URL=http://127.0.0.1:$metrics_port/metrics
  HEALTH_URL=http://127.0.0.1:$health_port
  DASHBOARD_URL=http://127.0.0.1:$dashboard_port
  OPERATOR_LOG=$WORK_DIR/operator.log
  local kubeconfig
  kubeconfig=$(operator_kubeconfig) || fail "no kubeconfig for $VSCALER_USER"
  process_spawn "$OPERATOR_LOG" "$VSCALER_BIN" --kubeconfig "$kubeconfig" --webhook-port "$WEBHOOK_PORT" \
    --cert-dir "$CERT_DIR" --metrics-addr "127.0.0.1:$metrics_port" --health-addr "127.0.0.1:$health_port" \
    --dashboard-addr "127.0.0.1:$dashboard_port" "$@"
  OPERATOR_RECORD=$PROCESS_RECORD
  OPERATOR_PID=${OPERATOR_RECORD%% *}
  trap 'stop_operator' EXIT
  process_await "$OPERATOR_RECORD" 60 "the operator" "$OPERATOR_LOG" curl -fsS "$HEALTH_URL/readyz" ||
    exit 1
}

# start_operator_with_webhooks ARGS...: the CRDs, the url-based webhook configurations of
# manifests/local/ registered for a vscaler on a free port (certs/install.sh --local), then
# start_operator ARGS; the EXIT trap unregisters the webhooks and stops the operator.
start_operator_with_webhooks() {
  install_crd
  WORK_DIR=$(mktemp -d /tmp/vscaler-e2e.XXXXXX)
  CERT_DIR=$WORK_DIR/certs
  WEBHOOK_PORT=$(free_port)
  "$ROOT/certs/install.sh" --local --port "$WEBHOOK_PORT" --cert-dir "$CERT_DIR" >/dev/null
  start_operator "$@"
  trap 'unregister_webhooks; stop_operator' EXIT
}
unregister_webhooks() { "$ROOT/certs/install.sh" --uninstall --local >/dev/null 2>&1 || true; }

stop_operator() {
  if [ -n "${OPERATOR_RECORD:-}" ]; then
    kill -CONT "$OPERATOR_PID" 2>/dev/null || true # a test may have stopped it (SIGSTOP)
    process_stop "$OPERATOR_RECORD" || true
  fi
  if [ "${KEEP_LOGS:-}" = "" ] && [ -n "${WORK_DIR:-}" ]; then rm -rf "$WORK_DIR"; fi
}

# metric NAME_WITH_LABELS: the operator's current value of one series (0 when absent).
metric() {
  curl -fsS "$METRICS_URL" | awk -v name="$1" '$1 == name {print $2; found=1} END {if (!found) print 0}'
}

# jp NS KIND/NAME JSONPATH: one field of one object.
jp() { k -n "$1" get "$2" -o jsonpath="$3"; }

# condition NS SCALER TYPE [FIELD]: reason (or another field) of a scaler's condition.
condition() {
  jp "$1" "vsc/$2" "{.status.conditions[?(@.type==\"$3\")].${4:-reason}}"
}

# make_deployment NS NAME [CONTAINERS_JSON]: a Deployment (never runs: no kubelet here).
make_deployment() {
  local containers=${3:-'[{"name":"app","image":"registry.k8s.io/pause:3.10"}]'}
  k -n "$1" apply -f - >/dev/null <<JSON
{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"$2"},
 "spec":{"replicas":1,"selector":{"matchLabels":{"app":"$2"}},
  "template":{"metadata":{"labels":{"app":"$2"}},"spec":{"containers":$containers}}}}
JSON
}

# make_scaler NS NAME DEPLOYMENT MODE CONTAINERS_JSON: a VerticalScaler.
make_scaler() {
  k -n "$1" apply -f - >/dev/null <<JSON
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"$2"},
 "spec":{"deploymentName":"$3","updateMode":"$4","containers":$5}}
JSON
}
