#!/usr/bin/env bash
# Issue 8: API server throttling. The operator runs as a user of its own whose requests API
# Priority and Fairness puts on a tiny priority level (nominalConcurrencyShares 1, nothing
# borrowed, limitResponse Reject: 429 with a Retry-After of 1-4 s when its seats are taken), and
# a load generator with the same identity keeps those seats busy. The operator starts (its first
# list may be throttled), scalers are created and their specs keep changing meanwhile, then the
# load stops. Everything must converge; the operator must have met 429s; and whenever it logged a
# throttled failure, its next attempt for the same scaler (or the informer's next list/watch)
# came no sooner than the Retry-After it was given (so did the start-up check's). The resync is off (1h) and no webhook is
# registered, so nothing but the backoff requeues a failed key.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/reliability_lib.sh"
seconds=${RELIABILITY_THROTTLE_SECONDS:-8}
count=20
user=vscaler-e2e-throttled
# A fresh priority level each run: APF remembers each level's rejections (Retry-After doubles
# while they go on, up to 32 s) by name.
level=$user-$(date +%s)

install_crd
WORK_DIR=$(mktemp -d /tmp/vscaler-e2e.XXXXXX)
cleanup() {
  reliability_cleanup
  [ -n "${LOAD_PID:-}" ] && { touch "$WORK_DIR/load.stop"; wait "$LOAD_PID" 2>/dev/null; }
  k delete flowschema,prioritylevelconfiguration "$level" --ignore-not-found >/dev/null 2>&1
  k delete clusterrolebinding "$user" --ignore-not-found >/dev/null 2>&1
  stop_operator
}
trap cleanup EXIT

echo "--- a user of its own on a priority level of one share"
pki=$VSCALER_CLUSTER_DIR/pki
(
  cd "$WORK_DIR"
  openssl req -newkey rsa:2048 -nodes -subj "/O=vscaler-e2e/CN=$user" -keyout user.key \
    -out user.csr 2>/dev/null
  printf 'extendedKeyUsage=clientAuth\n' >user.ext
  openssl x509 -req -in user.csr -CA "$pki/ca.crt" -CAkey "$pki/ca.key" -CAcreateserial \
    -CAserial "$WORK_DIR/ca.srl" -days 1 -extfile user.ext -out user.crt 2>/dev/null
)
throttled_kubeconfig=$WORK_DIR/kubeconfig
cat >"$throttled_kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters:
- name: local
  cluster:
    server: https://127.0.0.1:$(cat "$VSCALER_CLUSTER_DIR/apiserver.port")
    certificate-authority-data: $(base64 -w0 <"$pki/ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 <"$WORK_DIR/user.crt")
    client-key-data: $(base64 -w0 <"$WORK_DIR/user.key")
contexts:
- name: local
  context: {cluster: local, user: $user}
current-context: local
KC
k apply -f - >/dev/null <<YAML
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: $user}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: $user}]
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata: {name: $level}
spec:
  type: Limited
  limited:
    nominalConcurrencyShares: 1
    lendablePercent: 0
    borrowingLimitPercent: 0
    limitResponse: {type: Reject}
---
apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata: {name: $level}
spec:
  matchingPrecedence: 50
  priorityLevelConfiguration: {name: $level}
  distinguisherMethod: {type: ByUser}
  rules:
  - subjects: [{kind: User, user: {name: $user}}]
    resourceRules: [{verbs: ["*"], apiGroups: ["*"], resources: ["*"], namespaces: ["*"], clusterScope: true}]
    nonResourceRules: [{verbs: ["*"], nonResourceURLs: ["*"]}]
YAML
seats() { k get --raw /metrics | awk -v pl="priority_level=\"$level\"" 'index($0, "apiserver_flowcontrol_nominal_limit_seats{") == 1 && index($0, pl) {print $NF}'; }
has_seats() { [ -n "$(seats)" ]; }
eventually 30 has_seats
echo "ok: priority level $level has $(seats) seats"

