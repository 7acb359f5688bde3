#!/usr/bin/env bash
# `make demo`: vscaler's job on the local control plane, shown step by step: the CRD and the
# url-based webhooks are registered, vscaler runs as a process on 127.0.0.1, a sample Deployment
# and VerticalScaler are applied, and what vscaler did is printed. `scripts/demo.sh down` (make
# demo-down) stops vscaler, unregisters the webhooks and stops the control plane.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cluster_dir=${VSCALER_CLUSTER_DIR:-/tmp/vscaler-cluster}
demo_dir=$cluster_dir/demo
export KUBECONFIG=$cluster_dir/kubeconfig
export KUBECTL=$cluster_dir/bin/kubectl
k() { "$KUBECTL" "$@"; }
# shellcheck source=process.sh
. "$root/scripts/process.sh"
step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

# vscaler.pid holds the record "PID STARTTIME" of the vscaler the demo started (scripts/process.sh).
stop_vscaler() {
  if [ -f "$demo_dir/vscaler.pid" ]; then
    local record
    record=$(cat "$demo_dir/vscaler.pid")
    if process_stop "$record" 5; then echo "demo: stopped vscaler (pid ${record%% *})"; fi
    rm -f "$demo_dir/vscaler.pid"
  fi
}

if [ "${1:-}" = down ]; then
  stop_vscaler
  if [ -f "$KUBECONFIG" ]; then "$root/certs/install.sh" --uninstall --local >/dev/null 2>&1 || true; fi
  "$root/test/cluster/down.sh"
  exit 0
fi

[ -f "$KUBECONFIG" ] || { echo "demo: no control plane in $cluster_dir (make demo starts one)" >&2; exit 1; }
mkdir -p "$demo_dir"
stop_vscaler  # a second `make demo` restarts vscaler with the current build

step "1. the local control plane"
k version 2>/dev/null | sed 's/^/   /'

step "2. the VerticalScaler CRD, a serving certificate and the url-based webhook configurations"
k apply -f "$root/manifests/crd/verticalscalers.yaml" -f "$root/manifests/crd/verticalscalercheckpoints.yaml" | sed 's/^/   /'
k wait --for condition=established --timeout=60s crd/verticalscalers.scaling.vscaler.dev \
  crd/verticalscalercheckpoints.scaling.vscaler.dev >/dev/null
port=9443
if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
fi
"$root/certs/install.sh" --local --port "$port" --cert-dir "$demo_dir/certs" | sed 's/^/   /'

step "3. vscaler, running as a process (log: $demo_dir/vscaler.log)"
# As its ServiceAccount's user (a client certificate of the local CA, the shipped RBAC), not as
# the admin: the webhooks skip that user, so vscaler's own patches never meet its own hook.
operator_kubeconfig=$("$root/test/cluster/operator-kubeconfig.sh")
echo "   as user system:serviceaccount:vscaler-system:vscaler ($operator_kubeconfig)"
# The local API server presents its own client certificate to webhooks (test/cluster/up.sh): the
# webhook then serves it and no one else.
client_ca=()
[ -f "$cluster_dir/admission.yaml" ] && client_ca=(--webhook-client-ca-file "$cluster_dir/pki/webhook-client-ca.crt")
# The full cluster's Prometheus (kwok's cAdvisor series; step 9b seeds it with days of history):
# vscaler reads the history of a scaler without a checkpoint from it.
history=()
if [ "$(cat "$cluster_dir/mode" 2>/dev/null)" = full ] && [ -x /usr/bin/prometheus ]; then
  "$root/test/cluster/prometheus.sh" up >/dev/null
  history=(--prometheus-address "$(cat "$cluster_dir/prometheus.url")")
  echo "   with history from the cluster's Prometheus (${history[1]})"
fi
: > "$demo_dir/vscaler.log"
PROCESS_DETACH=1 process_spawn "$demo_dir/vscaler.log" "$root/build/vscaler" "${client_ca[@]}" "${history[@]}" \
  --kubeconfig "$operator_kubeconfig" --webhook-port "$port" --cert-dir "$demo_dir/certs" \
  --metrics-addr 127.0.0.1:18080 --health-addr 127.0.0.1:18081 --dashboard-addr 127.0.0.1:18082 \
  --resync-period 30s \
  --recommender-interval 15s --min-update-interval 1m --in-recommendation-bounds-eviction-lifetime-threshold 1m
