#!/usr/bin/env bash
# plane: full
# Issue 30, the node's room: a DaemonSet on two small kwok nodes (1 CPU allocatable each; two
# pods, so the never-below-2-live-pods rule alone would allow an eviction) whose
# InPlaceOrRecreate scaler asks 2 CPUs. The real API server's PodResizeValidator (default on in
# Kubernetes 1.36) refuses the resize: 403, cause NodeCapacity. vscaler reports it
# (Scaled=False, ResizeInfeasible, with the API server's words) and does not evict the pod: a
# DaemonSet's pod would come back on the same node and meet the same refusal.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

ns=$(unique_namespace node-cap)
small=${ns##*-}
nodes=("small-$small-a" "small-$small-b")
start_operator_with_webhooks --resync-period 1h --recommender-interval 0
cleanup() {
  unregister_webhooks
  stop_operator
  k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true
  k delete node "${nodes[@]}" --wait=false >/dev/null 2>&1 || true
}
trap cleanup EXIT
# Tainted, so that no other test's pod lands on them; managed by kwok like the cluster's nodes.
for node in "${nodes[@]}"; do
  k apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Node
metadata:
  name: $node
  annotations: {kwok.x-k8s.io/node: fake, node.alpha.kubernetes.io/ttl: "0"}
  labels: {kubernetes.io/os: linux, kubernetes.io/hostname: $node, type: kwok, vscaler-test/small: "$small"}
spec:
  taints: [{key: vscaler-test/small, effect: NoSchedule}]
status:
  allocatable: {cpu: "1", memory: 4Gi, pods: "10"}
  capacity: {cpu: "1", memory: 4Gi, pods: "10"}
  declaredFeatures: [InPlacePodLevelResourcesVerticalScaling]
YAML
  k wait --for condition=Ready --timeout=60s "node/$node" >/dev/null || fail "kwok did not make $node Ready"
done
k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"agent"},
 "spec":{"selector":{"matchLabels":{"app":"agent"}},
  "template":{"metadata":{"labels":{"app":"agent"}},
   "spec":{"terminationGracePeriodSeconds":0,"nodeSelector":{"vscaler-test/small":"$small"},
    "tolerations":[{"key":"vscaler-test/small","operator":"Exists"}],
    "containers":[{"name":"app","image":"registry.k8s.io/pause:3.10","resources":{"requests":{"cpu":"100m"}}}]}}}}
JSON
running() { [ "$(k -n "$ns" get pods -l app=agent -o jsonpath='{.items[*].status.phase}')" = "Running Running" ]; }
eventually 60 running
uids() { k -n "$ns" get pods -l app=agent -o jsonpath='{.items[*].metadata.uid}' | tr ' ' '\n' | sort | tr '\n' ' '; }
before=$(uids)
k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"scaling.vscaler.dev/v1beta1","kind":"VerticalScaler","metadata":{"name":"agent"},
 "spec":{"targetRef":{"apiVersion":"apps/v1","kind":"DaemonSet","name":"agent"},
  "updateMode":"InPlaceOrRecreate","containers":[{"name":"app","requests":{"cpu":"2"}}]}}
JSON
scaled() { jp "$ns" vsc/agent '{.status.conditions[?(@.type=="Scaled")].reason}'; }
infeasible() { [ "$(scaled)" = ResizeInfeasible ]; }
eventually 30 infeasible
message=$(jp "$ns" vsc/agent '{.status.conditions[?(@.type=="Scaled")].message}')
echo "Scaled=ResizeInfeasible: $message"
grep -q "allocatable" <<<"$message" || fail "the message does not carry the API server's refusal"
grep -q "never evicted" <<<"$message" || fail "the message does not say the pod is not evicted"
sleep 4 # a few re-checks: still no eviction
expect_eq "pod UIDs (none evicted)" "$(uids)" "$before"
expect_eq "status.pods.evicted" "$(jp "$ns" vsc/agent '{.status.pods.evicted}')" 0
expect_eq "the pods' requests (the resizes were refused)" \
  "$(k -n "$ns" get pods -l app=agent -o jsonpath='{.items[*].spec.containers[0].resources.requests.cpu}')" "100m 100m"
echo "PASS"
