#!/usr/bin/env bash
# Issue 29: the health, metrics and dashboard ports are served as the webhook is (net/: no thread
# per connection), and the webhook's buffered bodies have one budget (--webhook-max-buffered-
# bytes, 64Mi).
#  1. 2,000 idle and 200 byte-a-second connections from 127.0.0.1, spread over the three plain
#     ports and reopened whenever vscaler cuts them, while /healthz is probed 10 times a second
#     from 127.0.0.2 (as the kubelet probes): every answer 200 within 100 ms (p50/p99 printed).
#     Before, 8 byte-a-second connections made 5 of 5 probes time out at 2 s.
#  2. 3,000 TLS connections to the webhook each sending 60 KiB of a head never finished: their
#     TLS buffers and heads count against a budget, so the peak RSS stays under 128 MiB (66 here;
#     400 MiB before they were counted) and some are refused with 503.
#  3. 100 concurrent 7 MiB POSTs on the webhook: the peak RSS of the process (VmHWM) stays under
#     128 MiB (the pod's limit is 256Mi; before, 512 MiB of bodies could be held), the rest are
#     refused with 503 before their bodies are read, and the webhook serves a review afterwards.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

install_crd
start_operator --resync-period 1h --namespace "ports-hostile-none"
health_port=${HEALTH_URL##*:}
metrics_port=${METRICS_URL#http://127.0.0.1:}
metrics_port=${metrics_port%/metrics}
dashboard_port=${DASHBOARD_URL##*:}

echo "--- 1. hostile connections on the health ($health_port), metrics ($metrics_port) and dashboard ($dashboard_port) ports"
python3 "$ROOT/test/tools/hostile_ports.py" probe "$HEALTH_URL/healthz" \
  "$health_port" "$metrics_port" "$dashboard_port" --idle 2000 --slow 200 --seconds 10 ||
  fail "a /healthz probe failed or took over 100 ms under hostile connections"
# Read whole, then searched: `curl | grep -q` under pipefail failed when grep stopped reading
# at its match before curl had written the rest (curl: (23)).
metrics=$(curl -fsS --max-time 2 "$METRICS_URL") && grep -q '^vscaler_health_open_connections' <<<"$metrics" ||
  fail "/metrics does not answer after the flood"
curl -fsS --max-time 2 "$DASHBOARD_URL/dashboard.json" >/dev/null || fail "/dashboard.json does not answer after the flood"
echo "vscaler: $(curl -fsS "$METRICS_URL" | awk '/^vscaler_(health|metrics|dashboard)_rejected_total/ { printf "%s ", $0 }')"
echo "ok: every probe answered within 100 ms; metrics and dashboard answer afterwards"

echo "--- 2. 3,000 connections holding 60 KiB heads never finished on the webhook ($WEBHOOK_PORT)"
out=$(python3 "$ROOT/test/tools/hostile_ports.py" heads "$WEBHOOK_PORT" "$OPERATOR_PID" --count 3000 \
  --head-kib 60 --max-rss-mib 128) || fail "$out"
echo "$out"
grep -q "'503': " <<<"$out" || fail "no head was refused with 503: the budget did not hold"

echo "--- 3. 100 concurrent 7 MiB POSTs on the webhook ($WEBHOOK_PORT)"
out=$(python3 "$ROOT/test/tools/hostile_ports.py" bodies "$WEBHOOK_PORT" "$OPERATOR_PID" --count 100 \
  --body-mib 7 --max-rss-mib 128) || fail "$out"
echo "$out"
grep -q "'503': " <<<"$out" || fail "no body was refused with 503: the budget did not hold"
review='{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","kind":{"group":"apps","version":"v1","kind":"Deployment"},"resource":{"group":"apps","version":"v1","resource":"deployments"},"namespace":"x","operation":"CREATE","userInfo":{"username":"someone"},"object":{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"x"},"spec":{"template":{"spec":{"containers":[{"name":"app"}]}}}}}}'
answer=$(curl -ksS --max-time 5 -H 'Content-Type: application/json' --data "$review" \
  "https://127.0.0.1:$WEBHOOK_PORT/mutate-deployments") || fail "the webhook does not answer after the POSTs"
grep -q '"allowed":true' <<<"$answer" || fail "the webhook's answer after the POSTs: $answer"
echo "ok: peak RSS under 128 MiB; the webhook answers a review afterwards"
echo "PASS"
