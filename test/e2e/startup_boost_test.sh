#!/usr/bin/env bash
# plane: full
# Issue 35, startup boost: kwok's kubelet makes these pods Ready 6 s after they start
# (test/cluster/stages/pod-ready-delayed.yaml, annotation kwok.x-k8s.io/ready-after).
# - web (InPlace, app fixed at 300m, its own boost x2 for 4 s after Ready; proxy not boosted):
#   its pod is created at 600m (limit 800m, from 300m/400m), stays there while it is not Ready
#   and for 4 s after, then carries 300m/400m in spec and status, same UID, restartCount 0; the
#   proxy container keeps its 100m throughout; a scale-up pod is boosted and ends the same way.
# - stuck ("Off", spec-level +500m until Ready): its template is left alone; its pod is boosted
#   200m -> 700m (limit 400m -> 1400m) at admission, and the kwok annotation kwok.x-k8s.io/resize=infeasible makes the
#   resize back Infeasible: reported in status.startupBoost and an Event, counted once, never sent
#   again and never evicted.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

start_operator_with_webhooks --resync-period 1h --recommender-interval 0
ns=$(unique_namespace boost)

# pods APP: "uid app-cpu(spec) app-cpu(status) app-limit(spec) proxy-cpu(spec) restarts ready"
# per live pod of APP.
pods() {
  k -n "$ns" get pods -l app="$1" -o \
    jsonpath='{range .items[*]}{.metadata.deletionTimestamp}{"|"}{.metadata.uid}{" "}{.spec.containers[0].resources.requests.cpu}{" "}{.status.containerStatuses[0].resources.requests.cpu}{" "}{.spec.containers[0].resources.limits.cpu}{" "}{.spec.containers[1].resources.requests.cpu}{" "}{.status.containerStatuses[0].restartCount}{" "}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}' |
    sed -n 's/^|//p' | sort
}
deployment() { # NAME ANNOTATIONS_JSON CONTAINERS_JSON
  k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"$1"},
 "spec":{"replicas":1,"selector":{"matchLabels":{"app":"$1"}},
  "template":{"metadata":{"labels":{"app":"$1"},"annotations":$2},"spec":{"containers":$3}}}}
JSON
}
two='[{"name":"app","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"200m","memory":"64Mi"},"limits":{"cpu":"400m"}}},
      {"name":"proxy","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"100m"}}}]'

echo "--- invalid startupBoost values are refused naming the field"
bad=$(k -n "$ns" apply -f - 2>&1 <<'JSON'
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"bad"},
 "spec":{"deploymentName":"web","startupBoost":{"cpu":{"type":"Factor","factor":0}}}}
JSON
) && fail "a factor of 0 was accepted"
echo "$bad" | grep -q "spec.startupBoost.cpu.factor" || fail "the refusal does not name the field: $bad"
bad=$(k -n "$ns" apply -f - 2>&1 <<'JSON'
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"bad"},
 "spec":{"deploymentName":"web","containers":[{"name":"app","startupBoost":{"cpu":{"type":"Quantity","quantity":"lots"}}}]}}
JSON
) && fail "a quantity of \"lots\" was accepted"
echo "$bad" | grep -q "startupBoost.cpu.quantity" || fail "the refusal does not name the field: $bad"
echo "ok: refused ($(echo "$bad" | tail -1 | cut -c1-160))"

k -n "$ns" apply -f - >/dev/null <<'JSON'
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"web"},
 "spec":{"deploymentName":"web","updateMode":"InPlace",
  "containers":[{"name":"app","requests":{"cpu":"300m"},
                 "startupBoost":{"cpu":{"type":"Factor","factor":2,"durationSeconds":4}}},
                {"name":"proxy","mode":"Off"}]}}
JSON
k -n "$ns" apply -f - >/dev/null <<'JSON'
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"stuck"},
 "spec":{"deploymentName":"stuck","updateMode":"Off",
  "startupBoost":{"cpu":{"type":"Quantity","quantity":"500m"}},
  "containers":[{"name":"app"},{"name":"proxy","mode":"Off"}]}}
JSON
deployment web '{"kwok.x-k8s.io/ready-after":"6s"}' "$two"
deployment stuck '{"kwok.x-k8s.io/ready-after":"2s","kwok.x-k8s.io/resize":"infeasible"}' "$two"

