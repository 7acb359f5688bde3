#!/usr/bin/env bash
# Issue 8: the operator is SIGKILLed at random moments (RELIABILITY_KILLS times: 5 here, 20 in
# `make soak`) while an editor keeps writing the Deployments of RELIABILITY_KILL_SCALERS scalers
# (30; half Auto, half Reconcile; webhook registered), and restarted each time. Everything must
# converge, and each Deployment's generation may rise by at most one per editor write plus one
# per reset that landed (a needed restore): no rollout beyond one per needed change.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/reliability_lib.sh"
kills=${RELIABILITY_KILLS:-5}
count=${RELIABILITY_KILL_SCALERS:-30}
resync=5

install_crd
register_webhook
cleanup() {
  reliability_cleanup
  unregister_webhook
  stop_operator
}
trap cleanup EXIT
ns=$(unique_namespace rel-kill)
rel_start_operator --resync-period "${resync}s" --workers 4 --namespace "$ns"
rk bulk "$ns" "$count" Auto,Reconcile
wait_converged "$ns" 60
echo "ok: $count scalers converged"
before=$(rk generations "$ns")

# random_sleep MAX_TENTHS: sleeps 0..MAX_TENTHS tenths of a second.
random_sleep() { sleep "$(awk -v r="$RANDOM" -v m="$1" 'BEGIN {printf "%.1f", (r % (m + 1)) / 10}')"; }

start_editor "$ns" "$count" --reset-every 3 --interval 0.01
for i in $(seq 1 "$kills"); do
  # Odd kills come at once after readiness (startup relist and reconcile burst), even ones later.
  if [ $((i % 2)) = 1 ]; then random_sleep 5; else random_sleep 30; fi
  kill -KILL "$OPERATOR_PID"
  wait "$OPERATOR_PID" 2>/dev/null || true
  random_sleep 10 # edits land while nothing answers the webhook (failurePolicy Ignore)
  rel_start_operator --resync-period "${resync}s" --workers 4 --namespace "$ns"
  echo "ok: kill $i: restarted"
done
sleep 2
stop_editor
echo "ok: editor: $(editor_stat writes) writes ($(editor_stat resets) resets landed," \
  "$(editor_stat failed) refused, $(editor_stat uncertain) unanswered)"
[ "$(editor_stat failed)" = 0 ] || fail "Deployment writes failed while the operator was down"
wait_converged "$ns" $((resync * 11 / 10 + 10))
echo "ok: every scaler converged"
generations=$(check_generations "$ns" "$before") || fail "$generations"
echo "ok: generations: $generations (editor writes: $(editor_stat writes))"
echo "ok: the operator survived $kills SIGKILLs"
echo "PASS reliability_kill_test"
