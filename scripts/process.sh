# shellcheck shell=bash
# Starting, watching and stopping background processes exactly (sourced, never run): the one
# helper every script that starts a server uses (test/cluster/, test/e2e/, scripts/demo.sh,
# bench/).
#
# A process is tracked by a record "PID STARTTIME": its pid and the kernel's start time of that
# pid (field 22 of /proc/PID/stat, clock ticks since boot). The start time is fixed at fork and
# survives exec, so the record names the process from the instant `&` returns — before it has
# exec'd its binary — and never a later process that reuses the pid. Nothing here reads the
# command line: between fork and exec it is still the shell's (a check "does the cmdline name
# the binary" judged a live kube-apiserver dead on a loaded machine: issue 33).

# process_start_time PID: the start time of PID (empty and false when there is no such process).
process_start_time() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  # Field 2 (the command name) may hold spaces and parentheses: count from the last ')'.
  stat=${stat##*) }
  # shellcheck disable=SC2086 # split on purpose: the fields after the name
  set -- $stat
  [ -n "${20:-}" ] || return 1
  echo "${20}"
}

# process_spawn LOG COMMAND...: runs COMMAND in the background, stdout and stderr appended to LOG
# (stdin /dev/null), and sets PROCESS_RECORD. COMMAND is exec'd by the forked shell, so the pid
# is the command's own; PROCESS_DETACH=1 runs it in a session of its own (setsid), so a
# terminal's Ctrl-C or make's signals do not reach a server meant to outlive its script.
process_spawn() {
  local log=$1 pid start
  shift
  if [ "${PROCESS_DETACH:-0}" = 1 ]; then
    # setsid(1) forks when the caller is a process-group leader, and then $! would be a wrapper
    # that exits at once. A background child is a group leader only under job control (set -m);
    # there it already has a group of its own, so the detach is done without setsid.
    case $- in
      *m*) "$@" >>"$log" 2>&1 </dev/null & ;;
      *) setsid "$@" >>"$log" 2>&1 </dev/null & ;;
    esac
  else
    "$@" >>"$log" 2>&1 </dev/null &
  fi
  pid=$!
  # The child exists from fork on (a zombie at worst until this shell reaps it); a child that
  # already exited and was reaped has no start time, and its record is dead from the start.
  start=$(process_start_time "$pid") || start=gone
  PROCESS_RECORD="$pid $start"
}

# process_alive RECORD: true when the recorded process runs (not a zombie) and is the one the
# record was made for (same start time).
process_alive() {
  local pid start stat state
  read -r pid start <<<"$1"
  [ -n "$pid" ] && [ -n "$start" ] || return 1
  stat=$(cat "/proc/$pid/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  # shellcheck disable=SC2086
  set -- $stat
  state=$1
  [ "$state" != Z ] && [ "$state" != X ] && [ "${20:-}" = "$start" ]
}

# process_describe RECORD: one line saying what the kernel knows of the recorded process: its
# exit status or signal (when it was a child of this shell), its state, pid and command line.
# Call it in the shell that started the process, not in $(...): a subshell cannot wait for it.
process_describe() {
  local pid start now status cmdline state
  read -r pid start <<<"$1"
  if process_alive "$1"; then
    state=$(awk '/^State:/ {print $2, $3}' "/proc/$pid/status" 2>/dev/null)
    cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | cut -c1-200)
    echo "pid $pid is alive (state $state; command line: ${cmdline:-none yet})"
    return 0
  fi
  now=$(process_start_time "$pid") || now=""
  if [ -n "$now" ] && [ "$now" != "$start" ]; then
    echo "pid $pid exited; the pid now belongs to another process (started at tick $now, ours at $start)"
    return 0
  fi
  # A child of this shell that is gone (or a zombie): wait returns its status at once.
  wait "$pid" 2>/dev/null && status=0 || status=$?
  if [ "$status" = 127 ] && ! [ -e "/proc/$pid" ]; then
    echo "pid $pid is gone (not a child of this shell: no exit status to read)"
  elif [ "$status" -gt 128 ]; then
    echo "pid $pid was killed by signal $((status - 128)) (SIG$(kill -l $((status - 128)) 2>/dev/null))"
  else
    echo "pid $pid exited with status $status"
  fi
}

# process_stop RECORD [GRACE_SECONDS]: SIGTERM to the recorded process, up to GRACE (default 15)
# seconds for it to exit, then SIGKILL; whatever its command line says. False when it was not
# running.
process_stop() {
  local pid start grace=${2:-15} _
  read -r pid start <<<"$1"
  process_alive "$1" || return 1
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 $((grace * 10))); do
    process_alive "$1" || break
    sleep 0.1
  done
  if process_alive "$1"; then
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
      process_alive "$1" || break
      sleep 0.1
    done
  fi
  # Reap it when it is ours, so no zombie is left behind (never wait on one still running).
  process_alive "$1" || wait "$pid" 2>/dev/null || true
  return 0
}

# process_await RECORD SECONDS WHAT LOG COMMAND...: polls COMMAND (every 0.2 s) until it
# succeeds. Fails, saying why on stderr with the tail of LOG, when the process is gone first or
# after SECONDS.
process_await() {
  local record=$1 seconds=$2 what=$3 log=$4 deadline
  shift 4
  deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if ! process_alive "$record"; then
      # The probe may have raced the last moments of a successful start: ask once more.
      "$@" >/dev/null 2>&1 && return 0
      # Not in $(...): a subshell cannot wait for this shell's children, and their exit
      # status is what says why. Described into a file first, with this shell's stderr
      # silenced: bash reports a child killed by a signal ("line N: PID Killed ...") when it
      # reaps it, which would land in the middle of the line.
      local described
      described=$(mktemp)
      { process_describe "$record" >"$described"; } 2>/dev/null
      { printf '%s exited before it was ready: %s\n' "$what" "$(cat "$described")"
        echo "last lines of $log:"; tail -n 30 "$log" 2>/dev/null; } >&2
      rm -f "$described"
      return 1
    fi
    if [ $SECONDS -ge $deadline ]; then
      { printf '%s did not become ready within %ss: ' "$what" "$seconds"; process_describe "$record"
        echo "last lines of $log:"; tail -n 30 "$log" 2>/dev/null; } >&2
      return 1
    fi
    sleep 0.2
  done
}

# free_ports N [TAKEN...]: N distinct free TCP ports on 127.0.0.1, on one line, none of them one
# of TAKEN. The sockets are held together until all are picked, so the N differ; TAKEN names ports
# the caller holds for a process that is not running now (an operator's webhook port across a
# restart): the kernel would hand them out again, and the two servers would clash at start.
free_ports() {
  python3 - "$@" <<'PY'
import socket, sys
want, taken = int(sys.argv[1]), {int(p) for p in sys.argv[2:] if p}
socks, ports = [], []
while len(ports) < want:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    socks.append(s)
    port = s.getsockname()[1]
    if port not in taken:
        ports.append(port)
print(" ".join(str(p) for p in ports))
PY
}
