# shellcheck shell=bash
# Helpers shared by test/e2e/webhook_burst_test.sh and webhook_hostile_test.sh (sourced after
# test/e2e/lib.sh).

# apiserver_sum NAME [FILTER]: the sum of the API server's series NAME whose labels match the
# awk regular expression FILTER (everything when empty), from its /metrics.
apiserver_sum() {
  k get --raw /metrics | awk -v name="$1" -v filter="${2:-}" '
    index($1, name) == 1 && (substr($1, length(name) + 1, 1) == "{" || length($1) == length(name)) \
      && (filter == "" || $1 ~ filter) { sum += $2 }
    END { printf "%d\n", sum }'
}

# webhook_calls_within LE: how many calls of vscaler's mutating webhook the API server has timed
# at LE seconds or less (its apiserver_admission_webhook_admission_duration_seconds bucket), and
# in all: "WITHIN TOTAL".
webhook_calls_within() {
  echo "$(apiserver_sum apiserver_admission_webhook_admission_duration_seconds_bucket \
    "name=\"mutate-deployments.vscaler.dev\".*le=\"$1\"")" \
    "$(apiserver_sum apiserver_admission_webhook_admission_duration_seconds_count \
      'name="mutate-deployments.vscaler.dev"')"
}
