#!/usr/bin/env bash
# plane: full
# Issue 30, running pods resized in place (pods/resize): with kwok playing the kubelet's part
# (test/cluster/stages/pod-resize.yaml), a Deployment of 3 running pods gets a scaler in
# InPlaceOrRecreate with fixed values: the same 3 pods (same UIDs, restartCount 0) come to carry
# them in spec and status, the Deployment's generation and ReplicaSets do not move, status.pods
# counts them and vscaler_pod_resizes_total counts 3 requested and 3 completed. Then InPlace on a
# pod the node cannot resize (kwok.x-k8s.io/resize=infeasible): Scaled=ResizeInfeasible names it,
# the others are resized, it is never evicted, and once the node can take it (annotation gone,
# the kubelet retries) every pod carries the values again. Last, InPlaceOrRecreate on a pod that
# cannot be resized: a PodDisruptionBudget blocks its eviction (counted "blocked", the pod kept,
# retried), and once it is gone the pod is evicted, and its replacement is created with the
# values by the pod admission hook. And a ResourceQuota that refuses the resizes: QuotaExceeded,
# never answered with an eviction; resized once the quota is gone; a new pod it can hold only as
# its template makes it is created so, not refused. A StatefulSet and a DaemonSet resized in
# place; a container whose resizePolicy says RestartContainer restarted (counted in status); a
# pod whose pod-level resources the values outgrow gets them raised in the same resize.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

start_operator_with_webhooks --resync-period 1h --workers 2
ns=$(unique_namespace inplace)

# pods NAME: "uid cpu(spec) cpu(status) memory(spec) memory(status) restarts" per running pod.
pods() {
  k -n "$ns" get pods -l "app=$1" -o \
    jsonpath='{range .items[*]}{.metadata.deletionTimestamp}{"|"}{.metadata.uid}{" "}{.spec.containers[0].resources.requests.cpu}{" "}{.status.containerStatuses[0].resources.requests.cpu}{" "}{.spec.containers[0].resources.requests.memory}{" "}{.status.containerStatuses[0].resources.requests.memory}{" "}{.status.containerStatuses[0].restartCount}{"\n"}{end}' |
    sed -n 's/^|//p' | sort
}
uids() { pods "$1" | awk '{print $1}'; }
# carry NAME CPU MEMORY: every pod of NAME carries CPU and MEMORY in spec and status, restarts 0.
carry() { [ -n "$(pods "$1")" ] && [ -z "$(pods "$1" | awk -v c="$2" -v m="$3" '!($2 == c && $3 == c && $4 == m && $5 == m && $6 == 0)')" ]; }
running() { [ "$(k -n "$ns" get pods -l "app=$1" --field-selector=status.phase=Running -o name | wc -l)" -eq "$2" ]; }
scaled() { [ "$(condition "$ns" "$1" Scaled)" = "$2" ]; }
scaler() {
  k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"$1"},
 "spec":{"deploymentName":"$1","updateMode":"$2","containers":[{"name":"app","requests":{"cpu":"$3","memory":"$4"}}]}}
JSON
}

echo "--- InPlaceOrRecreate: 3 running pods resized to fixed values, nothing restarted"
make_deployment "$ns" web '[{"name":"app","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}]'
k -n "$ns" scale deployment/web --replicas=3 >/dev/null
eventually 60 running web 3
eventually 30 carry web 100m 64Mi
before=$(uids web)
generation=$(jp "$ns" deployment/web '{.metadata.generation}')
replicasets=$(k -n "$ns" get rs -l app=web -o name | sort | tr '\n' ' ')
requested=$(metric 'vscaler_pod_resizes_total{result="requested"}')
completed=$(metric 'vscaler_pod_resizes_total{result="completed"}')
begin=$SECONDS
scaler web InPlaceOrRecreate 300m 128Mi
eventually 60 carry web 300m 128Mi
echo "ok: 3 pods carry 300m 128Mi in spec and status after $((SECONDS - begin)) s, restartCount 0"
expect_eq "pod UIDs" "$(uids web)" "$before"
expect_eq "Deployment generation" "$(jp "$ns" deployment/web '{.metadata.generation}')" "$generation"
expect_eq "ReplicaSets" "$(k -n "$ns" get rs -l app=web -o name | sort | tr '\n' ' ')" "$replicasets"
eventually 30 scaled web Applied
echo "ok: Scaled=Applied: $(condition "$ns" web Scaled message)"
expect_eq "status.pods" "$(jp "$ns" vsc/web '{.status.pods}')" \
  '{"atTarget":3,"evicted":0,"pending":0,"resizing":0,"restarted":0,"total":3}'
