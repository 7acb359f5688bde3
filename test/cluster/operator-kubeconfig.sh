#!/usr/bin/env bash
# Prints the path of a kubeconfig for the user vscaler runs as on the local cluster (tests, make
# demo): system:serviceaccount:vscaler-system:vscaler — its ServiceAccount's user name, which the
# webhook configurations' matchConditions exclude, so vscaler's own patches never reach its own
# webhook. A client certificate with that CN, signed by the cluster's client CA, made once per
# cluster ($VSCALER_CLUSTER_DIR/vscaler.kubeconfig); and, each time (tests delete it), the shipped
# RBAC applied: manifests/rbac.yaml binds the ServiceAccount, and so this user. Then waits until
# the binding is in effect. Needs KUBECONFIG (admin) and KUBECTL.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
. "$here/lib.sh"
user=system:serviceaccount:vscaler-system:vscaler
kubectl=${KUBECTL:-$CLUSTER_DIR/bin/kubectl}
kc=$CLUSTER_DIR/vscaler.kubeconfig
[ -f "$CLUSTER_DIR/pki/ca.key" ] || { echo "operator-kubeconfig.sh: no client CA in $CLUSTER_DIR/pki" >&2; exit 1; }
if [ ! -f "$kc" ]; then
  server=$("$kubectl" config view --minify -o jsonpath='{.clusters[0].cluster.server}')
  issue_cert "$CLUSTER_DIR/pki" vscaler "/CN=$user" "extendedKeyUsage=clientAuth"
  write_kubeconfig "$kc.tmp" "$server" "$CLUSTER_DIR/pki" vscaler
  mv "$kc.tmp" "$kc"
fi
"$kubectl" apply -f "$root/manifests/namespace.yaml" -f "$root/manifests/rbac.yaml" >/dev/null
# RBAC reaches the authorizer's cache shortly after the write.
for _ in $(seq 1 150); do
  if [ "$("$kubectl" auth can-i patch deployments.apps --as="$user" 2>/dev/null)" = yes ] &&
    [ "$("$kubectl" auth can-i list verticalscalers.scaling.vscaler.dev --as="$user" 2>/dev/null)" = yes ]; then
    echo "$kc"
    exit 0
  fi
  sleep 0.2
done
echo "operator-kubeconfig.sh: RBAC for $user is not in effect after 30 s" >&2
exit 1
