#!/usr/bin/env bash
# Issue 16 (DESIGN.md "High availability"): two vscaler processes with --leader-elect on one Lease
# (in a namespace of the test's own), each on its own webhook, metrics and health ports, client-go
# timings (15 s lease, 10 s renew deadline, 2 s retry), a 1 s resync, no webhook registered (so
# only the resync can catch a Deployment edit).
#  1. exactly one holds the Lease; only its resync runs and enqueues (vscaler_leader_steps_total,
#     vscaler_resync_enqueued_total), the other's skips;
#  2. SIGKILL of the leader: the other leads within 25 s and its resync restores an edit made
#     meanwhile (vscaler_resync_corrections_total);
#  3. SIGTERM of the leader: it releases the Lease and the other leads within 5 s;
#  4. SIGSTOP of the leader for 20 s: the other takes over; after SIGCONT the old one starts no
#     leader step (its "started" count stays, "skipped" rises, its log says so) and follows;
#  5. the webhook registered to the follower: it takes the hint and reconciles it;
#  6. the API server restarted under both: they converge to one leader, and an edit made after
#     the restart is restored.
# Prints the three takeover times.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
: "${VSCALER_BIN:?run through test/run.sh (VSCALER_BIN unset)}"
WORK_DIR=$(mktemp -d /tmp/vscaler-e2e-leader.XXXXXX)
CERT_DIR=$WORK_DIR/certs
"$ROOT/certs/generate.sh" --cert-dir "$CERT_DIR" >/dev/null # CA-signed: step 5 registers it
declare -A PID METRICS HEALTH LOG WEBHOOK
starts=0

install_crd
ns=$(unique_namespace leader)
lease_ns=$(unique_namespace leader-lease)

cleanup() {
  set +e
  local name
  for name in "${!PID[@]}"; do
    kill -CONT "${PID[$name]}" 2>/dev/null
    kill -TERM "${PID[$name]}" 2>/dev/null
    wait "${PID[$name]}" 2>/dev/null
  done
  "$ROOT/certs/install.sh" --uninstall --local >/dev/null 2>&1
  k delete namespace "$ns" "$lease_ns" --wait=false >/dev/null 2>&1
  if [ -n "${KEEP_LOGS:-}" ]; then echo "logs kept in $WORK_DIR"; else rm -rf "$WORK_DIR"; fi
}
trap cleanup EXIT

# start_replica NAME: one vscaler process on fresh ports, with a log of its own; waits for /readyz.
start_replica() {
  local name=$1 metrics_port health_port webhook_port deadline
  read -r metrics_port health_port webhook_port < <(free_ports 3)
  METRICS[$name]=http://127.0.0.1:$metrics_port/metrics
  HEALTH[$name]=http://127.0.0.1:$health_port
  starts=$((starts + 1))
  LOG[$name]=$WORK_DIR/$name-$starts.log
  WEBHOOK[$name]=$webhook_port
  process_spawn "${LOG[$name]}" "$VSCALER_BIN" --kubeconfig "$KUBECONFIG" --webhook-port "${WEBHOOK[$name]}" \
    --cert-dir "$CERT_DIR" --metrics-addr "127.0.0.1:$metrics_port" --health-addr "127.0.0.1:$health_port" --dashboard-addr "" \
    --namespace "$ns" --resync-period 1s --leader-elect --leader-election-namespace "$lease_ns"
  PID[$name]=${PROCESS_RECORD%% *}
  process_await "$PROCESS_RECORD" 60 "replica $name" "${LOG[$name]}" curl -fsS "${HEALTH[$name]}/readyz" ||
    fail "replica $name did not become ready"
}

