#!/usr/bin/env bash
# plane: full
# `make deploy` (`kubectl apply -k manifests/` + certificate) and `make undeploy` on the full
# local cluster: the two replicas run on different kwok nodes (the image is never pulled), the
# PodDisruptionBudget refuses an eviction that would leave none (429) and allows one that leaves
# one, and `make undeploy` finishes, its namespace deleted to the end. Safe on the shared plane:
# kwok pods cannot serve, so the webhooks are registered only while this script runs, no workload
# or VerticalScaler is written meanwhile, and the EXIT trap undeploys (webhooks first).
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"
cert_dir=$(mktemp -d /tmp/vscaler-deploy-certs.XXXXXX)
# Never leave the webhooks registered for the suites that follow on this plane.
trap 'make -C "$ROOT" --no-print-directory undeploy KUBECTL="$KUBECTL" >/dev/null 2>&1 || true; rm -rf "$cert_dir"' EXIT
ns=vscaler-system
selector=app.kubernetes.io/name=vscaler

begin=$SECONDS
timeout 180 make -C "$ROOT" --no-print-directory deploy KUBECTL="$KUBECTL" CERT_DIR="$cert_dir" >/dev/null ||
  fail "make deploy (kubectl apply -k manifests/) failed"
echo "ok: kubectl apply -k manifests/ accepted"
k -n $ns rollout status deployment/vscaler --timeout=120s >/dev/null || fail "the operator did not roll out"

# running_pods: "name node" per Running, not deleted replica.
running_pods() {
  k -n $ns get pods -l $selector -o \
    jsonpath='{range .items[?(@.status.phase=="Running")]}{.metadata.deletionTimestamp}{"|"}{.metadata.name}{" "}{.spec.nodeName}{"\n"}{end}' |
    sed -n 's/^|//p'
}
two_running() { [ "$(running_pods | wc -l)" -eq 2 ]; }
eventually 60 two_running
mapfile -t pods < <(running_pods)
node0=${pods[0]#* } node1=${pods[1]#* }
[[ "$node0" == kwok-node-* && "$node1" == kwok-node-* ]] || fail "the replicas are on '$node0' and '$node1', not on kwok nodes"
[ "$node0" != "$node1" ] || fail "both replicas are on $node0"
echo "ok: 2 replicas Running on different nodes: $node0, $node1"

# evict POD [DRYRUN]: POSTs an Eviction; prints the HTTP code (201 allowed, 429 refused).
evict() {
  local body dry=""
  [ "${2:-}" = dry ] && dry=',"deleteOptions":{"dryRun":["All"]}'
  body=$(mktemp /tmp/vscaler-eviction.XXXXXX)
  printf '{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"%s","namespace":"%s"}%s}' \
    "$1" $ns "$dry" >"$body"
  local out
  out=$(k create --raw "/api/v1/namespaces/$ns/pods/$1/eviction" -f "$body" 2>&1) && { echo 201; rm -f "$body"; return; }
  rm -f "$body"
  if grep -q 'TooManyRequests' <<<"$out"; then echo 429; else echo "error: $out"; fi
}
pdb_allows() { [ "$(jp $ns pdb/vscaler '{.status.disruptionsAllowed}/{.status.currentHealthy}')" = "$1" ]; }

# With two healthy replicas, evicting one is allowed (dry run: nothing is evicted).
eventually 60 pdb_allows 1/2
expect_eq "eviction (dry run) of ${pods[0]%% *} with 2 healthy" "$(evict "${pods[0]%% *}" dry)" 201
# With one, evicting it would leave none: refused.
k -n $ns scale deployment/vscaler --replicas=1 >/dev/null
one_running() { [ "$(running_pods | wc -l)" -eq 1 ]; }
eventually 60 one_running
eventually 60 pdb_allows 0/1
last=$(running_pods)
expect_eq "eviction of the last replica ${last%% *}" "$(evict "${last%% *}")" 429
k -n $ns get pod "${last%% *}" >/dev/null || fail "the refused eviction removed ${last%% *}"
echo "ok: the PodDisruptionBudget kept the last replica (deploy checks in $((SECONDS - begin))s)"

start=$SECONDS
timeout 180 make -C "$ROOT" --no-print-directory undeploy KUBECTL="$KUBECTL" >/dev/null || fail "make undeploy did not finish within 180s"
echo "ok: make undeploy finished in $((SECONDS - start))s"
k get namespace $ns >/dev/null 2>&1 && fail "namespace $ns is still there"
echo "ok: namespace $ns is gone"
echo "PASS ($((SECONDS - begin))s)"
