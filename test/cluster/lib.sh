# shellcheck shell=bash
# Functions shared by the scripts of test/cluster/ (sourced, never run).
CLUSTER_DIR=${VSCALER_CLUSTER_DIR:-/tmp/vscaler-cluster}
# Every process a full cluster runs, in the order down.sh stops them (clients before servers).
CLUSTER_COMPONENTS=(metrics-server kwok kube-scheduler kube-controller-manager kube-apiserver etcd)

# print_paths: the two things a user needs to talk to the cluster.
print_paths() {
  echo "kubeconfig: $CLUSTER_DIR/kubeconfig"
  echo "kubectl:    $CLUSTER_DIR/bin/kubectl"
  echo "try:        KUBECONFIG=$CLUSTER_DIR/kubeconfig $CLUSTER_DIR/bin/kubectl get namespaces"
}

# The components are tracked exactly (scripts/process.sh): NAME.pid holds the record "PID
# STARTTIME" of the process start_process forked, which is the component itself.
# shellcheck source=../../scripts/process.sh
. "$(dirname "${BASH_SOURCE[0]}")/../../scripts/process.sh"

# pid_alive NAME: true when the process recorded in NAME.pid runs (and is the one we started).
pid_alive() {
  local pidfile=$CLUSTER_DIR/$1.pid
  [ -f "$pidfile" ] || return 1
  process_alive "$(cat "$pidfile")"
}

# cluster_running: true when any process of a cluster in CLUSTER_DIR still runs.
cluster_running() {
  local c
  for c in "${CLUSTER_COMPONENTS[@]}"; do pid_alive "$c" && return 0; done
  return 1
}

# start_process NAME BINARY ARGS...: runs BINARY detached (own session), logging to NAME.log.
start_process() {
  local name=$1
  shift
  : > "$CLUSTER_DIR/$name.log"
  PROCESS_DETACH=1 process_spawn "$CLUSTER_DIR/$name.log" "$@"
  echo "$PROCESS_RECORD" > "$CLUSTER_DIR/$name.pid"
}

# start_from_args NAME BINARY [ARGS_FILE]: starts BINARY with the arguments kept in ARGS_FILE
# (default NAME.args), one a line, kept so a test can restart a component alone.
start_from_args() {
  local args=()
  mapfile -t args < "$CLUSTER_DIR/${3:-$1.args}"
  start_process "$1" "$2" "${args[@]}"
}

start_apiserver() { start_from_args kube-apiserver "$KUBE_BIN_DIR/kube-apiserver" apiserver.args; }

# stop_process NAME [GRACE_SECONDS]: SIGTERM, up to GRACE (default 15) s, then SIGKILL; only the
# process we recorded, whatever its command line says. kube-apiserver holds open watch
# connections to the end of its grace, so its callers pass a shorter one (nothing it holds needs
# a clean shutdown: etcd has the data). False when it was not running.
stop_process() {
  local name=$1 grace=${2:-15} pidfile=$CLUSTER_DIR/$1.pid rc=1
  [ -f "$pidfile" ] || return 1
  process_stop "$(cat "$pidfile")" "$grace" && rc=0
  rm -f "$pidfile"
  return $rc
}

# stop_all: stops every component this cluster directory recorded; prints the names it stopped.
# etcd gets a full grace (it has the data); the others are stateless clients of it.
stop_all() {
  local c stopped=()
  for c in "${CLUSTER_COMPONENTS[@]}"; do
    if [ "$c" = etcd ]; then
      stop_process "$c" && stopped+=("$c")
    else
      stop_process "$c" 3 && stopped+=("$c")
    fi
  done
  echo "${stopped[*]}"
}

# admin_curl PATH [CURL_ARGS...]: GET PATH from the API server as the admin user.
admin_curl() {
  local port path=$1
  shift
  port=$(cat "$CLUSTER_DIR/apiserver.port")
  curl -fsS --cacert "$CLUSTER_DIR/pki/ca.crt" --cert "$CLUSTER_DIR/pki/admin.crt" \
    --key "$CLUSTER_DIR/pki/admin.key" "$@" "https://127.0.0.1:$port$path"
}

apiserver_ready() { admin_curl /readyz >/dev/null 2>&1; }

# health_ok URL: true when an HTTPS /healthz-style endpoint of a component on 127.0.0.1 answers
# 200 (their serving certificates are self-signed or ours; what is probed is liveness, not trust).
health_ok() { curl -fsSk --max-time 5 "$1" >/dev/null 2>&1; }

# fail_component NAME WHY: the one line naming what failed and the state of its process, then
# the tail of its log.
fail_component() {
  { printf 'test/cluster: %s %s; ' "$1" "$2"; process_describe "$(cat "$CLUSTER_DIR/$1.pid" 2>/dev/null)"
    echo "last lines of $CLUSTER_DIR/$1.log:"; tail -n 30 "$CLUSTER_DIR/$1.log" 2>/dev/null; } >&2
}

