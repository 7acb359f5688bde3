#!/usr/bin/env bash
# The local cluster's Prometheus (issue 31), started only when asked: Debian's /usr/bin/prometheus
# (scripts/deps.sh test installs it) for the full cluster in $VSCALER_CLUSTER_DIR, so that vscaler
# can read CPU and memory history from it.
# Usage: test/cluster/prometheus.sh up|down|seed FILE...
#   up         starts it on a free port of 127.0.0.1 (its URL in prometheus.url), data in
#              prometheus/data, retention 30d; it scrapes every 15 s, as job kubernetes-cadvisor,
#              the resource-metrics endpoint kwok serves for each fake node, the one
#              metrics-server reads: https://127.0.0.1:KWOK_PORT/metrics/nodes/NODE/metrics/resource
#              (kwok's serving certificate is from the cluster CA; no client certificate asked).
#              Each target is labelled instance=NODE. Series: container_cpu_usage_seconds_total
#              and container_memory_working_set_bytes{namespace, pod, container} (and kwok's
#              pod_*, node_* and container_start_time_seconds). When it runs already, the node
#              list is refreshed (file_sd) and nothing else happens.
#   down       stops it (its data is kept; test/cluster/down.sh stops it too, and removes all).
#   seed FILE  turns each OpenMetrics FILE (test/cluster/history.py writes them) into TSDB blocks
#              in its data directory with promtool, Prometheus stopped for the time of it (and
#              started again when it was running): history for times in the past.
# VSCALER_PROMETHEUS=1 test/cluster/up.sh runs `prometheus.sh up` once the full cluster is up.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=lib.sh
. "$here/lib.sh"

PROMETHEUS=/usr/bin/prometheus
PROMTOOL=/usr/bin/promtool
prom_dir=$CLUSTER_DIR/prometheus
data_dir=$prom_dir/data

usage() {
  echo "usage: test/cluster/prometheus.sh up|down|seed FILE..." >&2
  exit 2
}

need_cluster_dir() {
  [ -d "$CLUSTER_DIR" ] || { echo "prometheus.sh: no local cluster in $CLUSTER_DIR (test/cluster/up.sh starts one)" >&2; exit 1; }
}

need_binary() {
  [ -x "$1" ] || { echo "prometheus.sh: $1 is missing (scripts/deps.sh test installs the prometheus package)" >&2; exit 1; }
}

# write_targets: the file_sd targets, one per node that has a resource-metrics path (the
# annotation metrics-server reads), all on kwok's port; written to a temporary file and renamed,
# so Prometheus (which watches the file) never reads half of it.
write_targets() {
  local port nodes name path first=1
  port=$(cat "$CLUSTER_DIR/kwok.port")
  nodes=$("$CLUSTER_DIR/bin/kubectl" --kubeconfig "$CLUSTER_DIR/kubeconfig" get nodes -o \
    jsonpath='{range .items[*]}{.metadata.name}{" "}{.metadata.annotations.metrics\.k8s\.io/resource-metrics-path}{"\n"}{end}')
  {
    echo "["
    while read -r name path; do
      [ -n "$path" ] || continue
      [ "$first" = 1 ] || echo ","
      first=0
      printf '  {"targets": ["127.0.0.1:%s"], "labels": {"__metrics_path__": "%s", "instance": "%s"}}' \
        "$port" "$path" "$name"
    done <<<"$nodes"
    printf '\n]\n'
  } > "$prom_dir/targets.json.tmp"
  [ "$first" = 0 ] || { echo "prometheus.sh: the cluster has no node with a resource-metrics path" >&2; return 1; }
  mv "$prom_dir/targets.json.tmp" "$prom_dir/targets.json"
}

write_config() {
  cat > "$prom_dir/prometheus.yml" <<CONFIG
global:
  scrape_interval: 15s
  evaluation_interval: 15s
scrape_configs:
# kwok's kubelet-like resource-metrics endpoints, one target per node (targets.json sets each
# one's __metrics_path__ and instance=NODE): cAdvisor's container series as a kubelet serves them.
- job_name: kubernetes-cadvisor
  scrape_interval: 15s
  scheme: https
  tls_config:
    ca_file: $CLUSTER_DIR/pki/ca.crt
  file_sd_configs:
  - files: [$prom_dir/targets.json]
CONFIG
}

# launch PORT: writes prometheus.args and starts Prometheus on PORT.
launch() {
  echo "$1" > "$CLUSTER_DIR/prometheus.port"
  printf '%s\n' "--config.file=$prom_dir/prometheus.yml" "--storage.tsdb.path=$data_dir" \
    "--storage.tsdb.retention.time=30d" "--web.listen-address=127.0.0.1:$1" > "$CLUSTER_DIR/prometheus.args"
  start_from_args prometheus "$PROMETHEUS"
}

