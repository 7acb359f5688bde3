# shellcheck shell=bash disable=SC2034  # sourced: the variables are used by the scripts that source it
# Versions of the local cluster, sourced by every script in test/cluster/.
# Each version is read from the go.mod of the wrapper module that builds the component, so the
# cache key always names what is built (a constant here once said etcd v3.6.16 while go.mod
# built v3.7.3). Changing a version in a go.mod changes the cache key: the next run builds it.
_versions_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

# module_version GO_MOD MODULE: the version GO_MOD requires of MODULE (fails when absent).
module_version() {
  local v
  v=$(awk -v m="$2" '$1 == "require" { $1 = ""; $0 = $0 } $1 == m && $2 ~ /^v/ { print $2; exit }' "$1")
  [ -n "$v" ] || { echo "versions.sh: $1 does not require $2" >&2; return 1; }
  echo "$v"
}

KUBE_VERSION=$(module_version "$_versions_here/kubernetes/go.mod" k8s.io/kubernetes)
ETCD_VERSION=$(module_version "$_versions_here/etcd/go.mod" go.etcd.io/etcd/server/v3)
KWOK_VERSION=$(module_version "$_versions_here/addons/go.mod" sigs.k8s.io/kwok)
METRICS_SERVER_VERSION=$(module_version "$_versions_here/addons/go.mod" sigs.k8s.io/metrics-server)
VPA_VERSION=$(module_version "$_versions_here/vpa/go.mod" k8s.io/autoscaler/vertical-pod-autoscaler)
HELM_VERSION=$(module_version "$_versions_here/helm/go.mod" helm.sh/helm/v4)
VSCALER_CACHE_DIR=${VSCALER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/vscaler}
# kube-apiserver, kubectl, kube-controller-manager, kube-scheduler
KUBE_BIN_DIR=$VSCALER_CACHE_DIR/k8s-$KUBE_VERSION
# etcd, etcdutl
ETCD_BIN_DIR=$VSCALER_CACHE_DIR/etcd-$ETCD_VERSION
# kwok, and beside it share/: its stage, metric and CRD manifests from the same module version
KWOK_BIN_DIR=$VSCALER_CACHE_DIR/kwok-$KWOK_VERSION
METRICS_SERVER_BIN_DIR=$VSCALER_CACHE_DIR/metrics-server-$METRICS_SERVER_VERSION
# vpa-recommender, vpa-updater, vpa-admission-controller (built by `make bench`, not `make test`)
VPA_BIN_DIR=$VSCALER_CACHE_DIR/vpa-$VPA_VERSION
# helm (built by `make helm-build`, a dependency of `make test`: the chart tests use it)
HELM_BIN_DIR=$VSCALER_CACHE_DIR/helm-$HELM_VERSION
unset _versions_here
