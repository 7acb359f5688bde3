# shellcheck shell=bash
# shellcheck disable=SC2034  # BENCH_CLUSTER_DIR, OP_METRICS, OP_LOG, OP_PID are for the sections
# Helpers for the sections that run operators against a local control plane
# (bench/sections/edits.sh, bench/sections/scale.sh); sourced, not run. Everything a section
# starts here is stopped by its EXIT trap (bench_cleanup), by pid.
#
# Environment:
#   VSCALER_BENCH_CLUSTER_DIR  use the control plane already running there (left running);
#                              default: a private one under /tmp, stopped at exit
#   VSCALER_BUILD_DIR          the release build tree holding the vscaler binary (build/release)

root=${root:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
bench_bin=$root/build/bench
# shellcheck source=../../scripts/process.sh
. "$root/scripts/process.sh"
BENCH_PIDS=()
BENCH_OWN_CLUSTER=
BENCH_WEBHOOK=
BENCH_WORK=

# bench_cleanup: stops every operator this section started, unregisters the webhooks, stops the
# control plane if the section started it. Installed as the EXIT trap by bench_setup.
bench_cleanup() {
  local pid
  for pid in "${BENCH_PIDS[@]}"; do
    kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  done
  if [ -n "$BENCH_WEBHOOK" ]; then
    KUBECTL=$KUBECTL "$root/certs/install.sh" --uninstall --local >/dev/null 2>&1 || true
  fi
  if [ -n "$BENCH_OWN_CLUSTER" ]; then
    VSCALER_CLUSTER_DIR=$BENCH_OWN_CLUSTER "$root/test/cluster/down.sh" >&2 || true
  fi
  [ -n "$BENCH_WORK" ] && rm -rf "$BENCH_WORK"
}

# bench_setup: builds vsbench and the peer into build/bench, brings up (or reuses) the control
# plane, installs the CRD. Exports KUBECONFIG and KUBECTL; sets VSCALER_BIN.
bench_setup() {
  VSCALER_BIN=$root/${VSCALER_BUILD_DIR:-build/release}/vscaler
  [ -x "$VSCALER_BIN" ] || { echo "bench: $VSCALER_BIN is missing (make build)" >&2; return 1; }
  mkdir -p "$bench_bin"
  (cd "$root/bench/tools/vsbench" && go build -o "$bench_bin/vsbench" .) >&2 || return 1
  (cd "$root/bench/peer-controller-runtime" && go build -o "$bench_bin/peer-controller-runtime" .) >&2 ||
    return 1
  BENCH_WORK=$(mktemp -d /tmp/vscaler-bench-work.XXXXXX)
  trap bench_cleanup EXIT
  local dir=${VSCALER_BENCH_CLUSTER_DIR:-}
  if [ -z "$dir" ]; then
    dir=$(mktemp -d /tmp/vscaler-bench-cluster.XXXXXX)
    BENCH_OWN_CLUSTER=$dir
    # up.sh picks free ports and then binds them: on a busy machine another process can take one
    # in between. Try again with new ports.
    local attempt
    for attempt in 1 2 3; do
      VSCALER_CLUSTER=minimal VSCALER_CLUSTER_DIR=$dir "$root/test/cluster/up.sh" >/dev/null && break
      VSCALER_CLUSTER_DIR=$dir "$root/test/cluster/down.sh" >&2 || true
      [ "$attempt" -lt 3 ] || return 1
      echo "bench: the control plane did not start; trying again" >&2
    done
  fi
  export KUBECONFIG=$dir/kubeconfig KUBECTL=$dir/bin/kubectl
  BENCH_CLUSTER_DIR=$dir
  # A webhook registration left behind by an interrupted run would refuse every scaler write.
  KUBECTL=$KUBECTL "$root/certs/install.sh" --uninstall --local >/dev/null 2>&1 || true
  "$KUBECTL" apply -f "$root/manifests/crd/verticalscalers.yaml" >/dev/null
  "$KUBECTL" wait --for condition=established --timeout=60s \
    crd/verticalscalers.scaling.vscaler.dev >/dev/null
}

vsbench() { "$bench_bin/vsbench" "$@"; }

bench_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_operator KIND [FLAGS...]: KIND is vscaler, peer-full or peer-meta. Starts it on free
# ports (vscaler with its webhooks registered for its port), waits for /readyz. Sets OP_PID,
# OP_METRICS (URL) and OP_LOG.
start_operator() {
  local kind=$1 metrics_port health_port command=()
  shift
  metrics_port=$(bench_free_port)
  health_port=$(bench_free_port)
  OP_METRICS=http://127.0.0.1:$metrics_port/metrics
  OP_LOG=$BENCH_WORK/$kind.log
  case $kind in
    vscaler)
      local webhook_port
      webhook_port=$(bench_free_port)
      BENCH_WEBHOOK=1
      KUBECTL=$KUBECTL "$root/certs/install.sh" --local --port "$webhook_port" \
        --cert-dir "$BENCH_WORK/certs" >/dev/null || return 1
      # As deployed (and as the tests and the demo run it): as its ServiceAccount's user, which
      # the webhook configuration's matchConditions exclude, so its own patch is not admitted
      # through its own hook (a round trip the admin user would add to every restore).
      local operator_kc
      operator_kc=$(VSCALER_CLUSTER_DIR=$BENCH_CLUSTER_DIR KUBECTL=$KUBECTL \
        "$root/test/cluster/operator-kubeconfig.sh") || return 1
      command=("$VSCALER_BIN" --kubeconfig "$operator_kc" --webhook-port "$webhook_port"
        --cert-dir "$BENCH_WORK/certs" --metrics-addr "127.0.0.1:$metrics_port"
        --health-addr "127.0.0.1:$health_port" --dashboard-addr "" "$@")
      ;;
    peer-full | peer-meta)
      local variant=()
      [ "$kind" = peer-meta ] && variant=(--metadata-only)
      command=("$bench_bin/peer-controller-runtime" --kubeconfig "$KUBECONFIG" "${variant[@]}"
        --metrics-addr "127.0.0.1:$metrics_port" --health-addr "127.0.0.1:$health_port" "$@")
      ;;
    *)
      echo "start_operator: unknown kind $kind" >&2
      return 1
      ;;
  esac
  : >"$OP_LOG"
  process_spawn "$OP_LOG" "${command[@]}"
  OP_PID=${PROCESS_RECORD%% *}
  BENCH_PIDS+=("$OP_PID")
  process_await "$PROCESS_RECORD" 600 "bench: $kind" "$OP_LOG" \
    curl -fsS --max-time 2 "http://127.0.0.1:$health_port/readyz"
}

