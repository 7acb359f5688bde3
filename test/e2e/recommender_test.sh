#!/usr/bin/env bash
# plane: full
# Issue 14, the recommendation half, end to end: vscaler (--recommender-interval 5s,
# --checkpoint-interval 10s) over updateMode "Off" scalers, so nothing is patched:
#  a. 3 pods using 300m / 400Mi: RecommendationProvided=True, target within 10 % of 345m / 460Mi,
#     and the bounds of a history minutes old (see below); the vscaler_recommendation gauges;
#  e. a canary Deployment whose pods match the target's selector (using 2 cores / 2Gi) does not
#     move the target's recommendation (owner chains);
#  d. a scaler of a Deployment with 0 replicas: NoPodsMatched;
#  b. an OOM kill in a pod's lastState raises the memory target to >= max(used + 100Mi,
#     1.2 x used) = 500Mi, and is counted once over the next passes;
#  c. SIGKILL and restart: the same target, the checkpoint's sample count continues; deleting
#     the scaler garbage-collects its checkpoint and its gauges;
#  f. values people read: memory in whole MiB ("489Mi"); a young history's upper bound and a
#     workload using more CPU than any node has are capped at the largest node's allocatable,
#     uncappedTarget keeps the rest.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/usage_lib.sh"

install_crd
k apply -f "$ROOT/manifests/crd/verticalscalercheckpoints.yaml" >/dev/null
k wait --for condition=established --timeout=60s crd/verticalscalercheckpoints.scaling.vscaler.dev >/dev/null
ns=$(unique_namespace recommender)
cleanup() {
  stop_operator
  usage_clear "$ns" || true
  k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
}

# deploy NAME APP REPLICAS SELECTOR_JSON: pods labelled app=APP, tier=web.
deploy() {
  k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"$1"},
 "spec":{"replicas":$3,"selector":{"matchLabels":$4},
  "template":{"metadata":{"labels":{"app":"$2","tier":"web"}},
   "spec":{"containers":[{"name":"app","image":"registry.k8s.io/pause:3.10"}]}}}}
JSON
}
scaler() {
  k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"$1"},
 "spec":{"deploymentName":"$2","updateMode":"Off"}}
JSON
}
# rec SCALER BOUND RESOURCE: the recommendation of container app, in base units (cores, bytes).
rec() {
  local q
  q=$(jp "$ns" "vsc/$1" "{.status.recommendation.containerRecommendations[?(@.containerName==\"app\")].$2.$3}")
  [ -n "$q" ] || { echo ""; return; }
  python3 -c '
import re, sys
q = sys.argv[1]
m = re.fullmatch(r"([0-9.]+)([a-zA-Z]*)", q)
f = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "Ki": 1024, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
print(repr(float(m.group(1)) * f[m.group(2)]))' "$q"
}
# check WHAT PYTHON_EXPR: fails unless the expression (over the values passed) holds.
check() {
  python3 -c "import sys; sys.exit(0 if ($2) else 1)" || fail "$1: $2"
  echo "ok: $1"
}
cond_is() { [ "$(condition "$ns" "$1" RecommendationProvided)" = "$2" ]; }
gauge() {
  metric "vscaler_recommendation{namespace=\"$ns\",verticalscaler=\"$1\",container=\"app\",resource=\"$2\",bound=\"$3\"}"
}
ck_samples() {
  k -n "$ns" get verticalscalercheckpoint "$1" -o jsonpath='{range .spec.containers[*]}{.totalSamplesCount}{"\n"}{end}' 2>/dev/null |
    awk '{ s += $1 } END { print s + 0 }'
}
Mi=1048576

usage_set "$ns" web app 300m 400Mi
usage_set "$ns" canary app 2 2Gi
usage_set "$ns" hog app 48 1Gi
deploy web web 3 '{"tier":"web"}'
deploy canary canary 1 '{"app":"canary","tier":"web"}'
deploy idle idle 0 '{"app":"idle"}'
deploy hog hog 1 '{"app":"hog"}'
for d in web canary hog; do
  k -n "$ns" rollout status deployment/$d --timeout=120s >/dev/null || fail "$d did not roll out"
