# shellcheck shell=bash disable=SC2154  # pki, kubectl, apiserver_port and here are set by up.sh
# What up.sh adds on top of etcd + kube-apiserver for the full cluster (sourced by up.sh, never
# run): kube-controller-manager, kube-scheduler, kwok managing VSCALER_NODES fake nodes, and
# metrics-server behind the v1beta1.metrics.k8s.io APIService. Needs lib.sh, versions.sh, and
# pki, apiserver_port and kubectl set by up.sh.
#
# How metrics reach `kubectl top`:
#   kube-apiserver --(aggregation layer: front-proxy client cert)--> APIService
#     v1beta1.metrics.k8s.io -> Service kube-system/metrics-server, type ExternalName, externalName
#     localhost -> https://localhost:METRICS_PORT (metrics-server, certificate with the Service's
#     DNS name, trusted through the APIService's caBundle)
#   metrics-server --(every node's InternalIP 127.0.0.1, port from the node's status, which kwok
#     fills with its own --node-port; path from the node annotation
#     metrics.k8s.io/resource-metrics-path)--> kwok https://127.0.0.1:KWOK_PORT/metrics/nodes/NODE/metrics/resource
#   kwok computes each container's usage from the ClusterResourceUsage vscaler-usage (see usage.py).

# The cluster's constants. Node size is generous so scheduling never limits a test; pod count
# per node is finite (VSCALER_NODES sizes the pool: 1,000 workloads of 3 pods need 6 nodes).
NODE_CPU=32
NODE_MEMORY=128Gi
NODE_PODS=${VSCALER_NODE_PODS:-500}
# metrics-server's scrape period (its minimum is 10 s; its per-scrape timeout must stay below 90 %).
METRIC_RESOLUTION=10s

# args_kube-controller-manager PORT: every default controller, each with its own service account
# (the bootstrap RBAC grants the controllers' roles to those accounts), signing service-account
# tokens and certificates with the cluster's keys; no cloud provider; not leader-elected (one
# instance, and it starts at once).
args_kube-controller-manager() {
  local kc=$CLUSTER_DIR/kube-controller-manager.kubeconfig
  printf '%s\n' "--kubeconfig=$kc" "--authentication-kubeconfig=$kc" "--authorization-kubeconfig=$kc" \
    "--bind-address=127.0.0.1" "--secure-port=$1" "--cert-dir=$CLUSTER_DIR/kube-controller-manager" \
    "--leader-elect=false" "--use-service-account-credentials=true" "--controllers=*" \
    "--service-account-private-key-file=$pki/sa.key" "--root-ca-file=$pki/ca.crt" \
    "--cluster-signing-cert-file=$pki/ca.crt" "--cluster-signing-key-file=$pki/ca.key" \
    "--kube-api-qps=200" "--kube-api-burst=400" "--v=0"
}

args_kube-scheduler() {
  local kc=$CLUSTER_DIR/kube-scheduler.kubeconfig
  printf '%s\n' "--kubeconfig=$kc" "--authentication-kubeconfig=$kc" "--authorization-kubeconfig=$kc" \
    "--bind-address=127.0.0.1" "--secure-port=$1" "--cert-dir=$CLUSTER_DIR/kube-scheduler" \
    "--leader-elect=false" "--v=0"
}

# args_kwok PORT: kwok serves every node's kubelet-like endpoints on PORT (TLS, its own
# certificate) and puts 127.0.0.1 and PORT into each node's status; it manages only the nodes
# annotated kwok.x-k8s.io/node=fake (ours), and watches ClusterResourceUsage/ResourceUsage objects
# so tests can change usage while it runs.
args_kwok() {
  printf '%s\n' "--kubeconfig=$CLUSTER_DIR/kwok.kubeconfig" "--config=$CLUSTER_DIR/kwok.yaml" \
    "--manage-all-nodes=false" "--manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake" \
    "--node-ip=127.0.0.1" "--node-port=$1" "--server-address=127.0.0.1:$1" \
    "--tls-cert-file=$pki/kwok-serving.crt" "--tls-private-key-file=$pki/kwok-serving.key" \
    "--node-lease-duration-seconds=40" "--enable-crds=ClusterResourceUsage,ResourceUsage"
}

