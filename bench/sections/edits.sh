#!/usr/bin/env bash
# Section "edits" (issue 9, items 1 and 2): what a user's write of a Deployment costs until the
# declared resources hold again, vscaler against the usual controller-runtime design
# (bench/peer-controller-runtime, both variants: full Deployment cache, metadata-only watch).
# Each operator runs alone, as a process, against the same private local control plane.
#
# 1. Edit -> restored (Reconcile mode): a user PATCH sets another cpu request; the time from the
#    PATCH returning to the API server storing the declared value again, seen on a watch opened
#    before the edits (bench/tools/vsbench latency). vscaler learns of the write through its
#    admission webhook (a hint); the peer through its Deployment watch. VSCALER_BENCH_EDITS edits
#    (default 200) per run, VSCALER_BENCH_RUNS runs (3), the operators alternating within each
#    run; p50 and p99 of every run's edits pooled (600 by default: the p99 is the 6th slowest,
#    where a median of per-run p99s, each the 2nd slowest of 200, moved by +-4 ms between runs
#    of one build). Also the API requests per edit, median of the runs (reads and writes
#    of Deployments, VerticalScalers and Events, counted by the API server: the edit itself, the
#    operator's reads, its patch, its Event and its status write).
# 2. Helm-like reset of only the resources (a strategic merge patch setting the chart's values):
#    Deployment generation increments per reset, once settled. vscaler's scaler is in Auto mode
#    (its webhook patches the write: goal 0); the peer has no webhook (1 for the reset, 1 for its
#    restore). VSCALER_BENCH_RESETS resets (default 10), first run only (the count is exact).
#
# Environment: VSCALER_BENCH_CLUSTER_DIR (reuse a running control plane), VSCALER_BENCH_OPERATORS
# (default "vscaler peer-full peer-meta"). Prints table rows; see bench/run.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
source bench/lib.sh
source bench/tools/operators.sh
runs=${VSCALER_BENCH_RUNS:-3}
edits=${VSCALER_BENCH_EDITS:-200}
resets=${VSCALER_BENCH_RESETS:-10}
read -r -a operators <<<"${VSCALER_BENCH_OPERATORS:-vscaler peer-full peer-meta}"

bench_setup
out=$BENCH_WORK/out
mkdir -p "$out"
ns=bench-edits
"$KUBECTL" create namespace "$ns" >/dev/null 2>&1 || true
deployment() {  # NAME: a small Deployment carrying the chart's values (100m / 64Mi)
  "$KUBECTL" -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"$1"},
 "spec":{"replicas":1,"selector":{"matchLabels":{"app":"$1"}},
  "template":{"metadata":{"labels":{"app":"$1"}},"spec":{"containers":[{"name":"app",
   "image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}]}}}}
JSON
}
scaler() {  # NAME MODE
  "$KUBECTL" -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"$1"},
 "spec":{"deploymentName":"$1","updateMode":"$2",
  "containers":[{"name":"app","requests":{"cpu":"250m","memory":"128Mi"}}]}}
JSON
}
deployment edited
scaler edited Reconcile
deployment reset
scaler reset Auto

for run in $(seq "$runs"); do
  for op in "${operators[@]}"; do
    echo "edits: run $run, $op" >&2
    start_operator "$op"
    vsbench apicount >"$out/api0"
    vsbench latency --namespace "$ns" --deployment edited --declared-cpu 250m --count "$edits" \
      --warmup 5 --samples "$out/samples.$op.$run" >"$out/latency.$op.$run"
    vsbench apicount >"$out/api1"
    requests=$(awk -F'\t' '$1 == "reads" || $1 == "writes" {d[FILENAME] += $2}
      END {print d[ARGV[2]] - d[ARGV[1]]}' "$out/api0" "$out/api1")
    # Where the requests went (per verb group and resource), for the details on stderr.
    awk -F'\t' 'FNR == NR {a[$1] = $2; next} $1 ~ /_/ {printf "%s %g ", $1, $2 - a[$1]}' \
      "$out/api0" "$out/api1" >&2
    tr '\n' ' ' <"$out/latency.$op.$run" >&2
    echo >&2
    {
      printf 'calls\tedit -> restored: API requests per edit, the edit included (goal: <= the full-cache peer)\t%s\n' \
        "$(awk -v r="$requests" -v n="$((edits + 5))" 'BEGIN {print r / n}')"
    } >"$out/$op.$run"
    if [ "$run" = 1 ]; then
      vsbench reset --namespace "$ns" --deployment reset --declared-cpu 250m --count "$resets" \
        >"$out/reset.$op"
      printf 'reset\tHelm-like reset of only the resources: generations per reset (vscaler: Auto mode, goal 0)\t%s\n' \
        "$(value generations_per_reset "$out/reset.$op")" >>"$out/$op.$run"
      echo "edits: $op: $(tr '\n' ' ' <"$out/reset.$op")" >&2
    fi
    stop_operator
  done
done

# pooled_rows OP: the latency rows over every run's edits of OP (vsbench's percentile: the
# sample at index floor(q * n) of the sorted samples).
pooled_rows() {
  local label='edit -> declared resources restored (Reconcile mode), %s of all runs'"'"' edits (ms; goal: below the full-cache peer)'
  sort -n "$out/samples.$1".* | awk -F'\t' -v label="$label" '
    {v[n++] = $1}
    END {
      split("p50 0.50 p99 0.99", q, " ")
      for (k = 1; k <= 3; k += 2) {
        i = int(q[k + 1] * n); if (i >= n) i = n - 1
        printf "%s\t" label "\t%.2f\n", q[k], q[k], v[i]
      }
    }'
}

[[ " ${operators[*]} " == *" vscaler "* ]] || { echo "edits: vscaler not run; no rows" >&2; exit 0; }
{ pooled_rows vscaler; median_rows "$out"/vscaler.*; } >"$out/vscaler"
for peer in "${operators[@]}"; do
  [ "$peer" = vscaler ] && continue
  { pooled_rows "$peer"; median_rows "$out/$peer".*; } >"$out/$peer"
  case $peer in
    peer-full) what="peer: controller-runtime, full Deployment cache" ;;
    peer-meta) what="peer: controller-runtime, metadata-only watch" ;;
  esac
  # Labels say which peer; vscaler's half is the same measurement in both rows.
  awk -F'\t' -v what="$what" 'BEGIN {OFS = FS} {$2 = $2 " [" what "]"; print}' "$out/vscaler" \
    >"$out/vscaler.vs.$peer"
  compare_rows "$out/vscaler.vs.$peer" "$out/$peer"
done
