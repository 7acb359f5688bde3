#!/usr/bin/env bash
# plane: full
# Issue 31, history from Prometheus, on the full cluster with its Prometheus
# (test/cluster/prometheus.sh: Debian's prometheus scraping kwok as job kubernetes-cadvisor):
# - hist: 8 days of history of pod hist-0 (test/cluster/history.py, seeded with promtool), then
#   StatefulSet hist and a scaler: its first recommendation already has narrow bounds
#   (upperBound / target <= 1.5) and says where its history came from;
# - Prometheus stopped: a new scaler (fresh) still gets a live recommendation, with a young
#   history's wide bounds, and RecommendationProvided says why it had no history;
# - Prometheus back: a new leader (vscaler restarted) seeds the next new scaler (late) from it,
#   hist resumes from its checkpoint, and fresh's checkpoint (its history still wanted) gives
#   way to the history Prometheus now has of it.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/usage_lib.sh"

prometheus() { "$ROOT/test/cluster/prometheus.sh" "$@" >/dev/null; }
prometheus up
install_crd
k apply -f "$ROOT/manifests/crd/verticalscalercheckpoints.yaml" >/dev/null
ns=$(unique_namespace history)
work=$(mktemp -d /tmp/vscaler-history-e2e.XXXXXX)
trap 'usage_clear "$ns" >/dev/null 2>&1 || true; stop_operator; prometheus down || true; rm -rf "$work"' EXIT

# seed POD: 8 days of 300m (+-30m a day) and 400Mi (+-20Mi) for POD, up to now.
seed() {
  python3 "$ROOT/test/cluster/history.py" --namespace "$ns" --pods "$1" --container app \
    --cpu-mean 0.3 --cpu-amplitude 0.03 --memory-mean-mib 400 --memory-amplitude-mib 20 \
    --days 8 --step 300 --end $(($(date +%s) / 300 * 300)) > "$work/$1.om"
  "$ROOT/test/cluster/prometheus.sh" seed "$work/$1.om" >/dev/null
}
statefulset() {
  usage_set "$ns" "$1" app 300m 400Mi
  k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"$1"},
 "spec":{"replicas":1,"serviceName":"$1","selector":{"matchLabels":{"app":"$1"}},
  "template":{"metadata":{"labels":{"app":"$1"}},"spec":{"containers":[
   {"name":"app","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}]}}}}
JSON
  k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"$1"},
 "spec":{"targetRef":{"apiVersion":"apps/v1","kind":"StatefulSet","name":"$1"},"updateMode":"Off"}}
JSON
}
recommended() { [ "$(condition "$ns" "$1" RecommendationProvided status)" = True ]; }
message() { condition "$ns" "$1" RecommendationProvided message; }
# spread NAME: upperBound / target of app's CPU, as a decimal.
spread() {
  jp "$ns" "vsc/$1" '{.status.recommendation.containerRecommendations[0].upperBound.cpu} {.status.recommendation.containerRecommendations[0].target.cpu}' |
    awk 'function m(q) { if (q ~ /m$/) { sub(/m$/, "", q); return q + 0 } return q * 1000 }
      { printf "%.2f", m($1) / m($2) }'
}
operator() {
  start_operator --resync-period 1h --recommender-interval 5s --checkpoint-interval 1h \
    --prometheus-address "$(cat "$VSCALER_CLUSTER_DIR/prometheus.url")" --prometheus-timeout 3s
}

echo "--- hist: 8 days in Prometheus; its first recommendation has narrow bounds"
seed hist-0
operator
statefulset hist
eventually 90 recommended hist
echo "ok: $(message hist)"
echo "$(message hist)" | grep -q "history from Prometheus: " || fail "hist's message does not name its history"
awk -v s="$(spread hist)" 'BEGIN { exit !(s <= 1.5) }' ||
  fail "hist's first recommendation is not narrow: upperBound/target $(spread hist)"
echo "ok: upperBound/target $(spread hist) at the first recommendation"
grep -q '"history loaded from Prometheus"' "$OPERATOR_LOG" || fail "no history load logged"

echo "--- Prometheus stopped: a new scaler gets a live recommendation and says why it has no history"
prometheus down
statefulset fresh
eventually 90 recommended fresh
echo "$(message fresh)" | grep -q "history from Prometheus not available (" ||
  fail "fresh's message does not say why it has no history: $(message fresh)"
awk -v s="$(spread fresh)" 'BEGIN { exit !(s > 1.5) }' ||
  fail "fresh (live samples only) has narrow bounds already: $(spread fresh)"
echo "ok: $(message fresh) (upperBound/target $(spread fresh))"

echo "--- Prometheus back: a new leader seeds the next new scaler, and asks again for fresh's"
prometheus up
seed late-0
seed fresh-0 # what Prometheus would hold of fresh, had it been up: 8 days, up to now
stop_operator
operator
statefulset late
eventually 90 recommended late
echo "$(message late)" | grep -q "history from Prometheus: " ||
  fail "late's message does not name its history: $(message late)"
awk -v s="$(spread late)" 'BEGIN { exit !(s <= 1.5) }' || fail "late is not narrow: $(spread late)"
grep -q '"history restored from the checkpoint"' "$OPERATOR_LOG" ||
  fail "the new leader did not resume hist and fresh from their checkpoints"
echo "ok: $(message late) (upperBound/target $(spread late))"
# fresh's checkpoint says its history is still wanted: the new leader asked again and, as the
# history spans the checkpoint's live samples, took it in place of the checkpoint.
retried() { message fresh | grep -q "asked again at this leader start, in place of the checkpoint"; }
eventually 60 retried
awk -v s="$(spread fresh)" 'BEGIN { exit !(s <= 1.5) }' ||
  fail "fresh is not narrow after its history came: $(spread fresh)"
echo "ok: $(message fresh) (upperBound/target $(spread fresh))"
echo "PASS"