# m NAME SERIES: one series of a replica's metrics (0 when absent).
m() {
  curl -fsS "${METRICS[$1]}" | awk -v name="$2" '$1 == name {print $2; found=1} END {if (!found) print 0}'
}
leads() { [ "$(m "$1" 'leader_election_master_status{name="vscaler"}')" = 1 ]; }
started() { m "$1" 'vscaler_leader_steps_total{step="resync",result="started"}'; }
skipped() { m "$1" 'vscaler_leader_steps_total{step="resync",result="skipped"}'; }
identity() { grep -m1 '"taking part in leader election"' "${LOG[$1]}" | sed 's/.*"identity":"\([^"]*\)".*/\1/'; }
# logged NAME MESSAGE: how many times the replica logged MESSAGE.
logged() { grep -c "\"msg\":\"$2\"" "${LOG[$1]}" || true; }
holder() { jp "$lease_ns" lease/vscaler '{.spec.holderIdentity}'; }
held() { [ -n "$(holder)" ]; }
cpu() { jp "$ns" deploy/web '{.spec.template.spec.containers[0].resources.requests.cpu}'; }
drift() {
  k -n "$ns" patch deploy web --type strategic >/dev/null \
    -p '{"spec":{"template":{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":"7m"}}}]}}}}'
}
now() { echo "$EPOCHREALTIME"; }
since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN {printf "%.1f", b - a}'; }
# wait_leader NAME SECONDS: NAME reports leading within SECONDS.
wait_leader() { eventually "$2" leads "$1"; }
# Conditions for `eventually`, which runs its command again each time (a "$(...)" in its
# arguments would be expanded only once).
restored() { [ "$(cpu)" = 250m ]; }
moved() { [ "$(m "$1" "$2")" != "$3" ]; }
one_leader() { [ "$(curl -fsS "${METRICS[a]}" "${METRICS[b]}" | grep -c '^leader_election_master_status{name="vscaler"} 1')" = 1 ]; }

make_deployment "$ns" web
make_scaler "$ns" web web Reconcile '[{"name":"app","requests":{"cpu":"250m"}}]'
start_replica a
start_replica b
eventually 30 restored
echo "ok: the scaler is applied"

echo "--- 1. exactly one leads; only its resync runs"
eventually 20 one_leader
if leads a; then leader=a follower=b; else leader=b follower=a; fi
expect_eq "Lease holder" "$(holder)" "$(identity $leader)"
enq_leader=$(m $leader vscaler_resync_enqueued_total)
drift
eventually 20 restored
eventually 10 moved $leader vscaler_resync_enqueued_total "$enq_leader"
echo "ok: the leader's resync restored an edit (enqueued $enq_leader -> $(m $leader vscaler_resync_enqueued_total))"
expect_eq "the follower's vscaler_resync_enqueued_total" "$(m $follower vscaler_resync_enqueued_total)" 0
expect_eq "resync passes the follower started" "$(started $follower)" 0
eventually 10 moved $follower 'vscaler_leader_steps_total{step="resync",result="skipped"}' 0
[ "$(started $leader)" != 0 ] || fail "the leader started no resync pass"
echo "ok: resync passes: leader started $(started $leader), follower skipped $(skipped $follower)"

echo "--- 2. SIGKILL of the leader ($leader)"
kill -KILL "${PID[$leader]}"
t=$(now)
wait "${PID[$leader]}" 2>/dev/null || true
unset "PID[$leader]"
drift # made while nobody leads; no webhook: only the next leader's resync can see it
wait_leader $follower 25
kill_takeover=$(since "$t")
expect_eq "Lease holder" "$(holder)" "$(identity $follower)"
eventually 10 restored
[ "$(m $follower vscaler_resync_corrections_total)" != 0 ] || fail "the new leader's resync corrected nothing"
echo "ok: $follower leads ${kill_takeover} s after the SIGKILL; its resync restored the edit made meanwhile"
old=$leader leader=$follower follower=$old
start_replica $follower # the killed one comes back, as follower
leads $follower && fail "the restarted replica leads while $leader holds the Lease"

echo "--- 3. SIGTERM of the leader ($leader)"
kill -TERM "${PID[$leader]}"
t=$(now)
wait_leader $follower 5
term_takeover=$(since "$t")
wait "${PID[$leader]}" || fail "the SIGTERMed leader exited with $?"
unset "PID[$leader]"
grep -q '"released the lease"' "${LOG[$leader]}" || fail "the SIGTERMed leader did not release the Lease"
expect_eq "Lease holder" "$(holder)" "$(identity $follower)"
echo "ok: $follower leads ${term_takeover} s after the SIGTERM (the Lease was released)"
old=$leader leader=$follower follower=$old
start_replica $follower

