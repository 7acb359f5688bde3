#!/usr/bin/env bash
# plane: full
# The full local cluster garbage-collects: an object whose owner is deleted goes with it, and so
# does one created with an ownerReference to an owner that is already gone; deleting a namespace
# with objects in it removes it.
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

ns=$(unique_namespace cluster-gc)
# configmap NAME [OWNER_NAME OWNER_UID]: a ConfigMap, owned by the ConfigMap OWNER when given.
configmap() {
  local owners=""
  [ $# -eq 3 ] && owners=",\"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"name\":\"$2\",\"uid\":\"$3\"}]"
  k -n "$ns" apply -f - >/dev/null <<JSON
{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"$1"$owners},"data":{"k":"v"}}
JSON
}
gone() { ! k -n "$ns" get "$1" >/dev/null 2>&1; }

configmap owner
owner_uid=$(jp "$ns" configmap/owner '{.metadata.uid}')
configmap child owner "$owner_uid"
configmap bystander
expect_eq "child's owner" "$(jp "$ns" configmap/child '{.metadata.ownerReferences[0].uid}')" "$owner_uid"
k -n "$ns" delete configmap owner --cascade=background >/dev/null
eventually 60 gone configmap/child
echo "ok: the child of a deleted owner was garbage-collected"

# An ownerReference to an owner that no longer exists (its uid is the deleted owner's).
configmap orphan owner "$owner_uid"
eventually 60 gone configmap/orphan
echo "ok: an object created with a deleted owner was garbage-collected"
k -n "$ns" get configmap bystander >/dev/null || fail "an object without owner was deleted"
echo "ok: the object without owner is still there"

k delete namespace "$ns" --wait=false >/dev/null
namespace_gone() { ! k get namespace "$ns" >/dev/null 2>&1; }
eventually 120 namespace_gone
echo "ok: namespace $ns is gone"
echo "PASS"