# wait_for WHAT SECONDS COMMAND...: polls COMMAND until it succeeds; on timeout, or when WHAT's
# process exits first, says so (what the kernel knows of the process, then the tail of WHAT's
# log) and fails. Run it in the shell that started WHAT, so an exit status can be read.
wait_for() {
  local what=$1 seconds=$2
  shift 2
  process_await "$(cat "$CLUSTER_DIR/$what.pid" 2>/dev/null)" "$seconds" "test/cluster: $what" \
    "$CLUSTER_DIR/$what.log" "$@"
}

# port_clash NAME: true when NAME's log says its port was taken (picked free, then lost to
# another process before NAME bound it): the caller retries on other ports.
port_clash() { grep -q 'address already in use' "$CLUSTER_DIR/$1.log" 2>/dev/null; }

# issue_cert DIR NAME SUBJECT EXTENSIONS [CA]: NAME.key and NAME.crt signed by CA (default ca)
# in DIR, with the given openssl extension lines (e.g. "extendedKeyUsage=clientAuth").
issue_cert() {
  local dir=$1 name=$2 subject=$3 ext=$4 ca=${5:-ca}
  (
    cd "$dir" || exit 1
    umask 077
    openssl req -newkey rsa:2048 -nodes -subj "$subject" -keyout "$name.key" -out "$name.csr" 2>/dev/null
    printf '%s\n' "$ext" > "$name.ext"
    openssl x509 -req -in "$name.csr" -CA "$ca.crt" -CAkey "$ca.key" -CAcreateserial -days 3650 \
      -extfile "$name.ext" -out "$name.crt" 2>/dev/null
    rm -f "$name.csr" "$name.ext"
  )
}

# gen_pki DIR: a CA for serving and client certificates, the API server's serving certificate
# (SANs 127.0.0.1, localhost and the in-cluster names), an admin client certificate in
# system:masters, the service-account signing key pair, and the client certificate the API
# server presents to webhooks (webhook-client.crt) from a CA of its own (webhook-client-ca.crt:
# vscaler --webhook-client-ca-file accepts that client and no other).
gen_pki() {
  local dir=$1
  (
    cd "$dir" || exit 1
    umask 077
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=vscaler-test-ca" \
      -keyout ca.key -out ca.crt 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=vscaler-test-webhook-client-ca" \
      -keyout webhook-client-ca.key -out webhook-client-ca.crt 2>/dev/null
  )
  issue_cert "$dir" webhook-client "/CN=kube-apiserver-webhook-client" "extendedKeyUsage=clientAuth" \
    webhook-client-ca
  issue_cert "$dir" apiserver "/CN=kube-apiserver" "$(printf '%s\n' \
    "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.0.0.1" \
    "extendedKeyUsage=serverAuth")"
  issue_cert "$dir" admin "/O=system:masters/CN=admin" "extendedKeyUsage=clientAuth"
}

# gen_full_pki DIR: what the full cluster adds to gen_pki: the aggregation layer's front-proxy CA
# and the API server's proxy client certificate; a client certificate for each component, named
# as the bootstrap RBAC expects (system:kube-controller-manager, system:kube-scheduler) or in
# system:masters for kwok and metrics-server (test-only simulators that need broad access); and
# serving certificates for kwok (its kubelet-like endpoint) and metrics-server.
gen_full_pki() {
  local dir=$1 serving
  (
    cd "$dir" || exit 1
    umask 077
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=vscaler-test-front-proxy-ca" \
      -keyout front-proxy-ca.key -out front-proxy-ca.crt 2>/dev/null
  )
  issue_cert "$dir" front-proxy-client "/CN=front-proxy-client" "extendedKeyUsage=clientAuth" front-proxy-ca
  issue_cert "$dir" kube-controller-manager "/CN=system:kube-controller-manager" "extendedKeyUsage=clientAuth"
  issue_cert "$dir" kube-scheduler "/CN=system:kube-scheduler" "extendedKeyUsage=clientAuth"
  issue_cert "$dir" kwok "/O=system:masters/CN=kwok" "extendedKeyUsage=clientAuth"
  issue_cert "$dir" metrics-server "/O=system:masters/CN=metrics-server" "extendedKeyUsage=clientAuth"
  serving=$(printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" "extendedKeyUsage=serverAuth")
  issue_cert "$dir" kwok-serving "/CN=kwok" "$serving"
  # The aggregator checks the name of the APIService's Service, whatever address it dials.
  issue_cert "$dir" metrics-server-serving "/CN=metrics-server.kube-system.svc" "$(printf '%s\n' \
    "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:metrics-server.kube-system.svc" "extendedKeyUsage=serverAuth")"
}

# write_kubeconfig FILE SERVER PKI_DIR [USER]: a kubeconfig for USER (default admin: the cluster
# admin) with PKI_DIR/USER.crt and .key embedded.
write_kubeconfig() {
  local file=$1 server=$2 pki=$3 user=${4:-admin}
  (
    umask 077
    cat > "$file" <<KC
apiVersion: v1
kind: Config
clusters:
- name: vscaler-local
  cluster:
    server: $server
    certificate-authority-data: $(base64 -w0 < "$pki/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 < "$pki/$user.crt")
    client-key-data: $(base64 -w0 < "$pki/$user.key")
contexts:
- name: vscaler-local
  context: {cluster: vscaler-local, user: $user}
current-context: vscaler-local
KC
  )
}
