# Functions shared by the scripts of test/cluster/ (sourced, never run).
CLUSTER_DIR=${VSCALER_CLUSTER_DIR:-/tmp/vscaler-cluster}

# print_paths: the two things a user needs to talk to the control plane.
print_paths() {
  echo "kubeconfig: $CLUSTER_DIR/kubeconfig"
  echo "kubectl:    $CLUSTER_DIR/bin/kubectl"
  echo "try:        KUBECONFIG=$CLUSTER_DIR/kubeconfig $CLUSTER_DIR/bin/kubectl get namespaces"
}

# pid_alive NAME: true when the process recorded in NAME.pid runs and is the binary we started.
pid_alive() {
  local pidfile=$CLUSTER_DIR/$1.pid pid
  [ -f "$pidfile" ] || return 1
  pid=$(cat "$pidfile")
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  # Guard against pid reuse: the command line must name the binary we started.
  tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q -- "$1"
}

cluster_running() { pid_alive etcd || pid_alive kube-apiserver; }

# start_process NAME BINARY ARGS...: runs BINARY detached (own session), logging to NAME.log.
start_process() {
  local name=$1
  shift
  setsid "$@" > "$CLUSTER_DIR/$name.log" 2>&1 < /dev/null &
  echo $! > "$CLUSTER_DIR/$name.pid"
}

start_apiserver() {
  local args=()
  mapfile -t args < "$CLUSTER_DIR/apiserver.args"
  start_process kube-apiserver "$KUBE_BIN_DIR/kube-apiserver" "${args[@]}"
}

# stop_process NAME [GRACE_SECONDS]: SIGTERM, up to GRACE (default 15) s, then SIGKILL; only the
# pid we recorded. kube-apiserver holds open watch connections to the end of its grace, so its
# callers pass a shorter one (nothing it holds needs a clean shutdown: etcd has the data).
stop_process() {
  local name=$1 grace=${2:-15} pid i
  pid_alive "$name" || { rm -f "$CLUSTER_DIR/$name.pid"; return 1; }
  pid=$(cat "$CLUSTER_DIR/$name.pid")
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 1 $((grace * 10))); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$CLUSTER_DIR/$name.pid"
}

apiserver_ready() {
  local port
  port=$(cat "$CLUSTER_DIR/apiserver.port")
  curl -fsS --cacert "$CLUSTER_DIR/pki/ca.crt" --cert "$CLUSTER_DIR/pki/admin.crt" \
    --key "$CLUSTER_DIR/pki/admin.key" "https://127.0.0.1:$port/readyz" >/dev/null 2>&1
}

# wait_for WHAT SECONDS COMMAND...: polls COMMAND until it succeeds; on timeout shows WHAT's log.
wait_for() {
  local what=$1 seconds=$2 deadline
  shift 2
  deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if ! pid_alive "$what" || [ $SECONDS -ge $deadline ]; then
      if pid_alive "$what"; then
        echo "test/cluster: $what did not become ready within ${seconds}s; last lines of its log:" >&2
      else
        echo "test/cluster: $what exited before it was ready; last lines of its log:" >&2
      fi
      tail -n 30 "$CLUSTER_DIR/$what.log" >&2 || true
      return 1
    fi
    sleep 0.5
  done
}

# free_ports N: N distinct free TCP ports on 127.0.0.1, on one line.
free_ports() {
  python3 - "$1" <<'PY'
import socket, sys
socks = []
for _ in range(int(sys.argv[1])):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

# gen_pki DIR: a CA for serving and client certificates, the API server's serving certificate
# (SANs 127.0.0.1, localhost and the in-cluster names), an admin client certificate in
# system:masters, and the service-account signing key pair.
gen_pki() {
  local dir=$1
  (
    cd "$dir"
    umask 077
    openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=vscaler-test-ca" \
      -keyout ca.key -out ca.crt 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/CN=kube-apiserver" \
      -keyout apiserver.key -out apiserver.csr 2>/dev/null
    printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,IP:10.0.0.1" \
      "extendedKeyUsage=serverAuth" > apiserver.ext
    openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile apiserver.ext -out apiserver.crt 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -subj "/O=system:masters/CN=admin" \
      -keyout admin.key -out admin.csr 2>/dev/null
    printf 'extendedKeyUsage=clientAuth\n' > admin.ext
    openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 3650 \
      -extfile admin.ext -out admin.crt 2>/dev/null
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
    rm -f ./*.csr ./*.ext
  )
}

# write_kubeconfig FILE SERVER PKI_DIR: an admin kubeconfig with the certificates embedded.
write_kubeconfig() {
  local file=$1 server=$2 pki=$3
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
- name: admin
  user:
    client-certificate-data: $(base64 -w0 < "$pki/admin.crt")
    client-key-data: $(base64 -w0 < "$pki/admin.key")
contexts:
- name: vscaler-local
  context: {cluster: vscaler-local, user: admin}
current-context: vscaler-local
KC
}