rose() { awk -v a="$1" -v b="$(metric "$2")" 'BEGIN { printf "%d", b - a }'; }
expect_eq "vscaler_pod_resizes_total{requested} rise" "$(rose "$requested" 'vscaler_pod_resizes_total{result="requested"}')" 3
completed_rose() { [ "$(rose "$completed" 'vscaler_pod_resizes_total{result="completed"}')" = 3 ]; }
eventually 10 completed_rose
echo "ok: vscaler_pod_resizes_total{completed} rose by 3"

echo "--- InPlace: a pod the node cannot resize is reported, never evicted; retried when it can"
mapfile -t names < <(k -n "$ns" get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.name}{"\n"}{end}' | sort)
stuck=${names[0]}
k -n "$ns" annotate pod "$stuck" kwok.x-k8s.io/resize=infeasible >/dev/null
scaler web InPlace 200m 128Mi
eventually 60 scaled web ResizeInfeasible
message=$(condition "$ns" web Scaled message)
grep -q "$stuck Infeasible" <<<"$message" || fail "ResizeInfeasible does not name $stuck: $message"
echo "ok: Scaled=ResizeInfeasible: $message"
others_at() { [ "$(pods web | awk '$2 == "200m" && $3 == "200m"' | wc -l)" -eq 2 ]; }
eventually 30 others_at
echo "ok: the other 2 pods carry 200m"
expect_eq "pod UIDs (nothing evicted)" "$(uids web)" "$before"
expect_eq "status.pods.pending" "$(jp "$ns" vsc/web '{.status.pods.pending}')" 1
k -n "$ns" annotate pod "$stuck" kwok.x-k8s.io/resize- >/dev/null
eventually 90 carry web 200m 128Mi
eventually 90 scaled web Applied
echo "ok: once the node could take it, every pod carries 200m: $(condition "$ns" web Scaled message)"
expect_eq "pod UIDs at the end" "$(uids web)" "$before"

echo "--- InPlaceOrRecreate: a pod that cannot be resized is evicted once no PDB holds it"
k -n "$ns" create poddisruptionbudget web --selector=app=web --min-available=3 >/dev/null
pdb_ready() { [ "$(jp "$ns" pdb/web '{.status.currentHealthy}')" = 3 ]; }
eventually 30 pdb_ready
stuck_uid=$(k -n "$ns" get pod "$stuck" -o jsonpath='{.metadata.uid}')
k -n "$ns" annotate pod "$stuck" kwok.x-k8s.io/resize=infeasible >/dev/null
blocked=$(metric 'vscaler_pod_evictions_total{result="blocked"}')
evicted=$(metric 'vscaler_pod_evictions_total{result="evicted"}')
scaler web InPlaceOrRecreate 250m 128Mi
blocked_rose() { [ "$(rose "$blocked" 'vscaler_pod_evictions_total{result="blocked"}')" -ge 1 ]; }
eventually 60 blocked_rose
k -n "$ns" get pod "$stuck" >/dev/null || fail "$stuck is gone although the PodDisruptionBudget holds it"
echo "ok: the PodDisruptionBudget blocked the eviction of $stuck (counted blocked); it is kept"
k -n "$ns" delete poddisruptionbudget web >/dev/null
stuck_gone() { ! uids web | grep -qx "$stuck_uid"; }
eventually 90 stuck_gone
eventually 60 running web 3
eventually 90 carry web 250m 128Mi
eventually 60 scaled web Applied
echo "ok: $stuck was evicted; its replacement and the others carry 250m 128Mi"
expect_eq "vscaler_pod_evictions_total{evicted} rise" "$(rose "$evicted" 'vscaler_pod_evictions_total{result="evicted"}')" 1
expect_eq "status.pods.evicted" "$(jp "$ns" vsc/web '{.status.pods.evicted}')" 1
evicted_event() { k -n "$ns" get events --field-selector reason=Evicted,involvedObject.name=web -o name | grep -q .; }
eventually 30 evicted_event
echo "ok: an Evicted Event on the scaler"

