#!/usr/bin/env bash
# scripts/process.sh, the helper every script that starts a server uses: a process is judged by
# its pid and start time, never by its command line. Needs no cluster.
#   1. a process that execs late (a shell that sleeps, then execs) is alive all along and its
#      readiness is awaited, not reported dead;
#   2. one that exits at once is reported dead with its exit status; one killed, with its signal;
#   3. a record whose start time is not the pid's (a reused pid) is not alive;
#   4. process_stop stops what was started whatever its command line, SIGKILL after the grace;
#   5. a detached process is its own session leader: $! is the command, not a setsid that forked,
#      also when the caller has job control on.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../scripts/process.sh
. "$root/scripts/process.sh"
work=$(mktemp -d /tmp/vscaler-process-test.XXXXXX)
records=()
cleanup() {
  local r
  for r in "${records[@]}"; do process_stop "$r" 1 >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  exit 1
}
ok() { echo "ok: $*"; }
spawn() {
  process_spawn "$work/log" "$@"
  records+=("$PROCESS_RECORD")
}
pid_of() { echo "${1%% *}"; }

# 1. Late exec: alive before and after the exec; awaited until ready.
spawn bash -c "sleep 1; touch '$work/ready'; exec sleep 30"
late=$PROCESS_RECORD
process_alive "$late" || fail "a process that has not exec'd yet is judged dead"
sleep 0.3
process_alive "$late" || fail "a sleeping shell about to exec is judged dead"
process_await "$late" 10 "late" "$work/log" test -e "$work/ready" 2>"$work/await.err" ||
  fail "awaiting a late exec failed: $(cat "$work/await.err")"
sleep 0.2
process_alive "$late" || fail "the exec'd process is judged dead"
grep -q '^sleep' <(tr '\0' ' ' <"/proc/$(pid_of "$late")/cmdline") || fail "the record's pid is not the exec'd command"
ok "a process that execs late is alive before and after, and awaited"

# 2. Exits at once: reported dead with its status; killed: with its signal.
# reported_dead NAME WANT COMMAND...: awaiting COMMAND's readiness fails, saying WANT.
reported_dead() {
  local name=$1 want=$2 rc=0
  shift 2
  spawn "$@"
  process_await "$PROCESS_RECORD" 10 "$name" "$work/log" false 2>"$work/await.err" || rc=$?
  [ "$rc" != 0 ] || fail "awaiting $name succeeded"
  grep -q "^$name exited before it was ready: pid [0-9]* $want$" "$work/await.err" ||
    fail "$name: '$want' is not said: $(cat "$work/await.err")"
  ok "$name is reported: $(head -n1 "$work/await.err")"
}
reported_dead quitter "exited with status 3" bash -c 'exit 3'
reported_dead victim "was killed by signal 9 (SIGKILL)" bash -c 'kill -KILL $$'

# A process that never gets ready: the timeout says it is alive.
spawn sleep 30
rc=0
process_await "$PROCESS_RECORD" 1 "sleeper" "$work/log" false 2>"$work/await.err" || rc=$?
[ "$rc" != 0 ] || fail "awaiting a readiness that never comes succeeded"
grep -q "^sleeper did not become ready within 1s: pid [0-9]* is alive" "$work/await.err" ||
  fail "the timeout does not say the process lives: $(cat "$work/await.err")"
ok "a timeout says the process is alive"

# 3. A reused pid: the right pid with another start time is not our process.
start=$(process_start_time $$)
process_alive "$$ $start" || fail "this shell is judged dead"
process_alive "$$ $((start + 1))" && fail "a record with another start time is judged alive"
process_alive "" && fail "an empty record is judged alive"
ok "a record is alive only with its own start time"

# 4. Stop: whatever the command line (exec -a renames it), and SIGKILL after the grace.
spawn bash -c 'exec -a something-else sleep 30'
renamed=$PROCESS_RECORD
sleep 0.2
process_stop "$renamed" 2 || fail "process_stop did not stop a renamed process"
process_alive "$renamed" && fail "a stopped process still runs"
[ ! -e "/proc/$(pid_of "$renamed")" ] || fail "a stopped process is left as a zombie"
process_stop "$renamed" 2 && fail "stopping a stopped process claims it ran"

spawn bash -c 'trap "" TERM; while :; do sleep 0.1; done'
ignores_term=$PROCESS_RECORD
sleep 0.2
before=$SECONDS
process_stop "$ignores_term" 1 || fail "process_stop did not stop a process ignoring SIGTERM"
process_alive "$ignores_term" && fail "a process ignoring SIGTERM still runs"
[ $((SECONDS - before)) -le 5 ] || fail "stopping took $((SECONDS - before)) s with a 1 s grace"
ok "process_stop stops what it started, SIGKILL after the grace"

# 5. Detached: the record's pid is the command itself, leading its own session.
session_of() { local s; s=$(cat "/proc/$1/stat"); s=${s##*) }; set -- $s; echo "$4"; }
PROCESS_DETACH=1 spawn sleep 30
pid=$(pid_of "$PROCESS_RECORD")
[ "$(session_of "$pid")" = "$pid" ] || fail "a detached process does not lead its own session"
process_stop "$PROCESS_RECORD" 2
(
  set -m
  PROCESS_DETACH=1 process_spawn "$work/log" sleep 30
  pid=$(pid_of "$PROCESS_RECORD")
  sleep 0.2
  process_alive "$PROCESS_RECORD" || fail "with job control, the detached record is dead (a forked setsid?)"
  grep -q '^sleep' <(tr '\0' ' ' <"/proc/$pid/cmdline") || fail "with job control, the pid is not the command"
  process_stop "$PROCESS_RECORD" 2
)
ok "a detached process is the recorded pid, with and without job control"
echo PASS
