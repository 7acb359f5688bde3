# shellcheck shell=bash
# Helpers shared by test/e2e/webhook_burst_test.sh and webhook_hostile_test.sh (sourced after
# test/e2e/lib.sh).

# sum_series NAME [FILTER]: the sum of the Prometheus text series NAME on stdin whose labels
# match the awk regular expression FILTER (everything when empty).
sum_series() {
  awk -v name="$1" -v filter="${2:-}" '
    index($1, name) == 1 && (substr($1, length(name) + 1, 1) == "{" || length($1) == length(name)) \
      && (filter == "" || $1 ~ filter) { sum += $2 }
    END { printf "%d\n", sum }'
}

# apiserver_sum NAME [FILTER]: sum_series over the API server's /metrics.
apiserver_sum() { k get --raw /metrics | sum_series "$@"; }

# vscaler_webhook_sum NAME [FILTER]: sum_series over vscaler's metrics ($METRICS_URL).
vscaler_webhook_sum() { curl -fsS "$METRICS_URL" | sum_series "$@"; }

# webhook_calls_within LE: how many calls of vscaler's mutating webhook the API server has timed
# at LE seconds or less (its apiserver_admission_webhook_admission_duration_seconds bucket), and
# in all: "WITHIN TOTAL".
webhook_calls_within() {
  echo "$(apiserver_sum apiserver_admission_webhook_admission_duration_seconds_bucket \
    "name=\"mutate-deployments.vscaler.dev\".*le=\"$1\"")" \
    "$(apiserver_sum apiserver_admission_webhook_admission_duration_seconds_count \
      'name="mutate-deployments.vscaler.dev"')"
}

# cpu_steal_ticks: "STEAL TOTAL" jiffies of the machine (/proc/stat), for cpu_steal_percent.
cpu_steal_ticks() { awk '$1 == "cpu" { t = 0; for (i = 2; i <= NF; i++) t += $i; print $9, t }' /proc/stat; }

# cpu_steal_percent "STEAL TOTAL": the share of CPU time the hypervisor took since that sample.
cpu_steal_percent() {
  local now
  now=$(cpu_steal_ticks)
  awk -v a="$1" -v b="$now" 'BEGIN { split(a, x, " "); split(b, y, " ");
    d = y[2] - x[2]; printf "%d", (d > 0 ? 100 * (y[1] - x[1]) / d : 0) }'
}