done
scaler web web
scaler idle idle
scaler hog hog
# The largest node's allocatable, in base units: the cap of every published value.
largest() {
  k get nodes -o jsonpath="{range .items[*]}{.status.allocatable.$1}{\"\n\"}{end}" | python3 -c '
import re, sys
f = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "Ki": 1024, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
print(repr(max(float(m.group(1)) * f[m.group(2)] for m in
                (re.fullmatch(r"([0-9.]+)([a-zA-Z]*)", l.strip()) for l in sys.stdin if l.strip()))))'
}
node_cpu=$(largest cpu) node_mem=$(largest memory)
echo "largest node: $node_cpu cores, $((${node_mem%.*} / Mi))Mi"
start_operator --recommender-interval 5s --checkpoint-interval 10s --namespace "$ns"
trap cleanup EXIT

echo "--- a. 3 pods at 300m / 400Mi: RecommendationProvided=True, target about 345m / 460Mi"
eventually 150 cond_is web Recommended
expect_eq "RecommendationProvided status" "$(condition "$ns" web RecommendationProvided status)" "True"
echo "message: $(condition "$ns" web RecommendationProvided message)"
case "$(condition "$ns" web RecommendationProvided message)" in
  "3 pods, 3 with metrics,"*) echo "ok: the message counts the 3 pods, not the canary's" ;;
  *) fail "message: $(condition "$ns" web RecommendationProvided message)" ;;
esac
cpu=$(rec web target cpu) mem=$(rec web target memory)
echo "target: cpu $cpu cores, memory $((${mem%.*} / Mi))Mi"
check "cpu target within 10 % of 345m" "abs($cpu - 0.345) <= 0.0345"
check "memory target within 10 % of 460Mi" "abs($mem - 460 * $Mi) <= 46 * $Mi"
# The history is a minute or two old: confidence c = min(days, samples / 1440) is below 0.002,
# so upperBound = p95 x 1.15 x (1 + 1/c) would be over 500 x the target (p95 = p90 for a
# constant usage): more than any node has, so it is the largest node's allocatable. lowerBound
# = p50 x 1.15 x (1 + 0.001/c)^-2 is under a third of the target, raised to the per-pod minimums
# (25m, 250Mi; one container per pod): memory's is exactly 250Mi while the history is younger
# than 4 minutes.
up_cpu=$node_cpu up_memory=$node_mem
for r in cpu memory; do
  t=$(rec web target $r) lo=$(rec web lowerBound $r) up=$(rec web upperBound $r) un=$(rec web uncappedTarget $r)
  echo "$r: lowerBound $lo, target $t, upperBound $up, uncappedTarget $un"
  cap=up_$r
  check "$r upperBound = the largest node's (young history, capped)" "$up == ${!cap}"
  check "$r uncappedTarget = target (no minAllowed/maxAllowed)" "$un == $t"
done
for b in target lowerBound upperBound; do
  m=$(jp "$ns" vsc/web "{.status.recommendation.containerRecommendations[0].$b.memory}")
  [[ $m =~ ^[0-9]+(Mi|Gi)$ ]] || fail "memory $b \"$m\" is not in whole MiB"
done
echo "ok: memory in whole MiB: $(jp "$ns" vsc/web '{.status.recommendation.containerRecommendations[0].target.memory}')"
check "cpu lowerBound in [25m, target/3]" "0.025 <= $(rec web lowerBound cpu) <= $cpu / 3"
check "memory lowerBound = 250Mi (the per-pod minimum)" "$(rec web lowerBound memory) == 250 * $Mi"
check "gauge target cpu = status" "abs($(gauge web cpu target) - $cpu) < 1e-9"
check "gauge target memory = status" "abs($(gauge web memory target) - $mem) < 1"
check "samples counted" "$(metric vscaler_recommender_samples_total) >= 3"
check "passes timed" "$(metric vscaler_recommender_pass_seconds_count) >= 1"

echo "--- e. the canary's pods (2 cores, 2Gi) match web's selector but are not web's"
check "cpu target not moved by the canary" "$(rec web target cpu) < 0.4"
check "memory target not moved by the canary" "$(rec web target memory) < 600 * $Mi"

echo "--- f. a pod using 48 cores, more than any node's allocatable: capped, uncappedTarget keeps it"
eventually 60 cond_is hog Recommended
hog_cpu=$(rec hog target cpu) hog_uncapped=$(rec hog uncappedTarget cpu)
echo "hog: target cpu $hog_cpu, uncappedTarget $hog_uncapped"
check "hog cpu target = the largest node's" "$hog_cpu == $node_cpu"
check "hog uncappedTarget >= 48 x 1.15 cores" "$hog_uncapped >= 48 * 1.15"

