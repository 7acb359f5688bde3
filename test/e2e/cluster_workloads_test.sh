#!/usr/bin/env bash
# plane: full
# The full local cluster runs workloads: a 3-replica Deployment becomes 3 Running pods on kwok
# nodes and `kubectl rollout status` completes; a template change rolls a new ReplicaSet that
# replaces every pod while the old ReplicaSet scales to 0; deleting the namespace removes it.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

ns=$(unique_namespace cluster-rollout)
k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},
 "spec":{"replicas":3,"selector":{"matchLabels":{"app":"web"}},
  "template":{"metadata":{"labels":{"app":"web"}},
   "spec":{"containers":[{"name":"app","image":"registry.k8s.io/pause:3.10"}]}}}}
JSON
k -n "$ns" rollout status deployment/web --timeout=120s || fail "the first rollout did not complete"

# running_pods: "name node hash" of each Running pod of web, sorted.
running_pods() {
  k -n "$ns" get pods -l app=web --field-selector=status.phase=Running \
    -o jsonpath='{range .items[*]}{.metadata.name} {.spec.nodeName} {.metadata.labels.pod-template-hash}{"\n"}{end}' | sort
}
first=$(running_pods)
expect_eq "Running pods after the first rollout" "$(wc -l <<<"$first")" "3"
while read -r pod node _; do
  [[ "$node" == kwok-node-* ]] || fail "pod $pod runs on '$node', not on a kwok node"
done <<<"$first"
echo "ok: every pod runs on a kwok node ($(awk '{print $2}' <<<"$first" | sort -u | tr '\n' ' '))"
old_hash=$(awk 'NR == 1 {print $3}' <<<"$first")
old_rs=web-$old_hash
expect_eq "ReplicaSets after the first rollout" "$(k -n "$ns" get rs -o name | wc -l)" "1"
expect_eq "the first ReplicaSet's ready replicas" "$(jp "$ns" "rs/$old_rs" '{.status.readyReplicas}')" "3"

# A template change (an env var) is a new ReplicaSet.
k -n "$ns" set env deployment/web VERSION=2 >/dev/null
k -n "$ns" rollout status deployment/web --timeout=120s || fail "the second rollout did not complete"
expect_eq "ReplicaSets after the template change" "$(k -n "$ns" get rs -o name | wc -l)" "2"
new_rs=$(k -n "$ns" get rs -l app=web -o jsonpath="{range .items[?(@.metadata.name!=\"$old_rs\")]}{.metadata.name}{end}")
[ -n "$new_rs" ] || fail "no ReplicaSet besides $old_rs"
new_hash=${new_rs#web-}
# The deployment controller reports the rollout complete as soon as the new pods are available;
# the old ones may still be terminating: wait until only new pods are left.
only_new_pods() {
  local pods
  pods=$(k -n "$ns" get pods -l app=web -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.labels.pod-template-hash} {.status.phase}{"\n"}{end}')
  [ "$(wc -l <<<"$pods")" = 3 ] && ! grep -qv " $new_hash Running$" <<<"$pods"
}
eventually 90 only_new_pods
second=$(running_pods)
expect_eq "Running pods after the template change" "$(wc -l <<<"$second")" "3"
while read -r pod _ hash; do
  [ "$hash" = "$new_hash" ] || fail "pod $pod has template hash $hash, not the new ReplicaSet's $new_hash"
  grep -q "^$pod " <<<"$first" && fail "pod $pod survived the rollout"
done <<<"$second"
echo "ok: all 3 pods were replaced by pods of $new_rs"
expect_eq "old ReplicaSet's desired replicas" "$(jp "$ns" "rs/$old_rs" '{.spec.replicas}')" "0"
expect_eq "old ReplicaSet's replicas" "$(jp "$ns" "rs/$old_rs" '{.status.replicas}')" "0"
expect_eq "new ReplicaSet's ready replicas" "$(jp "$ns" "rs/$new_rs" '{.status.readyReplicas}')" "3"

# Namespace deletion runs to the end (the namespace controller deletes its pods, kwok lets them go).
k delete namespace "$ns" --wait=false >/dev/null
namespace_gone() { ! k get namespace "$ns" >/dev/null 2>&1; }
eventually 120 namespace_gone
echo "ok: namespace $ns is gone"
echo "PASS"
