# Versions of the local control plane, sourced by every script in test/cluster/.
# Changing one here changes the cache key, so the next run builds the new version.
KUBE_VERSION=v1.36.3
ETCD_VERSION=v3.6.16
VSCALER_CACHE_DIR=${VSCALER_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/vscaler}
KUBE_BIN_DIR=$VSCALER_CACHE_DIR/k8s-$KUBE_VERSION
ETCD_BIN_DIR=$VSCALER_CACHE_DIR/etcd-$ETCD_VERSION