echo "$PROCESS_RECORD" > "$demo_dir/vscaler.pid"
process_await "$PROCESS_RECORD" 30 "demo: vscaler" "$demo_dir/vscaler.log" \
  curl -fsS http://127.0.0.1:18081/readyz || exit 1
echo "   ready: webhook https://127.0.0.1:$port, metrics http://127.0.0.1:18080/metrics"

step "4. a sample Deployment (namespace shop) with resources of its own"
k create namespace shop --dry-run=client -o yaml | k apply -f - >/dev/null
k delete verticalscaler web -n shop --ignore-not-found >/dev/null
k apply -f "$root/manifests/samples/deployment.yaml" | sed 's/^/   /'
show_resources() {
  k -n shop get deploy web -o jsonpath='{range .spec.template.spec.containers[*]}   {.name}: {.resources}{"\n"}{end}'
  echo "   generation: $(k -n shop get deploy web -o jsonpath='{.metadata.generation}')"
}
show_resources

step "5. a VerticalScaler for it (updateMode Auto)"
k apply -f "$root/manifests/samples/verticalscaler.yaml" 2>&1 | sed 's/^/   /'
k -n shop wait --for=condition=Ready --timeout=30s verticalscaler/web >/dev/null
k -n shop get verticalscaler web | sed 's/^/   /'
echo "   the Deployment now:"
show_resources
echo "   kubectl describe vsc web:"
k -n shop describe vsc web | sed -n '/^Spec:/,$p' | sed 's/^/     /'

step "6. a Helm-style upgrade resets the resources: in Auto mode the admission webhook keeps them"
k apply -f "$root/manifests/samples/deployment.yaml" 2>&1 | sed 's/^/   /'
show_resources
echo "   (the generation did not move: the reset was a no-op write, no extra rollout)"

step "7. someone edits the resources by hand: the same write gets the declared values back"
k -n shop set resources deploy web -c app --requests=cpu=150m 2>&1 | sed 's/^/   /'
show_resources

step "8. in Reconcile mode vscaler restores an edit after the fact (one extra rollout)"
k -n shop patch vsc web --type merge -p '{"spec":{"updateMode":"Reconcile"}}' | sed 's/^/   /'
sleep 0.5
k -n shop set resources deploy web -c app --requests=cpu=150m 2>&1 | sed 's/^/   /'
sleep 0.5
show_resources
k -n shop get events --field-selector involvedObject.kind=VerticalScaler \
  -o custom-columns=TYPE:.type,REASON:.reason,MESSAGE:.message 2>/dev/null | sed 's/^/   /'


