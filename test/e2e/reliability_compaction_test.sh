#!/usr/bin/env bash
# Issue 8: an etcd compaction while the VerticalScaler watch is open, on a control plane of its
# own whose API server runs with --watch-cache=false (the watch cache would hide compactions).
#  1. A compaction under a live, caught-up watch: the watch goes on; later changes still arrive.
#  2. The operator is frozen (SIGSTOP) while its watch is cut (API server restart), scalers are
#     created, changed and deleted (and one created and deleted again), and etcd is compacted past
#     all of it; thawed, its watch resumes from a compacted revision, gets 410 Gone and relists.
#     None of those changes may be missed: each must show its effect on its Deployment.
# The resync is off (1h) and no webhook is registered: only the informer can see these changes.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/reliability_lib.sh"
n=${RELIABILITY_COMPACTION_SCALERS:-5}

WORK_DIR=$(mktemp -d /tmp/vscaler-e2e.XXXXXX)
export VSCALER_CLUSTER_DIR=$WORK_DIR/cluster
cleanup() {
  reliability_cleanup
  [ -n "${OPERATOR_PID:-}" ] && kill -CONT "$OPERATOR_PID" 2>/dev/null
  KEEP_LOGS=1 stop_operator
  "$ROOT/test/cluster/down.sh" >/dev/null 2>&1 || true
  [ -n "${KEEP_LOGS:-}" ] || rm -rf "$WORK_DIR"
}
trap cleanup EXIT
start=$SECONDS
VSCALER_APISERVER_ARGS=--watch-cache=false "$ROOT/test/cluster/up.sh" >/dev/null ||
  fail "the --watch-cache=false control plane did not start"
export KUBECONFIG=$VSCALER_CLUSTER_DIR/kubeconfig
echo "ok: a control plane with --watch-cache=false in $((SECONDS - start))s"

etcd=http://127.0.0.1:$(cat "$VSCALER_CLUSTER_DIR/etcd.port")
revision() {
  curl -fsS -X POST "$etcd/v3/kv/range" -d '{"key":"Lw==","limit":"1"}' |
    python3 -c 'import json,sys; print(json.load(sys.stdin)["header"]["revision"])'
}
# compact: compacts etcd up to its current revision; prints the revision.
compact() {
  local rev
  rev=$(revision)
  curl -fsS -X POST "$etcd/v3/kv/compaction" -d "{\"revision\":\"$rev\",\"physical\":true}" >/dev/null
  echo "$rev"
}

install_crd
ns=$(unique_namespace rel-compact)
rel_start_operator --resync-period 1h --workers 4 --namespace "$ns"
scaler() { # NAME DEPLOYMENT CPU
  make_scaler "$ns" "$1" "$2" Reconcile "[{\"name\":\"app\",\"requests\":{\"cpu\":\"$3\"}}]"
}
cpu() { jp "$ns" "deploy/$1" '{.spec.template.spec.containers[0].resources.requests.cpu}'; }
cpu_is() { [ "$(cpu "$1")" = "$2" ]; }

# Deployments: changed (m*), deleted (x*: two scalers, the older is deleted), created (c*),
# created and deleted again (z), and one scaler changed after a compaction under a live watch.
for i in $(seq 1 "$n"); do
  for d in m x c; do make_deployment "$ns" "d$d$i"; done
  scaler "m$i" "dm$i" 100m
  scaler "xa$i" "dx$i" 100m
done
make_deployment "$ns" dz
make_deployment "$ns" dlive
scaler live dlive 100m
sleep 1.1 # creationTimestamp has second precision: the xb* scalers are younger
for i in $(seq 1 "$n"); do scaler "xb$i" "dx$i" 300m; done
wait_converged "$ns" 60
echo "ok: set up: $n changed, $n deleted, $n created scalers to be, and a live one"

echo "--- 1. compaction under a live watch"
rev=$(compact)
scaler live dlive 150m
eventually 30 cpu_is dlive 150m
echo "ok: compacted at revision $rev; a later change still arrived over the same watch"
expect_eq "relists so far" "$(grep -c 'watch expired; relisting' "$OPERATOR_LOG" || true)" "0"

echo "--- 2. changes while the operator's watch is cut, then compacted away"
kill -STOP "$OPERATOR_PID"
"$ROOT/test/cluster/restart-apiserver.sh" >/dev/null
for i in $(seq 1 "$n"); do
  scaler "c$i" "dc$i" 200m
  scaler "m$i" "dm$i" 400m
  k -n "$ns" delete vsc "xa$i" >/dev/null
done
scaler z dz 500m
k -n "$ns" delete vsc z >/dev/null
rev=$(compact)
kill -CONT "$OPERATOR_PID"
echo "ok: $((3 * n + 2)) changes made while the operator was frozen; etcd compacted at revision $rev"

relisted() { grep -q 'watch expired; relisting' "$OPERATOR_LOG"; }
eventually 60 relisted
echo "ok: the informer's watch expired (410) and it relisted"
wait_converged "$ns" 60
for i in $(seq 1 "$n"); do
  expect_eq "created c$i applied" "$(cpu "dc$i")" 200m
  expect_eq "changed m$i applied" "$(cpu "dm$i")" 400m
  expect_eq "deleted xa$i: xb$i took over" "$(cpu "dx$i")" 300m
  expect_eq "xb$i Ready" "$(condition "$ns" "xb$i" Ready)" UpToDate
done
expect_eq "scaler created and deleted meanwhile: Deployment untouched" \
  "$(jp "$ns" deploy/dz '{.metadata.generation}'):$(cpu dz)" "1:"
operator_alive || fail "the operator exited"
echo "PASS reliability_compaction_test"
