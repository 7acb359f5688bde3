#!/usr/bin/env bash
# Issue 13: while a hostile local client (source address 127.0.0.2) holds 2,000 idle TLS
# connections and 200 requests sending a byte a second to vscaler's webhook port, Deployment
# writes through the API server (from 127.0.0.1) are still admitted and patched in Auto mode:
# none failed, none without the patch, and p99 under 100 ms: the API server's own timing of
# vscaler's webhook calls, and the writes' latency (on a machine whose API server alone takes
# longer than that, the writes' p99 may instead be at most 2 x + 50 ms what it was just before
# without the hostile client: the hostile client must not hold writes up).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
idle=${VSCALER_HOSTILE_IDLE:-2000}
slow=${VSCALER_HOSTILE_SLOW:-200}

install_crd
WORK_DIR=$(mktemp -d /tmp/vscaler-e2e.XXXXXX)
CERT_DIR=$WORK_DIR/certs
WEBHOOK_PORT=$(free_port)
"$ROOT/certs/install.sh" --local --port "$WEBHOOK_PORT" --cert-dir "$CERT_DIR" >/dev/null
start_operator --resync-period 1h --workers 4
hostile_pid=
cleanup() {
  if [ -n "$hostile_pid" ]; then
    kill "$hostile_pid" 2>/dev/null || true
    wait "$hostile_pid" 2>/dev/null || true
  fi
  if [ -n "${ns:-}" ]; then k delete namespace "$ns" --wait=false >/dev/null 2>&1 || true; fi
  "$ROOT/certs/install.sh" --uninstall --local >/dev/null 2>&1 || true
  stop_operator
}
trap cleanup EXIT
# shellcheck source=test/tools/webhook_e2e_lib.sh
. "$ROOT/test/tools/webhook_e2e_lib.sh"

ns=$(unique_namespace hostile)
python3 "$ROOT/test/tools/webhook_writes.py" setup "$VSCALER_CLUSTER_DIR" "$ns" 20 250m || fail "setup"

writes() { python3 "$ROOT/test/tools/webhook_writes.py" paced "$VSCALER_CLUSTER_DIR" "$ns" 20 250m "$1"; }
p99_of() { sed -n 's/.* p99_ms=\([0-9.]*\).*/\1/p' <<<"$1"; }
echo "--- Deployment writes without a hostile client, 4 at a time for 5 s (the baseline)"
out=$(writes 5) || fail "baseline writes: $out"
echo "$out"
baseline=$(p99_of "$out")

echo "--- a hostile client on 127.0.0.2: $idle idle TLS connections, $slow byte-a-second requests"
python3 "$ROOT/test/tools/webhook_hostile.py" "$WEBHOOK_PORT" 127.0.0.2 "$idle" "$slow" 120 \
  "$WORK_DIR/hostile.ready" >"$WORK_DIR/hostile.log" 2>&1 &
hostile_pid=$!
hostile_ready() { [ -f "$WORK_DIR/hostile.ready" ]; }
eventually 90 hostile_ready
tail -n 1 "$WORK_DIR/hostile.log"
# The client is ready once its idle connections are held; its slow ones open after them.
enough_open() {
  open=$(metric vscaler_webhook_open_connections)
  awk -v o="$open" -v want=$((idle + slow / 2)) 'BEGIN { exit !(o >= want) }'
}
open=0
deadline=$((SECONDS + 20))
until enough_open; do
  [ $SECONDS -lt $deadline ] ||
    fail "only $open connections open: the hostile client did not get to hold its connections"
  sleep 0.2
done
echo "vscaler: $open connections open"

echo "--- Deployment writes through the API server meanwhile, 4 at a time for 15 s"
read -r within_before calls_before <<<"$(webhook_calls_within 0.1)"
out=$(writes 15) || fail "writes: $out"
echo "$out"
read -r within_after calls_after <<<"$(webhook_calls_within 0.1)"
tail -n 1 "$WORK_DIR/hostile.log"
echo "ok: none failed, none lost the patch"
calls=$((calls_after - calls_before))
slow_calls=$((calls - (within_after - within_before)))
[ "$calls" -gt 0 ] || fail "the API server made no webhook call"
echo "the API server timed $calls webhook calls, $slow_calls over 100 ms"
[ $((slow_calls * 100)) -le "$calls" ] || fail "webhook call p99 over 100 ms: $slow_calls of $calls"
echo "ok: webhook call p99 < 100 ms (API server's timing)"
p99=$(p99_of "$out")
# The writes' p99 is the API server's and etcd's, on the 2 cores the hostile client's 2,200 TLS
# connections also use: a fresh-clone run (stop 40) had 119.9 ms against a 48.2 ms baseline while
# the API server timed 1 of its 1,200 webhook calls over 100 ms. The webhook's own share is the
# check above; this one catches a hostile client that holds writes up (timeouts are 2 s).
awk -v p="$p99" -v b="$baseline" 'BEGIN { exit !(p < 100 || p <= 2 * b + 50) }' ||
  fail "write p99 ${p99} ms, want < 100 ms (or <= 2 x + 50 ms the baseline ${baseline} ms)"
echo "ok: write p99 ${p99} ms (baseline without the hostile client ${baseline} ms)"
echo "vscaler: rejected $(curl -fsS "$METRICS_URL" | awk '/^vscaler_webhook_rejected_total/ { printf "%s ", $0 }')"
kill "$hostile_pid" 2>/dev/null || true # it would stop by itself at 120 s
wait "$hostile_pid" 2>/dev/null || true
hostile_pid=
echo "PASS"
