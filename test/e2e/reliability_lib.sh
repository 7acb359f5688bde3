# shellcheck shell=bash
# shellcheck disable=SC2034  # PROBES, METRICS_URL, ...: set here for the tests and lib.sh's metric
# Helpers of the reliability end-to-end tests (sourced after lib.sh). Counts default to the short
# forms run by `make test`; `make soak` (test/soak.sh) raises them through the environment.
RELIABILITY_HELPER="$ROOT/test/e2e/reliability_kube.py"

# rk COMMAND ARGS...: reliability_kube.py against the control plane in $VSCALER_CLUSTER_DIR.
rk() { python3 "$RELIABILITY_HELPER" "$VSCALER_CLUSTER_DIR" "$@"; }

# converged NS: every scaler's Deployment carries the declared values and the scaler is Ready.
converged() { rk check "$1" >/dev/null; }

# wait_converged NS SECONDS: waits for converged, printing what is still wrong on timeout.
wait_converged() {
  local deadline=$((SECONDS + $2))
  until converged "$1"; do
    if [ $SECONDS -ge $deadline ]; then
      rk check "$1" >&2 || true
      fail "namespace $1 did not converge within $2 s"
    fi
    sleep 0.5
  done
}

# start_editor NS COUNT [OPTIONS...]: runs the edit loop in the background (EDITOR_PID,
# EDITOR_STOP, EDITOR_OUT); stop_editor stops it and waits for its summary.
start_editor() {
  local ns=$1 count=$2
  shift 2
  EDITOR_STOP=$WORK_DIR/editor.stop
  EDITOR_OUT=$WORK_DIR/editor.json
  rm -f "$EDITOR_STOP" "$EDITOR_OUT"
  rk edit "$ns" "$count" "$EDITOR_STOP" "$EDITOR_OUT" "$@" 2>>"$WORK_DIR/editor.log" &
  EDITOR_PID=$!
}
stop_editor() {
  [ -n "${EDITOR_PID:-}" ] || return 0
  touch "$EDITOR_STOP"
  wait "$EDITOR_PID" || fail "the editor failed (see $WORK_DIR/editor.log)"
  EDITOR_PID=
}
# editor_stat FIELD: a total of the last editor run (writes, resets, failed, uncertain).
editor_stat() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$EDITOR_OUT" "$1"; }

# check_generations NS BEFORE_JSON: every Deployment's generation rose by at most one per editor
# write plus one per reset that landed (a restore), plus two per write whose answer was lost.
# Prints "rollouts=N restores=N" for the report.
check_generations() {
  local after
  after=$(rk generations "$1")
  python3 - "$2" "$after" "$EDITOR_OUT" <<'PY'
import json, sys
before, after = json.loads(sys.argv[1]), json.loads(sys.argv[2])
stats = json.load(open(sys.argv[3]))["deployments"]
bad, rollouts, restores = [], 0, 0
for name, s in stats.items():
    delta = after[name] - before[name]
    allowed = s["writes"] + s["resets"] + 2 * s["uncertain"]
    rollouts += delta
    restores += max(0, delta - s["writes"])
    if delta > allowed:
        bad.append("%s: generation +%d, allowed +%d (%s)" % (name, delta, allowed, s))
for line in bad[:10]:
    print("FAIL: " + line)
print("rollouts=%d restores=%d" % (rollouts, restores))
sys.exit(1 if bad else 0)
PY
}

# operator_alive: the operator process still runs.
operator_alive() { process_alive "$OPERATOR_RECORD"; }

# healthz: the operator's /healthz answers 200.
healthz() { curl -fsS "$HEALTH_URL/healthz" >/dev/null; }

# webhook_answers: a direct AdmissionReview POST to the operator's webhook is answered with the
# request's uid.
webhook_answers() {
  local uid="rel-$RANDOM-$RANDOM"
  curl -fsS --max-time 5 --cacert "$CERT_DIR/tls.crt" -H 'Content-Type: application/json' \
    "https://127.0.0.1:$WEBHOOK_PORT/mutate-deployments" \
    -d "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"$uid\",
      \"kind\":{\"group\":\"apps\",\"version\":\"v1\",\"kind\":\"Deployment\"},
      \"resource\":{\"group\":\"apps\",\"version\":\"v1\",\"resource\":\"deployments\"},
      \"operation\":\"CREATE\",\"namespace\":\"none\",\"object\":{\"metadata\":{\"name\":\"x\"}}}}" |
    grep -q "\"uid\":\"$uid\""
}