# wait_for SECONDS DESCRIPTION COMMAND...: polls COMMAND every second until it succeeds.
wait_for() {
  local limit=$1 what=$2
  shift 2
  for _ in $(seq 1 "$limit"); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done
  echo "   (gave up waiting $limit s for $what; see $demo_dir/vscaler.log)"
  return 1
}
condition_true() {
  [ "$(k -n shop get vsc "$1" -o jsonpath="{.status.conditions[?(@.type==\"$2\")].status}")" = True ]
}
api_requests() { k -n shop get deploy api -o jsonpath='{.spec.template.spec.containers[0].resources.requests}'; }
requests_changed() { [ "$(api_requests)" != "$1" ]; }

if k get apiservice v1beta1.metrics.k8s.io >/dev/null 2>&1; then
  step "9. recommendations from usage: the seed's two-line scaler, spec: {deploymentName: api}"
  # kwok reports the usage this row says (test/cluster/usage.py), without touching the pods.
  usage=$(k get clusterresourceusage vscaler-usage -o json | python3 "$root/test/cluster/usage.py" set shop api app 300m 400Mi)
  k replace -f - >/dev/null <<<"$usage"
  echo "   simulated usage of each api pod: 300m CPU, 400Mi memory"
  k -n shop apply -f - <<'YAML' | sed 's/^/   /'
apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  replicas: 3
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
      - name: app
        image: registry.k8s.io/pause:3.10
        resources: {requests: {cpu: 10m, memory: 32Mi}}
---
apiVersion: scaling.vscaler.dev/v1beta1
kind: VerticalScaler
metadata: {name: api}
spec: {deploymentName: api}
YAML
  # The in-place one (step 10) starts now too: both wait for the same first recommendations.
  usage=$(k get clusterresourceusage vscaler-usage -o json | python3 "$root/test/cluster/usage.py" set shop cart app 300m 400Mi)
  k replace -f - >/dev/null <<<"$usage"
  k -n shop apply -f - >/dev/null <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: cart}
spec:
  replicas: 3
  selector: {matchLabels: {app: cart}}
  template:
    metadata: {labels: {app: cart}}
    spec:
      containers:
      - name: app
        image: registry.k8s.io/pause:3.10
        resources: {requests: {cpu: 10m, memory: 32Mi}}
YAML
  before=$(api_requests)
  echo "   the template asks for $before"
  k -n shop rollout status deploy/api --timeout=120s | sed 's/^/   /'
  if wait_for 90 "metrics-server to report the pods" k -n shop top pods -l app=api --no-headers; then
    echo "   kubectl top pods:"
    k -n shop top pods -l app=api | sed 's/^/     /'
  fi
  if wait_for 150 "the first recommendation" condition_true api RecommendationProvided; then
    echo "   status.recommendation (VerticalPodAutoscaler's shape):"
    k -n shop get vsc api -o jsonpath='{range .status.recommendation.containerRecommendations[*]}     {.containerName}: target {.target}, lowerBound {.lowerBound}, upperBound {.upperBound}{"\n"}{end}'
    if wait_for 60 "the template patch" requests_changed "$before"; then
      echo "   the request lay below lowerBound: one template patch, one rollout; now $(api_requests)"
      k -n shop rollout status deploy/api --timeout=120s | sed 's/^/   /'
      k -n shop get rs -l app=api | sed 's/^/   /'
    fi
  fi
  k -n shop get vsc | sed 's/^/   /'

  if [ ${#history[@]} -gt 0 ]; then
    step "9b. a workload with 8 days in Prometheus: narrow bounds in its first recommendation"
    # 8 days of its pod's usage (300m, 400Mi, a daily wave), as Prometheus would have scraped
    # them, loaded with promtool (test/cluster/history.py; prometheus.sh seed restarts it).
    python3 "$root/test/cluster/history.py" --namespace shop --pods ledger-0 --container app \
      --cpu-mean 0.3 --cpu-amplitude 0.03 --memory-mean-mib 400 --memory-amplitude-mib 20 \
      --days 8 --step 300 --end $(($(date +%s) / 300 * 300)) > "$demo_dir/ledger.om"
    seed_begin=$SECONDS
    "$root/test/cluster/prometheus.sh" seed "$demo_dir/ledger.om" >/dev/null
    echo "   seeded 8 days of ledger-0 into Prometheus ($((SECONDS - seed_begin)) s)"
    usage=$(k get clusterresourceusage vscaler-usage -o json | python3 "$root/test/cluster/usage.py" set shop ledger app 300m 400Mi)
    k replace -f - >/dev/null <<<"$usage"
    k -n shop apply -f - <<'YAML' | sed 's/^/   /'
apiVersion: apps/v1
kind: StatefulSet
metadata: {name: ledger}
spec:
  replicas: 1
  serviceName: ledger
  selector: {matchLabels: {app: ledger}}
  template:
    metadata: {labels: {app: ledger}}
    spec:
      containers:
      - name: app
        image: registry.k8s.io/pause:3.10
        resources: {requests: {cpu: 10m, memory: 32Mi}}
---
apiVersion: scaling.vscaler.dev/v1beta1
kind: VerticalScaler
metadata: {name: ledger}
spec:
  targetRef: {apiVersion: apps/v1, kind: StatefulSet, name: ledger}
YAML
    if wait_for 60 "ledger's first recommendation" condition_true ledger RecommendationProvided; then
      echo "   ledger's first recommendation beside api's (no history, a minute of samples):"
      for scaler in api ledger; do
        k -n shop get vsc "$scaler" -o jsonpath='{range .status.recommendation.containerRecommendations[*]}     {.containerName}: target {.target}, lowerBound {.lowerBound}, upperBound {.upperBound}{"\n"}{end}' | sed "s/^     /     $scaler /"
      done
      echo "   ledger: $(k -n shop get vsc ledger -o jsonpath='{.status.conditions[?(@.type=="RecommendationProvided")].message}')"
    fi
  fi

  step "10. the same usage, updateMode InPlaceOrRecreate: the running pods are resized, none restarts"
  cart_pods() {
    k -n shop get pods -l app=cart --sort-by=.metadata.name -o \
      custom-columns='NAME:.metadata.name,RESTARTS:.status.containerStatuses[0].restartCount,CPU:.spec.containers[0].resources.requests.cpu,MEMORY:.spec.containers[0].resources.requests.memory,KUBELET CPU:.status.containerStatuses[0].resources.requests.cpu'
  }
  k -n shop rollout status deploy/cart --timeout=120s >/dev/null
  echo "   kubectl get pods, before (usage 300m CPU, 400Mi memory each):"
  cart_pods | sed 's/^/     /'
  cart_begin=$SECONDS
  k -n shop apply -f - <<'YAML' | sed 's/^/   /'
apiVersion: scaling.vscaler.dev/v1beta1
kind: VerticalScaler
metadata: {name: cart}
spec: {deploymentName: cart, updateMode: InPlaceOrRecreate}
YAML
  cart_resized() {
    [ "$(k -n shop get vsc cart -o jsonpath='{.status.conditions[?(@.type=="Scaled")].reason}')" = Applied ] &&
      [ "$(k -n shop get vsc cart -o jsonpath='{.status.pods.atTarget}')" = 3 ]
  }
  if wait_for 90 "the in-place resize" cart_resized; then
    echo "   kubectl get pods, $((SECONDS - cart_begin)) s later: the same pods, no restart, the recommendation's requests:"
    cart_pods | sed 's/^/     /'
    echo "   status.pods: $(k -n shop get vsc cart -o jsonpath='{.status.pods}')"
    echo "   the template still asks for $(k -n shop get deploy cart -o jsonpath='{.spec.template.spec.containers[0].resources.requests}'), generation $(k -n shop get deploy cart -o jsonpath='{.metadata.generation}'); its ReplicaSets:"
    k -n shop get rs -l app=cart | sed 's/^/   /'

    step "10b. usage rises to 700m CPU, 800Mi: the same pods are resized again, still no restart"
    # VPA's updater rule, time compressed for the demo (vscaler runs with a 1m
    # --min-update-interval and --in-recommendation-bounds-eviction-lifetime-threshold): a pod
    # that has lived that long follows a target more than 10 % away from its request.
    cart_cpu_before=$(k -n shop get vsc cart -o jsonpath='{.status.recommendation.containerRecommendations[0].target.cpu}')
    usage=$(k get clusterresourceusage vscaler-usage -o json | python3 "$root/test/cluster/usage.py" set shop cart app 700m 800Mi)
    k replace -f - >/dev/null <<<"$usage"
    cart_begin=$SECONDS
    # millicores of a quantity ("352m" or "1")
    millicores() { awk '{ q = $0; if (q ~ /m$/) { sub(/m$/, "", q); print q + 0 } else print q * 1000 }'; }
    cart_followed() {
      local before target
      before=$(millicores <<<"$cart_cpu_before")
      target=$(k -n shop get vsc cart -o jsonpath='{.status.recommendation.containerRecommendations[0].target.cpu}' | millicores)
      [ "$target" -gt $((before * 11 / 10)) ] || return 1
      # every running pod carries (spec and kubelet) at least 90 % of the new target, unrestarted
      [ -z "$(k -n shop get pods -l app=cart -o jsonpath='{range .items[*]}{.spec.containers[0].resources.requests.cpu}{" "}{.status.containerStatuses[0].resources.requests.cpu}{" "}{.status.containerStatuses[0].restartCount}{"\n"}{end}' |
        awk -v t="$target" '{ n = 0; for (i = 1; i <= 2; i++) { q = $i; if (q ~ /m$/) { sub(/m$/, "", q); q += 0 } else q *= 1000
          if (q < 0.9 * t) n++ } if (n || $3 != 0) print }')" ]
    }
    if wait_for 180 "the pods to follow the higher recommendation" cart_followed; then
      echo "   kubectl get pods, $((SECONDS - cart_begin)) s after the rise: the same names, 0 restarts, target $cart_cpu_before -> $(k -n shop get vsc cart -o jsonpath='{.status.recommendation.containerRecommendations[0].target.cpu}'):"
      cart_pods | sed 's/^/     /'
      echo "   status.pods: $(k -n shop get vsc cart -o jsonpath='{.status.pods}'); Deployment generation $(k -n shop get deploy cart -o jsonpath='{.metadata.generation}')"
    fi
  fi

  step "10c. startup boost: 2x CPU while a pod starts, given back in place 5 s after it is Ready"
  # kwok makes these pods Ready 8 s after they start (annotation kwok.x-k8s.io/ready-after), as a
  # JVM that loads its classes first; the scaler is "Off": only the starting pods are changed.
  k -n shop apply -f - <<'YAML' | sed 's/^/   /'
apiVersion: scaling.vscaler.dev/v1beta1
kind: VerticalScaler
metadata: {name: orders}
spec:
  deploymentName: orders
  updateMode: "Off"
  startupBoost: {cpu: {type: Factor, factor: 2, durationSeconds: 5}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: orders}
spec:
  replicas: 2
  selector: {matchLabels: {app: orders}}
  template:
    metadata:
      labels: {app: orders}
      annotations: {kwok.x-k8s.io/ready-after: 8s}
    spec:
      containers:
      - name: jvm
        image: registry.k8s.io/pause:3.10
        resources: {requests: {cpu: 250m, memory: 512Mi}, limits: {cpu: 500m}}
YAML
  orders_pods() {
    k -n shop get pods -l app=orders --sort-by=.metadata.name -o \
      custom-columns='NAME:.metadata.name,READY:.status.conditions[?(@.type=="Ready")].status,RESTARTS:.status.containerStatuses[0].restartCount,CPU:.spec.containers[0].resources.requests.cpu,LIMIT:.spec.containers[0].resources.limits.cpu,KUBELET CPU:.status.containerStatuses[0].resources.requests.cpu'
  }
  orders_started() { [ "$(k -n shop get pods -l app=orders -o jsonpath='{range .items[*]}{.status.containerStatuses[0].resources.requests.cpu}{"\n"}{end}' | grep -c '^500m$')" = 2 ]; }
  orders_back() {
    [ "$(k -n shop get pods -l app=orders -o jsonpath='{range .items[*]}{.spec.containers[0].resources.requests.cpu}{" "}{.status.containerStatuses[0].resources.requests.cpu}{"\n"}{end}' | grep -c '^250m 250m$')" = 2 ]
  }
  orders_begin=$SECONDS
  if wait_for 30 "the boosted pods" orders_started; then
    echo "   kubectl get pods, starting (the template asks 250m/500m):"
    orders_pods | sed 's/^/     /'
    if wait_for 40 "the boost to end" orders_back; then
      echo "   kubectl get pods, $((SECONDS - orders_begin)) s after the rollout: the same pods, resized back in place:"
      orders_pods | sed 's/^/     /'
      echo "   status.startupBoost: $(k -n shop get vsc orders -o jsonpath='{.status.startupBoost}')"
    fi
  fi
fi

step "11. what vscaler counted"
curl -fsS http://127.0.0.1:18080/metrics | grep -E '^(vscaler_|controller_runtime_reconcile_total|controller_runtime_webhook_requests_total)' | sed 's/^/   /'
step "12. the dashboard (read-only, on its own loopback address): requests beside recommendations, savings"
echo "   http://127.0.0.1:18082/dashboard?namespace=shop   (every namespace: /dashboard; JSON: /dashboard.json)"
echo
echo "Done. Try: KUBECONFIG=$KUBECONFIG $KUBECTL -n shop get vsc,deploy"
echo "Dashboard: http://127.0.0.1:18082/dashboard"
echo "Stop everything: make demo-down"