echo "--- a ResourceQuota refuses the resizes: QuotaExceeded, and never an eviction"
before=$(uids web)
k -n "$ns" create quota cpu --hard=requests.cpu=800m >/dev/null
quota_counted() { [ "$(jp "$ns" resourcequota/cpu '{.status.used.requests\.cpu}')" = 750m ]; }
eventually 30 quota_counted
evicted=$(metric 'vscaler_pod_evictions_total{result="evicted"}')
# A new pod the quota can hold only as its template makes it (50m of the 50m left): the pod
# admission hook leaves it unpatched (its 400m would make the ReplicaSet's create fail) once it
# has listed the quota (every 30 s; the ReplicaSet retries a refused create until then).
# (Created with no replicas, then scaled: a scale does not pass the workload hook, so the
# template keeps its 50m and only the pod hook decides.)
k -n "$ns" apply -f - >/dev/null <<'JSON'
{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"extra"},
 "spec":{"replicas":0,"selector":{"matchLabels":{"app":"extra"}},
  "template":{"metadata":{"labels":{"app":"extra"}},"spec":{"containers":[{"name":"app",
   "image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"50m","memory":"64Mi"}}}]}}}}
JSON
scaler extra InPlace 400m 64Mi
seen() { [ -n "$(jp "$ns" vsc/extra '{.status.observedGeneration}')" ]; }
eventually 30 seen
k -n "$ns" scale deployment/extra --replicas=1 >/dev/null
scaler web InPlaceOrRecreate 400m 128Mi
eventually 60 scaled web QuotaExceeded
message=$(condition "$ns" web Scaled message)
grep -q "exceeded quota" <<<"$message" || fail "QuotaExceeded does not quote the API server: $message"
echo "ok: Scaled=QuotaExceeded: $(head -c 300 <<<"$message")"
sleep 3  # a few re-checks
expect_eq "pod UIDs (nothing evicted for a quota)" "$(uids web)" "$before"
expect_eq "vscaler_pod_evictions_total{evicted} rise" "$(rose "$evicted" 'vscaler_pod_evictions_total{result="evicted"}')" 0
eventually 90 running extra 1
expect_eq "extra's pod, created within the quota" "$(pods extra | awk '{print $2}')" 50m
echo "ok: a new pod the quota cannot hold at 400m was created as its template says"
k -n "$ns" delete quota cpu >/dev/null
eventually 90 carry web 400m 128Mi
eventually 60 scaled web Applied
eventually 60 carry extra 400m 64Mi
echo "ok: the quota gone, the same pods carry 400m (and extra's pod, resized in place)"
expect_eq "pod UIDs at the end" "$(uids web)" "$before"
echo "--- a StatefulSet's and a DaemonSet's running pods are resized in place too"
for kind in StatefulSet DaemonSet; do
  name=$(tr 'A-Z' 'a-z' <<<"$kind")
  extra=""
  [ "$kind" = StatefulSet ] && extra="\"replicas\":2,\"serviceName\":\"$name\","
  k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"apps/v1","kind":"$kind","metadata":{"name":"$name"},
 "spec":{$extra"selector":{"matchLabels":{"app":"$name"}},
  "template":{"metadata":{"labels":{"app":"$name"}},
   "spec":{"terminationGracePeriodSeconds":0,
    "containers":[{"name":"app","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}]}}}}
JSON
  eventually 60 carry "$name" 100m 64Mi
  kind_uids=$(uids "$name")
  k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"$name"},
 "spec":{"targetRef":{"apiVersion":"apps/v1","kind":"$kind","name":"$name"},"updateMode":"InPlace",
  "containers":[{"name":"app","requests":{"cpu":"150m","memory":"96Mi"}}]}}
JSON
  eventually 60 carry "$name" 150m 96Mi
  eventually 30 scaled "$name" Applied
  expect_eq "$kind pod UIDs" "$(uids "$name")" "$kind_uids"
  echo "ok: $kind: $(uids "$name" | wc -l) pods resized in place"
done

echo "--- resizePolicy RestartContainer for memory: the kubelet restarts the container, counted"
make_deployment "$ns" rp '[{"name":"app","image":"registry.k8s.io/pause:3.10",
  "resizePolicy":[{"resourceName":"memory","restartPolicy":"RestartContainer"}],
  "resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}]'
eventually 60 running rp 1
rp_uid=$(uids rp)
scaler rp InPlace 100m 96Mi
restarted_once() {
  [ "$(pods rp | awk '{print $4, $5, $6}')" = "96Mi 96Mi 1" ] &&
    [ "$(jp "$ns" vsc/rp '{.status.pods.restarted}')" = 1 ]
}
eventually 60 restarted_once
expect_eq "rp's pod UID (resized, not replaced)" "$(uids rp)" "$rp_uid"
echo "ok: the container was restarted once by its resizePolicy; status.pods.restarted = 1"

echo "--- pod-level resources the container outgrows: raised in the same resize (nodes declare it)"
make_deployment "$ns" pl '[{"name":"app","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}]'
k -n "$ns" patch deployment pl --type=merge -p '{"spec":{"template":{"spec":{"resources":{"requests":{"cpu":"200m","memory":"128Mi"}}}}}}' >/dev/null
eventually 60 running pl 1
pl_uid=$(uids pl)
# (The template patch came before the scaler: the pod was created as the template says.)
scaler pl InPlace 300m 64Mi
pod_level() { k -n "$ns" get pods -l app=pl -o jsonpath='{.items[0].spec.resources.requests.cpu}'; }
pl_carried() { carry pl 300m 64Mi && [ "$(pod_level)" = 300m ]; }
eventually 60 pl_carried
expect_eq "pl's pod UID (resized, not replaced)" "$(uids pl)" "$pl_uid"
echo "ok: container and pod-level cpu request both 300m, in one resize"

echo "PASS"
