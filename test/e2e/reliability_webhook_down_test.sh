#!/usr/bin/env bash
# Issue 8: the webhook unreachable for a while. The API server reaches the operator through a TCP
# proxy (reliability_proxy.py) registered as the webhook's URL, so the webhook can be made
# unreachable while the operator keeps running:
#  A. blackhole: connections accepted, never answered (a hung webhook: each write waits for the
#     configuration's timeoutSeconds, 2 s, then passes: failurePolicy Ignore);
#  B. port closed: connection refused (each write passes at once);
#  C. the operator itself stopped with SIGSTOP for a while, then continued.
# Every Deployment write must succeed; every change must be caught by the resync and counted in
# vscaler_resync_enqueued_total (A and B: at least one per change, and no hint at all; C: requests the
# API server gave up on may still be read from the socket buffers once the operator continues,
# so there a change is caught by the resync or by such a late hint).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
. "$here/reliability_lib.sh"
per_phase=${RELIABILITY_WEBHOOK_WRITES:-3}
resync=3

install_crd
cleanup() {
  reliability_cleanup
  [ -n "${OPERATOR_PID:-}" ] && kill -CONT "$OPERATOR_PID" 2>/dev/null
  unregister_webhook
  [ -n "${proxy_pid:-}" ] && kill "$proxy_pid" 2>/dev/null && wait "$proxy_pid" 2>/dev/null
  stop_operator
}
trap cleanup EXIT
WORK_DIR=$(mktemp -d /tmp/vscaler-e2e.XXXXXX)
CERT_DIR=$WORK_DIR/certs
WEBHOOK_PORT=$(free_port)
proxy_port=$(free_port)
mode_file=$WORK_DIR/proxy.mode
echo forward >"$mode_file"
python3 "$here/reliability_proxy.py" "$proxy_port" "$WEBHOOK_PORT" "$mode_file" 2>"$WORK_DIR/proxy.log" &
proxy_pid=$!
"$ROOT/certs/install.sh" --local --port "$proxy_port" --cert-dir "$CERT_DIR" >/dev/null
count=$((3 * per_phase + 1))
ns=$(unique_namespace rel-webhook-down)
rel_start_operator --resync-period "${resync}s" --workers 4 --namespace "$ns"

# proxy MODE: switches the proxy and waits until it has.
proxy() {
  echo "$1" >"$mode_file"
  local deadline=$((SECONDS + 10))
  until [ "$(cat "$mode_file.ack" 2>/dev/null)" = "$1" ]; do
    [ $SECONDS -lt $deadline ] || fail "the proxy did not switch to $1"
    sleep 0.05
  done
}
rk bulk "$ns" "$count" Reconcile
wait_converged "$ns" 60
reset() { # DEPLOYMENT: a user write resetting the cpu request; prints its duration in ms
  local start end
  start=$(date +%s%N)
  k -n "$ns" set resources deploy "$1" -c app --requests=cpu=5m >/dev/null ||
    fail "the write to $1 failed while the webhook was unreachable"
  end=$(date +%s%N)
  echo $(((end - start) / 1000000))
}
num() { metric "$1" | awk '{printf "%d", $1}'; }

echo "--- the hint path through the proxy works"
hinted=$(num vscaler_webhook_enqueued_total)
reset "d$count" >/dev/null
wait_converged "$ns" 10
[ "$(num vscaler_webhook_enqueued_total)" -gt "$hinted" ] || fail "no hint came through the proxy"
echo "ok: a reset was hinted and restored"

# phase NAME FIRST: per_phase resets of d<FIRST>.. with the webhook unreachable; checks every
# write passed and the resync (not a hint) caught each change exactly once.
phase() {
  local name=$1 first=$2 i ms durations="" resynced hinted
  resynced=$(num vscaler_resync_enqueued_total)
  hinted=$(num vscaler_webhook_enqueued_total)
  for i in $(seq "$first" $((first + per_phase - 1))); do
    ms=$(reset "d$i")
    durations="$durations ${ms}ms"
  done
  echo "ok: $per_phase writes passed with the webhook $name:$durations"
  wait_converged "$ns" $((resync * 22 / 10 + 5))
  # At least one per change; a pass that runs while a restore is still being written (its own
  # PATCH also waits for the unreachable webhook) counts that key once more.
  resynced=$(($(num vscaler_resync_enqueued_total) - resynced))
  [ "$resynced" -ge "$per_phase" ] || fail "vscaler_resync_enqueued_total rose by $resynced, want >= $per_phase"
  echo "ok: vscaler_resync_enqueued_total rose by $resynced for $per_phase changes"
  expect_eq "vscaler_webhook_enqueued_total increase ($name)" \
    "$(($(num vscaler_webhook_enqueued_total) - hinted))" "0"
}

echo "--- A. blackhole: the API server times out on each call (timeoutSeconds 2)"
proxy blackhole
phase "hung (blackhole)" 1
proxy forward

echo "--- B. the webhook's port closed: connection refused"
proxy closed
phase "port closed" $((per_phase + 1))
proxy forward

echo "--- C. the operator stopped with SIGSTOP, then continued"
resynced=$(num vscaler_resync_enqueued_total)
hinted=$(num vscaler_webhook_enqueued_total)
kill -STOP "$OPERATOR_PID"
durations=""
for i in $(seq $((2 * per_phase + 1)) $((3 * per_phase))); do durations="$durations $(reset "d$i")ms"; done
echo "ok: $per_phase writes passed with the operator stopped:$durations"
kill -CONT "$OPERATOR_PID"
wait_converged "$ns" $((resync * 22 / 10 + 5))
resynced=$(($(num vscaler_resync_enqueued_total) - resynced))
hinted=$(($(num vscaler_webhook_enqueued_total) - hinted))
[ $((resynced + hinted)) -ge "$per_phase" ] ||
  fail "only $resynced resync and $hinted late hint enqueues for $per_phase changes"
echo "ok: converged after SIGCONT: $resynced resync enqueues, $hinted hints (its own restoring writes, or requests read late)"
operator_alive || fail "the operator exited"
eventually 10 webhook_answers
echo "PASS reliability_webhook_down_test"