ns=$(unique_namespace rel-throttle)
for i in $(seq 1 "$count"); do make_deployment "$ns" "d$i"; done

echo "--- the load, then the operator starts under it"
rm -f "$WORK_DIR/load.stop"
rk load "$WORK_DIR/user.crt" "$WORK_DIR/user.key" 5 "$WORK_DIR/load.stop" "$WORK_DIR/load.json" &
LOAD_PID=$!
sleep 1
REL_KUBECONFIG=$throttled_kubeconfig REL_START_SECONDS=150 rel_start_operator --resync-period 1h \
  --workers 4 --namespace "$ns"
scaler() { # NAME DEPLOYMENT CPU
  make_scaler "$ns" "$1" "$2" Reconcile "[{\"name\":\"app\",\"requests\":{\"cpu\":\"$3\"}}]"
}
for i in $(seq 1 "$count"); do scaler "s$i" "d$i" 250m; done
# Spec changes keep the operator busy (each one a reconcile: a GET, a PATCH, a status write)
# while the load lasts.
throttled() { grep -q 'TooManyRequests (429)' "$OPERATOR_LOG"; }
end=$((SECONDS + seconds))
changes=0
# (Until the operator met a 429, up to 20 s longer: without one the test proves nothing.)
while [ $SECONDS -lt $end ] || { ! throttled && [ $SECONDS -lt $((end + 20)) ]; }; do
  changes=$((changes + 1))
  scaler "s$((changes % count + 1))" "d$((changes % count + 1))" "$((200 + changes % 50))m"
done
echo "ok: $count scalers created, $changes spec changes made under the load"
touch "$WORK_DIR/load.stop"
wait "$LOAD_PID"
LOAD_PID=
echo "ok: load: $(cat "$WORK_DIR/load.json")"
wait_converged "$ns" 60
echo "ok: converged once the load stopped"

echo "--- Retry-After was honoured"
rejected=$(k get --raw /metrics | awk -v fs="flow_schema=\"$level\"" 'index($0, "apiserver_flowcontrol_rejected_requests_total{") == 1 && index($0, fs) {sum += $NF} END {printf "%d", sum}')
echo "ok: the API server rejected $rejected requests of $user"
python3 - "$OPERATOR_LOG" <<'PY' || fail "a Retry-After was not honoured"
import datetime, json, re, sys
def when(line):
    return datetime.datetime.strptime(line["ts"], "%Y-%m-%dT%H:%M:%S.%fZ").timestamp()
last = {}  # what failed -> (time, Retry-After seconds)
throttled = honoured = 0
bad = []
for text in open(sys.argv[1]):
    try:
        line = json.loads(text)
    except ValueError:
        continue
    if line.get("msg") == "reconcile failed; retrying with backoff":
        what = "scaler " + line.get("scaler", "")
    elif line.get("logger") == "main" and "retrying" in line.get("msg", ""):
        what = "start-up check"
    elif line.get("logger") == "kube.informer" and line.get("msg") in ("list failed", "watch failed; reconnecting"):
        what = "informer"
    else:
        continue
    now = when(line)
    if what in last and last[what][1] > 0:
        honoured += 1
        if now - last[what][0] < last[what][1]:
            bad.append("%s: next failure %.3fs after a Retry-After of %ds" % (what, now - last[what][0], last[what][1]))
    found = re.search(r"TooManyRequests \(429\).*\(retry after (\d+)s\)", line.get("error", ""))
    throttled += 1 if found else 0
    last[what] = (now, int(found.group(1)) if found else 0)
print("ok: %d throttled failures logged; %d next attempts checked against their Retry-After" % (throttled, honoured))
for b in bad:
    print("FAIL: " + b)
if throttled == 0:
    print("FAIL: the operator never met a 429; the test proves nothing")
sys.exit(1 if bad or throttled == 0 else 0)
PY
operator_alive || fail "the operator exited"
echo "PASS reliability_throttle_test"