echo "--- web's pod starts boosted (600m/800m) and stays so while it is not Ready"
started() { pods web | awk '$2 == "600m" && $3 == "600m" && $4 == "800m" && $5 == "100m" && $7 == "False"' | grep -q .; }
eventually 30 started
uid=$(pods web | awk '{print $1}')
counted() { [ "$(jp "$ns" vsc/web '{.status.startupBoost.boosted}')" = 1 ]; }
eventually 10 counted
echo "ok: $(pods web)"

echo "--- Ready, then 4 s later it carries the scaler's 300m/400m in place"
ready_at() { jp "$ns" "pod/$(k -n "$ns" get pods -l app=web -o name | head -1 | cut -d/ -f2)" '{.status.conditions[?(@.type=="Ready")].lastTransitionTime}'; }
is_ready() { pods web | awk '$7 == "True"' | grep -q .; }
eventually 30 is_ready
ready=$(date -d "$(ready_at)" +%s)
unboosted() { pods web | awk -v uid="$uid" '$1 == uid && $2 == "300m" && $3 == "300m" && $4 == "400m" && $5 == "100m" && $6 == 0' | grep -q .; }
# Boosted still for the first seconds after Ready.
if [ $(($(date +%s) - ready)) -lt 3 ]; then
  expect_eq "app's cpu just after Ready" "$(pods web | awk '{print $2}')" 600m
fi
eventually 30 unboosted
back=$(date +%s)
[ $((back - ready)) -ge 3 ] || fail "the boost ended $((back - ready)) s after Ready, before durationSeconds (4)"
echo "ok: $(pods web) ($((back - ready)) s after Ready; same UID, no restart)"
ended() { [ "$(jp "$ns" vsc/web '{.status.startupBoost.ended}')" -ge 1 ] && [ "$(jp "$ns" vsc/web '{.status.startupBoost.boosted}')" = 0 ]; }
eventually 15 ended

echo "--- a scale-up pod is boosted too, and ends the same way"
k -n "$ns" scale deployment/web --replicas=2 >/dev/null
new_started() { pods web | awk -v uid="$uid" '$1 != uid && $2 == "600m" && $5 == "100m"' | grep -q .; }
eventually 30 new_started
all_back() { [ "$(pods web | awk '$2 == "300m" && $3 == "300m" && $4 == "400m" && $6 == 0' | wc -l)" = 2 ]; }
eventually 40 all_back
echo "ok: $(pods web | tr '\n' ';')"

echo "--- stuck: boosted in mode Off; its resize back is Infeasible: reported, not looped"
# The resize back is sent at Ready (2 s): the kubelet's side (status) keeps the boosted 700m, and
# the pod's record says what it was admitted with.
boosted_stuck() { pods stuck | awk '$3 == "700m" && $5 == "100m"' | grep -q .; }
eventually 30 boosted_stuck
record=$(k -n "$ns" get pods -l app=stuck -o jsonpath='{.items[0].metadata.annotations.scaling\.vscaler\.dev/startup-boost}')
echo "$record" | grep -q '"boosted":{"limits":"1400m","requests":"700m"}' ||
  fail "stuck's pod record does not say 700m/1400m: $record"
expect_eq "stuck's template cpu (Off: untouched)" \
  "$(jp "$ns" deployment/stuck '{.spec.template.spec.containers[0].resources.requests.cpu}')" 200m
reported() { [ "$(jp "$ns" vsc/stuck '{.status.startupBoost.stuck}')" = 1 ]; }
eventually 40 reported
message=$(jp "$ns" vsc/stuck '{.status.startupBoost.message}')
echo "$message" | grep -q "Infeasible" || fail "status.startupBoost.message does not say Infeasible: $message"
k -n "$ns" get events --field-selector reason=StartupBoostStuck -o name | grep -q . ||
  fail "no StartupBoostStuck event"
infeasible=$(metric 'vscaler_startup_boosts_total{result="infeasible"}')
requested=$(grep -c "ending a startup boost in place" "$OPERATOR_LOG")
sleep 5
expect_eq "infeasible count after 5 s" "$(metric 'vscaler_startup_boosts_total{result="infeasible"}')" "$infeasible"
expect_eq "resizes back sent after 5 s" "$(grep -c "ending a startup boost in place" "$OPERATOR_LOG")" "$requested"
expect_eq "stuck's pods (never evicted)" "$(pods stuck | wc -l)" 1
echo "ok: $message"
expect_eq "boosts counted" "$(metric 'vscaler_startup_boosts_total{result="boosted"}')" 3
echo "PASS"