prometheus_ready() { curl -fsS --max-time 5 "http://127.0.0.1:$(cat "$CLUSTER_DIR/prometheus.port")/-/ready"; }

# start [PORT]: launches Prometheus (on PORT, else on a free port) and waits until it is ready;
# a port taken between picking and binding gets it relaunched on another (twice at most). On
# failure, says why (the tail of its log) and leaves nothing running.
start() {
  local port=${1:-} attempt
  [ -n "$port" ] || port=$(free_ports 1)
  for attempt in 1 2 3; do
    launch "$port"
    wait_for prometheus 120 prometheus_ready 2>"$CLUSTER_DIR/prometheus.wait" && break
    stop_process prometheus 3 || true
    if [ "$attempt" -lt 3 ] && port_clash prometheus; then
      port=$(free_ports 1)
      continue
    fi
    cat "$CLUSTER_DIR/prometheus.wait" >&2
    return 1
  done
  echo "http://127.0.0.1:$port" > "$CLUSTER_DIR/prometheus.url"
}

cmd_up() {
  need_cluster_dir
  need_binary "$PROMETHEUS"
  if ! pid_alive kwok; then
    echo "prometheus.sh: kwok does not run in $CLUSTER_DIR: it needs the full cluster (VSCALER_CLUSTER=full test/cluster/up.sh)" >&2
    exit 1
  fi
  mkdir -p "$data_dir"
  write_targets
  if pid_alive prometheus; then
    echo "prometheus.sh: already running at $(cat "$CLUSTER_DIR/prometheus.url"); its targets are refreshed"
    return 0
  fi
  write_config
  local began=$SECONDS
  start || exit 1
  echo "prometheus.sh: Prometheus ready in $((SECONDS - began))s at $(cat "$CLUSTER_DIR/prometheus.url") (data $data_dir, log $CLUSTER_DIR/prometheus.log)"
}

cmd_down() {
  if stop_process prometheus 15; then
    echo "prometheus.sh: stopped Prometheus (its data stays in $data_dir)"
  else
    echo "prometheus.sh: Prometheus was not running in $CLUSTER_DIR"
  fi
  rm -f "$CLUSTER_DIR/prometheus.url"
}

cmd_seed() {
  [ $# -gt 0 ] || usage
  local f was_running=0 began=$SECONDS before after
  for f in "$@"; do
    [ -f "$f" ] && [ -r "$f" ] || { echo "prometheus.sh: cannot read $f" >&2; exit 1; }
  done
  need_cluster_dir
  need_binary "$PROMTOOL"
  if pid_alive prometheus; then
    was_running=1
    stop_process prometheus 15 || true
    rm -f "$CLUSTER_DIR/prometheus.url"
  fi
  mkdir -p "$data_dir"
  before=$(find "$data_dir" -mindepth 1 -maxdepth 1 -type d | wc -l)
  for f in "$@"; do
    # Blocks of 24 h (a hidden promtool flag; the default, 2 h, makes 12 times more blocks and
    # takes about 8 times longer): a day is below a tenth of the 30 d retention, as Prometheus's
    # own compaction keeps it.
    if ! "$PROMTOOL" tsdb create-blocks-from openmetrics --max-block-duration=24h -q "$f" "$data_dir" \
      > "$prom_dir/promtool.log" 2>&1; then
      echo "prometheus.sh: promtool could not turn $f into blocks:" >&2
      tail -n 20 "$prom_dir/promtool.log" >&2
      # Started again all the same when it was running, with what it had.
      [ "$was_running" = 0 ] || start "$(cat "$CLUSTER_DIR/prometheus.port")" || true
      exit 1
    fi
  done
  after=$(find "$data_dir" -mindepth 1 -maxdepth 1 -type d | wc -l)
  echo "prometheus.sh: seeded $# file(s) into $data_dir ($((after - before)) blocks) in $((SECONDS - began))s"
  if [ "$was_running" = 1 ]; then
    start "$(cat "$CLUSTER_DIR/prometheus.port")" || exit 1
    echo "prometheus.sh: Prometheus running again at $(cat "$CLUSTER_DIR/prometheus.url"); seeding and restart took $((SECONDS - began))s"
  else
    echo "prometheus.sh: Prometheus was not running; test/cluster/prometheus.sh up starts it"
  fi
}

[ $# -ge 1 ] || usage
action=$1
shift
case "$action" in
  up) [ $# -eq 0 ] || usage; cmd_up ;;
  down) [ $# -eq 0 ] || usage; cmd_down ;;
  seed) cmd_seed "$@" ;;
  *) usage ;;
esac