# register_webhook: certificates and the url-based webhook configurations for $WEBHOOK_PORT
# (sets WORK_DIR, CERT_DIR, WEBHOOK_PORT when unset); unregister_webhook removes them.
register_webhook() {
  WORK_DIR=${WORK_DIR:-$(mktemp -d /tmp/vscaler-e2e.XXXXXX)}
  CERT_DIR=${CERT_DIR:-$WORK_DIR/certs}
  WEBHOOK_PORT=${WEBHOOK_PORT:-$(free_port)}
  "$ROOT/certs/install.sh" --local --port "$WEBHOOK_PORT" --cert-dir "$CERT_DIR" >/dev/null
}
unregister_webhook() { "$ROOT/certs/install.sh" --uninstall --local >/dev/null 2>&1 || true; }

# start_prober: checks /healthz and a direct webhook request every 0.5 s in the background
# (PROBER_PID); stop_prober stops it and sets PROBES="probes=N failed=N".
start_prober() {
  PROBER_STOP=$WORK_DIR/prober.stop
  rm -f "$PROBER_STOP"
  (
    probes=0 failed=0
    while [ ! -f "$PROBER_STOP" ]; do
      probes=$((probes + 1))
      if ! healthz || ! webhook_answers; then
        failed=$((failed + 1))
        echo "probe $probes failed at $(date +%T.%N)" >>"$WORK_DIR/prober.log"
      fi
      sleep 0.5
    done
    echo "probes=$probes failed=$failed" >"$WORK_DIR/prober.out"
  ) &
  PROBER_PID=$!
}
stop_prober() {
  [ -n "${PROBER_PID:-}" ] || return 0
  touch "$PROBER_STOP"
  wait "$PROBER_PID" || true
  PROBER_PID=
  PROBES=$(cat "$WORK_DIR/prober.out")
}

# admission_patches NS DEPLOYMENT: a write resetting the cpu request of container app is stored
# with the declared value (the API server called the Auto-mode webhook for that very write).
admission_patches() {
  local stored
  stored=$(k -n "$1" patch deploy "$2" --type strategic -o jsonpath='{.spec.template.spec.containers[0].resources.requests.cpu}' \
    -p '{"spec":{"template":{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"7m"}}}]}}}}' 2>/dev/null) &&
    [ "$stored" = 250m ]
}

# reliability_cleanup: stops what the helpers started (for trap EXIT). Call it first in a
# test's cleanup: it also turns errexit off, so one failing step does not skip the others.
reliability_cleanup() {
  set +e
  [ -n "${EDITOR_PID:-}" ] && { touch "$EDITOR_STOP"; wait "$EDITOR_PID" 2>/dev/null || true; }
  [ -n "${PROBER_PID:-}" ] && { touch "$PROBER_STOP"; wait "$PROBER_PID" 2>/dev/null || true; }
  return 0
}

# rel_start_operator FLAGS...: as lib.sh's start_operator (same variables: OPERATOR_PID,
# METRICS_URL, HEALTH_URL, OPERATOR_LOG; WORK_DIR, CERT_DIR and WEBHOOK_PORT kept when set, so it
# also restarts the operator), but leaves the EXIT trap alone: the tests' own `cleanup` stays in
# place even when the operator does not come up. REL_KUBECONFIG overrides the kubeconfig.
rel_start_operator() {
  : "${VSCALER_BIN:?run through test/run.sh (VSCALER_BIN unset)}"
  WORK_DIR=${WORK_DIR:-$(mktemp -d /tmp/vscaler-e2e.XXXXXX)}
  CERT_DIR=${CERT_DIR:-$WORK_DIR/certs}
  [ -f "$CERT_DIR/tls.crt" ] || self_signed_certs "$CERT_DIR"
  WEBHOOK_PORT=${WEBHOOK_PORT:-$(free_port)}
  local metrics_port health_port deadline
  # Not the webhook's port: it was free while the operator was down, and the kernel hands a
  # port just released out again (a SIGKILLed operator's metrics server once took it, and the
  # restart failed with "Address already in use").
  read -r metrics_port health_port < <(free_ports 2 "$WEBHOOK_PORT")
  METRICS_URL=http://127.0.0.1:$metrics_port/metrics
  HEALTH_URL=http://127.0.0.1:$health_port
  OPERATOR_LOG=$WORK_DIR/operator.log
  process_spawn "$OPERATOR_LOG" "$VSCALER_BIN" --kubeconfig "${REL_KUBECONFIG:-$KUBECONFIG}" \
    --webhook-port "$WEBHOOK_PORT" --cert-dir "$CERT_DIR" --metrics-addr "127.0.0.1:$metrics_port" \
    --health-addr "127.0.0.1:$health_port" --dashboard-addr "" "$@"
  OPERATOR_RECORD=$PROCESS_RECORD
  OPERATOR_PID=${OPERATOR_RECORD%% *}
  process_await "$OPERATOR_RECORD" "${REL_START_SECONDS:-60}" "the operator" "$OPERATOR_LOG" \
    curl -fsS "$HEALTH_URL/readyz" || fail "the operator did not become ready"
}