echo "--- d. a Deployment with 0 replicas: NoPodsMatched"
eventually 30 cond_is idle NoPodsMatched
expect_eq "idle status" "$(condition "$ns" idle RecommendationProvided status)" "False"
echo "message: $(condition "$ns" idle RecommendationProvided message)"

echo "--- b. an OOM kill raises the memory target to >= max(400Mi + 100Mi, 1.2 x 400Mi) = 500Mi"
pod=$(k -n "$ns" get pods -l app=web --field-selector=status.phase=Running -o jsonpath='{.items[0].metadata.name}')
container=$(jp "$ns" "pod/$pod" '{.spec.containers[0].name}')
# kwok plays the kubelet's report of the kill (test/cluster/stages/pod-oom-kill.yaml).
k -n "$ns" annotate pod "$pod" "kwok.x-k8s.io/oom-kill=$container" >/dev/null
oom_reported() { [ "$(jp "$ns" "pod/$pod" '{.status.containerStatuses[0].lastState.terminated.reason}')" = OOMKilled ]; }
eventually 20 oom_reported
expect_eq "restartCount after the kill" "$(jp "$ns" "pod/$pod" '{.status.containerStatuses[0].restartCount}')" "1"
# mem_at_least BYTES: web's memory target is at least BYTES.
mem_at_least() {
  local m
  m=$(rec web target memory)
  [ -n "$m" ] && python3 -c "import sys; sys.exit(0 if $m >= $1 else 1)"
}
eventually 30 mem_at_least $((500 * Mi))
mem=$(rec web target memory)
echo "memory target after the OOM kill: $((${mem%.*} / Mi))Mi"
passes=$(metric vscaler_recommender_pass_seconds_count)
passes_done() { python3 -c "import sys; sys.exit(0 if $(metric vscaler_recommender_pass_seconds_count) >= $passes + 3 else 1)"; }
eventually 60 passes_done
# The kill stays in the pod's status: each pass sees it again and must not count it again (a
# repeat would not move the target, the same peak in the same interval: the log tells).
expect_eq "OOM kills counted over 3 more passes" "$(grep -c '"msg":"OOM kills counted".*"name":"web"' "$OPERATOR_LOG")" "1"

echo "--- c. SIGKILL and restart: same target, the checkpoint's sample count continues"
has_checkpoint() { [ "$(ck_samples web)" -gt 0 ]; }
eventually 30 has_checkpoint
cpu=$(rec web target cpu) mem=$(rec web target memory)
kill -KILL "$OPERATOR_PID"
wait "$OPERATOR_PID" 2>/dev/null || true
before=$(ck_samples web)
rv=$(jp "$ns" verticalscalercheckpoint/web '{.metadata.resourceVersion}')
echo "checkpoint before the restart: $before samples"
start_operator --recommender-interval 5s --checkpoint-interval 10s --namespace "$ns"
trap cleanup EXIT
gauge_back() { [ "$(gauge web cpu target)" != 0 ]; }
eventually 30 gauge_back
check "cpu target after the restart = before (gauge of the new process)" "abs($(gauge web cpu target) - $cpu) < 1e-9"
check "memory target after the restart = before" "abs($(gauge web memory target) - $mem) < 1"
check "status target unchanged" "$(rec web target cpu) == $cpu and $(rec web target memory) == $mem"
grep -q '"msg":"history restored from the checkpoint".*"name":"web"' "$OPERATOR_LOG" || fail "no restore logged"
rewritten() { [ "$(jp "$ns" verticalscalercheckpoint/web '{.metadata.resourceVersion}')" != "$rv" ]; }
eventually 30 rewritten
after=$(ck_samples web)
echo "checkpoint after the restart: $after samples"
check "the sample count continues ($after > $before)" "$after > $before"

echo "--- c. deleting the scaler garbage-collects its checkpoint and its gauges"
expect_eq "checkpoint owner" "$(jp "$ns" verticalscalercheckpoint/web '{.metadata.ownerReferences[0].uid}')" \
  "$(jp "$ns" vsc/web '{.metadata.uid}')"
k -n "$ns" delete vsc web >/dev/null
checkpoint_gone() { ! k -n "$ns" get verticalscalercheckpoint web >/dev/null 2>&1; }
eventually 60 checkpoint_gone
gauge_gone() { [ "$(gauge web cpu target)" = 0 ]; }
eventually 20 gauge_gone
echo "ok: checkpoint and gauges gone with the scaler"
echo "PASS"
