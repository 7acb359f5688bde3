#!/usr/bin/env bash
# test/cluster/ on bad input and faults: a second up.sh on a running cluster says so and changes
# nothing; bad VSCALER_* values are refused naming the variable; a component that does not start
# (kube-apiserver on the minimal plane, metrics-server on the full one) is named in one line with
# the tail of its log, and nothing that up.sh started is left running;
# build.sh needs Go only when something must be built. Runs on any plane (it uses the one it is
# given only for the second up.sh) and starts its own broken clusters in private directories.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
: "${VSCALER_CLUSTER_DIR:?run through test/run.sh (VSCALER_CLUSTER_DIR unset)}"
up=$ROOT/test/cluster/up.sh
work=$(mktemp -d /tmp/vscaler-faults.XXXXXX)
trap 'VSCALER_CLUSTER_DIR=$work/cluster "$ROOT/test/cluster/down.sh" >/dev/null 2>&1; rm -rf "$work"' EXIT

# 1. A second up.sh: "already running", the same processes, exit 0.
pids_before=$(cat "$VSCALER_CLUSTER_DIR"/*.pid | sort)
out=$("$up" 2>&1) || fail "a second up.sh failed: $out"
grep -q "is already running in $VSCALER_CLUSTER_DIR" <<<"$out" || fail "a second up.sh did not say it runs: $out"
expect_eq "processes after a second up.sh" "$(cat "$VSCALER_CLUSTER_DIR"/*.pid | sort | tr '\n' ' ')" \
  "$(tr '\n' ' ' <<<"$pids_before")"

# 2. Bad input is refused before anything starts, naming the variable.
# refused VAR=VALUE MESSAGE: up.sh with that setting exits 2 saying MESSAGE.
refused() {
  local out rc=0
  out=$(env "$1" VSCALER_CLUSTER_DIR="$work/cluster" "$up" 2>&1) || rc=$?
  expect_eq "exit code of up.sh with $1" "$rc" "2"
  grep -qF "$2" <<<"$out" || fail "up.sh with $1 said '$out', want '$2'"
  [ ! -e "$work/cluster" ] || fail "up.sh with $1 created $work/cluster"
}
refused VSCALER_NODES=three "VSCALER_NODES must be a whole number from 1 to 4096, not 'three'"
refused VSCALER_NODES=0 "VSCALER_NODES must be a whole number"
refused VSCALER_CLUSTER=huge "VSCALER_CLUSTER must be full or minimal, not 'huge'"
refused VSCALER_NODE_PODS=-1 "VSCALER_NODE_PODS must be a whole number"

# 3. A component that does not start: kube-apiserver with a flag it does not know.
rc=0
out=$(VSCALER_CLUSTER=minimal VSCALER_CLUSTER_DIR=$work/cluster VSCALER_APISERVER_ARGS=--no-such-flag \
  "$up" 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "up.sh with a broken kube-apiserver succeeded"
# failure_named COMPONENT: the first failure line names COMPONENT and what the kernel says of
# its process (an exit status: it was judged by its pid and start time, not by a command line),
# and the next line introduces its log's tail.
failure_named() {
  local first
  first=$(grep -m1 '^test/cluster:' <<<"$out")
  [[ "$first" =~ ^test/cluster:\ $1\ exited\ before\ it\ was\ ready:\ pid\ [0-9]+\ exited\ with\ status\ [1-9][0-9]*$ ]] ||
    fail "the failure line is '$first'"
  grep -qxF "last lines of $work/cluster/$1.log:" <<<"$out" || fail "no log tail for $1: $out"
  echo "ok: the failure line: $first"
}
failure_named kube-apiserver
grep -q 'unknown flag: --no-such-flag' <<<"$out" || fail "the log's tail does not show the cause: $out"
[ "$(grep -c '^test/cluster:' <<<"$out")" = 1 ] || fail "more than one failure line (no retry for a bad flag): $out"
left=$(pgrep -f -- "$work/cluster" || true)
[ -z "$left" ] || fail "processes of the failed cluster still run: $(ps -o pid,args -p "${left//$'\n'/,}")"
echo "ok: a failed start leaves nothing running"

# 4. On the full plane, a component started after the API server fails: it is named, and
# everything started before it (etcd, kube-apiserver, the controllers, kwok) is stopped too.
rc=0
out=$(VSCALER_CLUSTER=full VSCALER_CLUSTER_DIR=$work/cluster VSCALER_METRICS_SERVER_ARGS=--no-such-flag \
  "$up" 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "up.sh with a broken metrics-server succeeded"
failure_named metrics-server
grep -q 'unknown flag: --no-such-flag' <<<"$out" || fail "the log's tail does not show the cause: $out"
left=$(pgrep -f -- "$work/cluster" || true)
[ -z "$left" ] || fail "processes of the failed full cluster still run: $(ps -o pid,args -p "${left//$'\n'/,}")"
echo "ok: a failed full start leaves nothing running"

# 5. build.sh needs Go only to build: with the binaries cached it runs without Go on PATH; with
# an empty cache it says Go is missing.
nogo=$work/nogo
mkdir -p "$nogo"
for tool in bash awk cat dirname mkdir rm; do ln -s "$(command -v "$tool")" "$nogo/$tool"; done
PATH=$nogo "$ROOT/test/cluster/build.sh" >/dev/null || fail "build.sh with cached binaries needed Go"
rc=0
out=$(PATH=$nogo VSCALER_CACHE_DIR=$work/empty-cache "$ROOT/test/cluster/build.sh" 2>&1) || rc=$?
[ "$rc" != 0 ] || fail "build.sh with an empty cache and no Go succeeded"
grep -q "build.sh: 'go' is not on PATH and etcd etcdutl" <<<"$out" || fail "build.sh without Go said: $out"
echo "ok: build.sh without Go: $out"
echo "PASS"
