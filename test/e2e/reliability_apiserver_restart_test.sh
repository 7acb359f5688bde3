#!/usr/bin/env bash
# Issue 8: the API server is restarted RELIABILITY_RESTARTS times (2 here, 10 in `make soak`)
# while the Deployments of RELIABILITY_SCALERS scalers (100; half Auto, half Reconcile) are being
# edited. Throughout, the operator must keep running and keep answering /healthz and the webhook
# (probed directly every 0.5 s, and through the API server after each restart: an Auto-mode
# write is patched at admission); scalers changed right after each restart are applied; after
# the last restart every scaler converges within one resync period.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/reliability_lib.sh"
restarts=${RELIABILITY_RESTARTS:-2}
count=${RELIABILITY_SCALERS:-100}
resync=10

install_crd
cleanup() {
  reliability_cleanup
  unregister_webhook
  stop_operator
}
trap cleanup EXIT
register_webhook
ns=$(unique_namespace rel-restart)
rel_start_operator --resync-period "${resync}s" --workers 4 --namespace "$ns"
rk bulk "$ns" "$count" Auto,Reconcile
wait_converged "$ns" 120
echo "ok: $count scalers converged"

start_prober
start_editor "$ns" "$count" --reset-every 3
restart_seconds=0
for i in $(seq 1 "$restarts"); do
  sleep 2 # edits flow through the webhook and the reconciler
  start=$SECONDS
  "$ROOT/test/cluster/restart-apiserver.sh" >/dev/null
  restart_seconds=$((restart_seconds + SECONDS - start))
  operator_alive || fail "the operator exited during API server restart $i"
  # Scaler changes right after the restart reach the informer once its watch reconnects
  # (resumed, or relisted if its version is too old for the new watch cache).
  for j in $(seq $((i * 5 - 4)) $((i * 5))); do
    k -n "$ns" patch vsc "s$(((j - 1) % count + 1))" --type merge >/dev/null \
      -p '{"spec":{"containers":[{"name":"app","requests":{"cpu":"250m","memory":"96Mi"}}]}}'
  done
  eventually 30 admission_patches "$ns" d1
  echo "ok: restart $i: the operator runs; the API server calls its webhook again"
done
last_restart=$SECONDS
sleep 2 # a last burst of edits after the last restart
stop_editor
echo "ok: editor: $(editor_stat writes) writes ($(editor_stat resets) resets landed," \
  "$(editor_stat failed) refused, $(editor_stat uncertain) unanswered during the restarts)"
wait_converged "$ns" $((last_restart + resync * 11 / 10 + 10 - SECONDS))
echo "ok: every scaler converged $((SECONDS - last_restart))s after the last restart (resync ${resync}s)"
stop_prober
case "$PROBES" in
  *" failed=0") echo "ok: /healthz and the webhook answered every probe ($PROBES)" ;;
  *) fail "probes failed: $PROBES; $(cat "$WORK_DIR/prober.log")" ;;
esac
operator_alive || fail "the operator exited"
echo "ok: the operator survived $restarts API server restarts (${restart_seconds}s of restarting)"
echo "PASS reliability_apiserver_restart_test"