# args_metrics-server PORT: the flags kwokctl runs it with (insecure TLS to the fake kubelets,
# their port from node status), InternalIP only (every node is 127.0.0.1), and its own client
# certificate for the API server, which also authenticates the aggregation layer's requests.
args_metrics-server() {
  local kc=$CLUSTER_DIR/metrics-server.kubeconfig
  printf '%s\n' "--kubeconfig=$kc" "--authentication-kubeconfig=$kc" "--authorization-kubeconfig=$kc" \
    "--bind-address=127.0.0.1" "--secure-port=$1" \
    "--tls-cert-file=$pki/metrics-server-serving.crt" "--tls-private-key-file=$pki/metrics-server-serving.key" \
    "--kubelet-insecure-tls" "--kubelet-use-node-status-port" \
    "--kubelet-preferred-address-types=InternalIP" "--kubelet-request-timeout=5s" \
    "--metric-resolution=$METRIC_RESOLUTION" "--v=0"
}

# health_url NAME: the endpoint that says NAME is up (all always allowed without credentials).
# (metrics-server's /readyz waits until it has stored a scrape; /livez says it serves and scrapes on time.)
health_url() {
  local path=/healthz
  [ "$1" = metrics-server ] && path=/livez
  echo "https://127.0.0.1:$(cat "$CLUSTER_DIR/$1.port")$path"
}

binary_of() {
  case $1 in
    kwok) echo "$KWOK_BIN_DIR/kwok" ;;
    metrics-server) echo "$METRICS_SERVER_BIN_DIR/metrics-server" ;;
    *) echo "$KUBE_BIN_DIR/$1" ;;
  esac
}

# extra_args NAME: the words of VSCALER_<NAME>_ARGS (e.g. VSCALER_METRICS_SERVER_ARGS,
# VSCALER_KUBE_CONTROLLER_MANAGER_ARGS), one a line: flags a test adds to that component.
extra_args() {
  local var arg
  var=VSCALER_$(tr 'a-z-' 'A-Z_' <<<"$1")_ARGS
  for arg in ${!var:-}; do echo "$arg"; done
}

# launch NAME: picks a free port, writes NAME.args and starts NAME. kwok runs with HOME in the
# cluster directory: it would otherwise also load a user's ~/.kwok/kwok.yaml.
launch() {
  local name=$1 port
  port=$(free_ports 1)
  echo "$port" > "$CLUSTER_DIR/$name.port"
  { "args_$name" "$port" && extra_args "$name"; } > "$CLUSTER_DIR/$name.args"
  mkdir -p "$CLUSTER_DIR/$name"
  if [ "$name" = kwok ]; then
    HOME=$CLUSTER_DIR/kwok start_from_args "$name" "$(binary_of "$name")"
  else
    start_from_args "$name" "$(binary_of "$name")"
  fi
}

# await NAME: waits until NAME is healthy; a port taken between picking and binding gets NAME
# relaunched on another (twice at most).
await() {
  local name=$1 attempt
  for attempt in 1 2 3; do
    wait_for "$name" 120 health_ok "$(health_url "$name")" 2>"$CLUSTER_DIR/$name.wait" && return 0
    if [ "$attempt" -lt 3 ] && port_clash "$name"; then
      stop_process "$name" 3 || true
      launch "$name"
      if [ "$name" = metrics-server ]; then apply_metrics_api; fi
      continue
    fi
    cat "$CLUSTER_DIR/$name.wait" >&2
    return 1
  done
}