echo "--- 4. SIGSTOP of the leader ($leader) for 20 s"
eventually 10 moved $leader 'vscaler_leader_steps_total{step="resync",result="started"}' 0
skipped_before=$(skipped $leader)
skip_logs=$(logged $leader 'leader step skipped: not leading')
stop_logs=$(logged $leader 'stopped leading')
kill -STOP "${PID[$leader]}"
t=$(now)
stopped_at=$EPOCHREALTIME
wait_leader $follower 25
stop_takeover=$(since "$t")
expect_eq "Lease holder" "$(holder)" "$(identity $follower)"
echo "ok: $follower leads ${stop_takeover} s after the SIGSTOP"
sleep "$(awk -v t="$stop_takeover" 'BEGIN {s = 20 - t; print (s > 0 ? s : 0)}')"
kill -CONT "${PID[$leader]}"
eventually 10 moved $leader 'leader_election_master_status{name="vscaler"}' 1
eventually 10 moved $leader 'vscaler_leader_steps_total{step="resync",result="skipped"}' "$skipped_before"
sleep 2 # a few more of its resync periods
# A pass may start between any read before the SIGSTOP and the signal, so a count cannot tell;
# the time of the last start can: it must be before the freeze.
last_start=$(m $leader 'vscaler_leader_step_last_started_timestamp_seconds{step="resync"}')
awk -v a="$last_start" -v b="$stopped_at" 'BEGIN {exit !(a + 0 < b + 0)}' ||
  fail "the resumed replica started a resync pass at $last_start, after the SIGSTOP at $stopped_at"
[ "$(logged $leader 'leader step skipped: not leading')" -gt "$skip_logs" ] ||
  fail "no 'leader step skipped' in the resumed replica's log"
[ "$(logged $leader 'stopped leading')" -gt "$stop_logs" ] ||
  fail "the resumed replica did not log that it stopped leading"
grep '"stopped leading"' "${LOG[$leader]}" | tail -n 1
expect_eq "Lease holder" "$(holder)" "$(identity $follower)"
leads $follower || fail "the new leader lost the Lease"
echo "ok: after SIGCONT $leader started no leader step (skipped $skipped_before -> $(skipped $leader)) and follows"
old=$leader leader=$follower follower=$old

echo "--- 5. the webhook calls the follower ($follower): it reconciles the hint"
"$ROOT/certs/install.sh" --local --port "${WEBHOOK[$follower]}" --cert-dir "$CERT_DIR" >"$WORK_DIR/install.log" 2>&1 ||
  fail "certs/install.sh --local failed: $(cat "$WORK_DIR/install.log")"
leads $follower && fail "$follower leads; step 5 needs the follower"
hints=$(m $follower vscaler_webhook_enqueued_total)
reconciles=$(m $follower 'controller_runtime_reconcile_total{controller="verticalscaler",result="success"}')
patches=$(logged $follower 'patched deployment')
drift
eventually 10 moved $follower vscaler_webhook_enqueued_total "$hints"
eventually 10 moved $follower 'controller_runtime_reconcile_total{controller="verticalscaler",result="success"}' "$reconciles"
eventually 10 restored
by=$leader
[ "$(logged $follower 'patched deployment')" -gt "$patches" ] && by=$follower
echo "ok: the follower took the hint ($hints -> $(m $follower vscaler_webhook_enqueued_total)) and reconciled it; restored by $by"

echo "--- 6. the API server restarts under both"
"$ROOT/test/cluster/restart-apiserver.sh" >/dev/null
t=$(now)
eventually 30 one_leader
if leads a; then leader=a follower=b; else leader=b follower=a; fi
eventually 10 held
expect_eq "Lease holder after the restart" "$(holder)" "$(identity $leader)"
drift
eventually 20 restored
echo "ok: one leader ($leader) $(since "$t") s after the API server was back; an edit made then was restored"

echo "takeover: SIGKILL ${kill_takeover} s, SIGTERM ${term_takeover} s, SIGSTOP ${stop_takeover} s"
echo "PASS leader_election_test"