# stop_operator: stops the operator start_operator started (and vscaler's webhooks).
stop_operator() {
  kill -TERM "$OP_PID" 2>/dev/null && wait "$OP_PID" 2>/dev/null
  if [ -n "$BENCH_WEBHOOK" ]; then
    KUBECTL=$KUBECTL "$root/certs/install.sh" --uninstall --local >/dev/null 2>&1 || true
    BENCH_WEBHOOK=
  fi
}

# proc_kib PID FIELD: a /proc/PID/status field in KiB (VmRSS, VmHWM).
proc_kib() { awk -v field="$2:" '$1 == field {print $2}' "/proc/$1/status"; }

# compare_rows VSCALER_FILE PEER_FILE: like bench/lib.sh's table_rows (same formatting), but a
# peer value of 0 is a measurement here (no API call, no write), so it is shown; the ratio is then
# n/a.
compare_rows() {
  awk -F'\t' '
    function show(x) {
      if (x >= 1e6) return sprintf("%.2fM", x / 1e6)
      if (x >= 100) return sprintf("%.0f", x)
      return sprintf("%.1f", x)
    }
    FILENAME == ARGV[1] { peer[$1] = $3; next }  # not FNR == NR: the peer file may be empty
    !($1 in peer) { printf "| %s | %s | n/a | n/a |\n", $2, show($3); next }
    peer[$1] != 0 { printf "| %s | %s | %s | %.2f |\n", $2, show($3), show(peer[$1]), $3 / peer[$1]; next }
    { printf "| %s | %s | %s | n/a |\n", $2, show($3), show(peer[$1]) }' "$2" "$1"
}