# kwok_config: the stock stages (nodes become Ready and keep a lease; pods complete and are
# deleted) and the resource-metrics endpoint, from the kwok version that was built; and the
# project's own (stages/): pods that run as a kubelet with in-place resize reports them, and the
# kubelet's part of a resize.
kwok_config() {
  local f first=1
  for f in node-initialize node-heartbeat-with-lease pod-complete pod-delete metrics-resource; do
    [ "$first" = 1 ] || echo "---"
    first=0
    cat "$KWOK_BIN_DIR/share/$f.yaml"
  done
  for f in "$here"/stages/*.yaml; do
    echo "---"
    cat "$f"
  done
}

# nodes_manifest N: N fake nodes kwok-node-0.. with a /22 pod range each (10.64.0.0/10 holds
# 4,096 of them), address 127.0.0.1 and the resource-metrics path metrics-server reads; each
# declares in-place resize of pod-level resources (the kubelet of 1.36 does; the API server
# refuses such a resize on a node that does not, 403).
nodes_manifest() {
  local i cidr
  for ((i = 0; i < $1; i++)); do
    cidr="10.$((64 + i / 64)).$(((i % 64) * 4)).0/22"
    cat <<NODE
---
apiVersion: v1
kind: Node
metadata:
  name: kwok-node-$i
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
    metrics.k8s.io/resource-metrics-path: /metrics/nodes/kwok-node-$i/metrics/resource
  labels:
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
    kubernetes.io/hostname: kwok-node-$i
    type: kwok
spec:
  podCIDR: $cidr
  podCIDRs: [$cidr]
status:
  addresses:
  - {type: InternalIP, address: 127.0.0.1}
  - {type: Hostname, address: kwok-node-$i}
  allocatable: {cpu: "$NODE_CPU", memory: $NODE_MEMORY, pods: "$NODE_PODS"}
  capacity: {cpu: "$NODE_CPU", memory: $NODE_MEMORY, pods: "$NODE_PODS"}
  nodeInfo: {architecture: amd64, operatingSystem: linux, kubeletVersion: $KUBE_VERSION}
  declaredFeatures: [InPlacePodLevelResourcesVerticalScaling]
NODE
  done
}

# apply_metrics_api: the Service and APIService that route /apis/metrics.k8s.io/v1beta1 to the
# metrics-server on its current port.
apply_metrics_api() {
  local port
  port=$(cat "$CLUSTER_DIR/metrics-server.port")
  "$kubectl" apply -f - >/dev/null <<MANIFEST
apiVersion: v1
kind: Service
metadata: {name: metrics-server, namespace: kube-system}
spec:
  type: ExternalName
  externalName: localhost
  ports: [{name: https, port: $port, protocol: TCP}]
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  group: metrics.k8s.io
  version: v1beta1
  groupPriorityMinimum: 100
  versionPriority: 100
  service: {namespace: kube-system, name: metrics-server, port: $port}
  caBundle: $(base64 -w0 < "$pki/ca.crt")
MANIFEST
}

# start_full: everything above, started concurrently, then waited for. Fails with the one line
# naming the component (and its log's tail) that did not come up.
start_full() {
  local server=https://127.0.0.1:$apiserver_port c
  for c in kube-controller-manager kube-scheduler kwok metrics-server; do
    write_kubeconfig "$CLUSTER_DIR/$c.kubeconfig" "$server" "$pki" "$c"
  done
  mkdir -p "$CLUSTER_DIR/kwok"
  kwok_config > "$CLUSTER_DIR/kwok.yaml"
  # The usage CRDs first: kwok lists them at start.
  "$kubectl" apply -f "$KWOK_BIN_DIR/share/kwok.x-k8s.io_clusterresourceusages.yaml" \
    -f "$KWOK_BIN_DIR/share/kwok.x-k8s.io_resourceusages.yaml" >/dev/null
  "$kubectl" wait --for condition=established --timeout=60s \
    crd/clusterresourceusages.kwok.x-k8s.io crd/resourceusages.kwok.x-k8s.io >/dev/null
  python3 "$here/usage.py" render | "$kubectl" apply -f - >/dev/null
  nodes_manifest "$VSCALER_NODES" | "$kubectl" apply -f - >/dev/null
  for c in kube-controller-manager kube-scheduler kwok metrics-server; do launch "$c"; done
  apply_metrics_api
  for c in kube-controller-manager kube-scheduler kwok metrics-server; do await "$c" || return 1; done
  # Ready for tests: pods can be created (the default ServiceAccount exists), every node is
  # Ready, and the metrics API is served.
  wait_for kube-controller-manager 120 "$kubectl" get serviceaccount default -n default || return 1
  if ! "$kubectl" wait --for condition=Ready --timeout=120s node --all >/dev/null 2>&1; then
    fail_component kwok "did not make the $VSCALER_NODES nodes Ready within 120s"
    return 1
  fi
  if ! "$kubectl" wait --for condition=Available --timeout=120s apiservice/v1beta1.metrics.k8s.io >/dev/null 2>&1; then
    fail_component metrics-server "is not Available as v1beta1.metrics.k8s.io within 120s ($("$kubectl" get apiservice v1beta1.metrics.k8s.io -o jsonpath='{.status.conditions[0].message}' 2>&1))"
    return 1
  fi
}
